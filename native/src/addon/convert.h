// JS <-> C++ conversion for the addon. Every reader validates type, range and size and throws a
// Napi::TypeError / Napi::RangeError / Napi::Error with a message naming the argument before any
// typed-array memory is read, and copies what it reads. Everything here runs on the JS thread only.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nnstudio/engine.h"

namespace nnstudio::addon {

// ---- engine errors at the boundary ----
// Error codes set on the JS errors the engine raises, so callers can tell a bad spec from a failure.
inline constexpr const char* kSpecErrorCode = "ERR_NNSTUDIO_SPEC";
inline constexpr const char* kEngineErrorCode = "ERR_NNSTUDIO_ENGINE";
inline constexpr const char* kInternalErrorCode = "ERR_NNSTUDIO_INTERNAL";

// The code for a caught exception: spec, engine or internal (anything else, e.g. bad_alloc).
const char* errorCodeOf(const std::exception& error);
// Error(message) with `code` set.
Napi::Error makeError(Napi::Env env, const std::string& message, const char* code);

// Runs `body` and turns any C++ exception other than a Napi::Error into a JS Error carrying the
// engine's message, so no exception ever escapes to N-API as an abort.
template <typename Body>
auto guardEngine(Napi::Env env, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw makeError(env, "out of memory", kInternalErrorCode);
  } catch (const std::exception& error) {
    throw makeError(env, error.what(), errorCodeOf(error));
  } catch (...) {
    throw makeError(env, "the engine failed with an unknown error", kInternalErrorCode);
  }
}

// ---- JS -> C++ ----
// info[index] as a string; `name` is the argument's name in messages.
std::string stringArg(const Napi::CallbackInfo& info, size_t index, const char* name);
// info[index] as a JSON model spec, parsed by the engine (SpecError -> Error with its message).
ModelSpec specArg(const Napi::CallbackInfo& info, size_t index);
// A non-negative integer seed from a Number (<= 2^53) or a BigInt.
uint64_t seedValue(Napi::Env env, const Napi::Value& value, const char* name);
// 'cpu' | 'cuda'.
DeviceKind deviceValue(Napi::Env env, const Napi::Value& value, const char* name);
// An optional object argument: undefined/null -> empty object; anything else but an object throws.
Napi::Object optionsArg(const Napi::CallbackInfo& info, size_t index, const char* name);
// obj[key] as an integer in [min, max]; `fallback` when undefined.
int intOption(const Napi::Object& options, const char* key, int fallback, int min, int max, const char* where);
double numberOption(const Napi::Object& options, const char* key, double fallback, double min, double max,
                    const char* where);
bool boolOption(const Napi::Object& options, const char* key, bool fallback, const char* where);
// obj[key] as a list of finite numbers (an Array of numbers or a Float32Array); empty when undefined.
std::vector<float> floatListOption(const Napi::Object& options, const char* key, const char* where);
// options.gpus (TrainOptions::gpus)
std::vector<int> gpuListOption(const Napi::Object& options);
nnstudio::Precision precisionOption(const Napi::Object& options);
// All but options.resume (which needs the spec: train_state.h).
TrainOptions trainOptions(Napi::Env env, const Napi::Object& options);

// Features and labels copied out of the caller's typed arrays on the JS thread: the run reads only this
// copy, which is also what was validated, so a caller that writes to (or detaches) its arrays during the
// run changes nothing. Costs a second copy of the data for as long as the run or evaluation lasts.
struct DatasetArg {
  std::vector<float> features;
  std::vector<int32_t> labels;   // classification
  std::vector<float> targets;    // regression: (count, targetWidth); empty: none
  int64_t count = 0;
  int64_t featureSize = 0;
  int targetWidth = 0;
  DatasetView view() const {
    DatasetView v{features.data(), labels.empty() ? nullptr : labels.data(), count, featureSize};
    if (!targets.empty()) {
      v.targets = targets.data();
      v.targetWidth = targetWidth;
    }
    return v;
  }
};
// Validates {features: Float32Array, labels: Int32Array}: features.length == count * featureSize of
// the spec's input, labels.length == count >= 1, labels (as copied) in the range the head predicts.
// A regression spec reads {features, targets?: Float32Array, labels?: Int32Array}: labels (all -1 in the
// app's regression datasets) are ignored, count is features.length / featureSize, and targets, when
// given, hold count x (the head's width) values (their finiteness is the engine's check).
DatasetArg datasetValue(Napi::Env env, const Napi::Value& value, const ModelSpec& spec, const char* name);

// A Float32Array of exactly `expected` elements, copied into a vector.
std::vector<float> parametersValue(Napi::Env env, const Napi::Value& value, size_t expected, const char* name);

// ---- C++ -> JS (always copies: Electron forbids external ArrayBuffers) ----
Napi::Array intArray(Napi::Env env, const std::vector<int>& values);
Napi::Float32Array float32Array(Napi::Env env, const std::vector<float>& values);
Napi::Int32Array int32Array(Napi::Env env, const std::vector<int32_t>& values);
Napi::Object deviceObject(Napi::Env env, const DeviceInfo& device);
Napi::Object layerInfoObject(Napi::Env env, const LayerInfo& layer);
Napi::Object paramTensorObject(Napi::Env env, const ParamTensor& tensor);
Napi::Object stepEventObject(Napi::Env env, const StepProgress& step);
Napi::Object epochEventObject(Napi::Env env, const EpochStats& epoch);  // {type:'epoch', ...}
Napi::Object epochStatsObject(Napi::Env env, const EpochStats& epoch);  // the same without `type`
const char* statusName(TrainStatus status);

}  // namespace nnstudio::addon
