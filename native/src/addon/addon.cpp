// nnstudio.node: module init and the small synchronous functions (devices, shapes, parameters).
// The long-running calls live in train_worker.cpp and evaluate_worker.cpp.
#include <napi.h>

#include "addon/convert.h"
#include "addon/workers.h"

namespace nnstudio::addon {

namespace {

// listDevices() -> [{kind, index, name, memoryBytes, computeCapability?, threads?}]
Napi::Value ListDevices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guardEngine(env, [&]() -> Napi::Value {
    const std::vector<DeviceInfo> devices = listDevices();
    Napi::Array array = Napi::Array::New(env, devices.size());
    for (size_t i = 0; i < devices.size(); ++i) array.Set(static_cast<uint32_t>(i), deviceObject(env, devices[i]));
    return array;
  });
}

// cudaAvailable() -> boolean
Napi::Value CudaAvailable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guardEngine(env, [&]() -> Napi::Value { return Napi::Boolean::New(env, cudaAvailable()); });
}

// inferShapes(specJson) -> [{label, outputShape, parameters, multiplyAdds}]
Napi::Value InferShapes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guardEngine(env, [&]() -> Napi::Value {
    const ModelSpec spec = specArg(info, 0);
    const std::vector<LayerInfo> layers = inferShapes(spec);
    Napi::Array array = Napi::Array::New(env, layers.size());
    for (size_t i = 0; i < layers.size(); ++i) array.Set(static_cast<uint32_t>(i), layerInfoObject(env, layers[i]));
    return array;
  });
}

// parameterTable(specJson) -> [{name, shape, offset, size}]
Napi::Value ParameterTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guardEngine(env, [&]() -> Napi::Value {
    const ModelSpec spec = specArg(info, 0);
    const std::vector<ParamTensor> table = parameterTable(spec);
    Napi::Array array = Napi::Array::New(env, table.size());
    for (size_t i = 0; i < table.size(); ++i) array.Set(static_cast<uint32_t>(i), paramTensorObject(env, table[i]));
    return array;
  });
}

// initialParameters(specJson, seed = spec.seed) -> Float32Array
Napi::Value InitialParameters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guardEngine(env, [&]() -> Napi::Value {
    const ModelSpec spec = specArg(info, 0);
    const uint64_t seed = info[1].IsUndefined() ? spec.seed : seedValue(env, info[1], "seed");
    return float32Array(env, initialParameters(spec, seed));
  });
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("listDevices", Napi::Function::New(env, ListDevices, "listDevices"));
  exports.Set("cudaAvailable", Napi::Function::New(env, CudaAvailable, "cudaAvailable"));
  exports.Set("inferShapes", Napi::Function::New(env, InferShapes, "inferShapes"));
  exports.Set("parameterTable", Napi::Function::New(env, ParameterTable, "parameterTable"));
  exports.Set("initialParameters", Napi::Function::New(env, InitialParameters, "initialParameters"));
  exports.Set("startTraining", Napi::Function::New(env, StartTraining, "startTraining"));
  exports.Set("evaluate", Napi::Function::New(env, Evaluate, "evaluate"));
  return exports;
}

}  // namespace nnstudio::addon

// NODE_API_MODULE wants an unqualified name.
static Napi::Object InitNnstudio(Napi::Env env, Napi::Object exports) { return nnstudio::addon::Init(env, exports); }
NODE_API_MODULE(nnstudio, InitNnstudio)
