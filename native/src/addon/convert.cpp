// JS <-> C++ conversion with validation; see convert.h.
#include "addon/convert.h"
#include "addon/train_state.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace nnstudio::addon {

namespace {

std::string join(const char* a, const char* b) { return std::string(a) + "." + b; }

[[noreturn]] void throwType(Napi::Env env, const std::string& message) { throw Napi::TypeError::New(env, message); }
[[noreturn]] void throwRange(Napi::Env env, const std::string& message) { throw Napi::RangeError::New(env, message); }

bool isTypedArrayOf(const Napi::Value& value, napi_typedarray_type type) {
  return value.IsTypedArray() && value.As<Napi::TypedArray>().TypedArrayType() == type;
}

// A double as JS prints it: an integer with all its digits below 1e21, else the shortest %g that reads back
// as the same double. Never converts to an integer type, so any value (1e20, NaN) prints.
std::string numberText(double number) {
  if (std::isnan(number)) return "NaN";
  if (std::isinf(number)) return number > 0 ? "Infinity" : "-Infinity";
  char text[32];
  if (number == std::floor(number) && std::fabs(number) < 1e21) {
    std::snprintf(text, sizeof text, "%.0f", number);
    return text;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, number);
    if (std::strtod(text, nullptr) == number) break;
  }
  return text;
}

// An integer in [min, max] from a JS number, which may be anything a double holds (1e20, -1e300): the range
// is checked on the double, and only a value inside [-2^63, 2^63) is ever converted, so no cast is out of
// range whatever min and max are. The message quotes the number as given (numberText), never a cast of it.
int64_t integerValue(Napi::Env env, const Napi::Value& value, int64_t min, int64_t max, const std::string& where) {
  if (!value.IsNumber()) throwType(env, where + " must be an integer");
  const double number = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(number) || number != std::floor(number)) throwType(env, where + " must be an integer");
  constexpr double kInt64End = 9223372036854775808.0;  // 2^63, exact as a double
  const bool castable = number >= -kInt64End && number < kInt64End;
  const int64_t integer = castable ? static_cast<int64_t>(number) : 0;
  if (!castable || integer < min || integer > max) {
    throwRange(env, where + " must be between " + std::to_string(min) + " and " + std::to_string(max) + " (got " +
                        numberText(number) + ")");
  }
  return integer;
}

}  // namespace

// ---- engine errors ----

const char* errorCodeOf(const std::exception& error) {
  if (dynamic_cast<const SpecError*>(&error)) return kSpecErrorCode;
  if (dynamic_cast<const EngineError*>(&error)) return kEngineErrorCode;
  return kInternalErrorCode;
}

Napi::Error makeError(Napi::Env env, const std::string& message, const char* code) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

// ---- JS -> C++ ----

std::string stringArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (info.Length() <= index || !info[index].IsString()) throwType(info.Env(), std::string(name) + " must be a string");
  return info[index].As<Napi::String>().Utf8Value();
}

ModelSpec specArg(const Napi::CallbackInfo& info, size_t index) {
  const std::string json = stringArg(info, index, "specJson");
  return guardEngine(info.Env(), [&] { return parseModelSpec(json); });
}

uint64_t seedValue(Napi::Env env, const Napi::Value& value, const char* name) {
  if (value.IsBigInt()) {
    bool lossless = false;
    const uint64_t seed = value.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throwRange(env, std::string(name) + " must be a BigInt in [0, 2^64)");
    return seed;
  }
  constexpr int64_t maxSafe = (int64_t{1} << 53) - 1;
  return static_cast<uint64_t>(integerValue(env, value, 0, maxSafe, name));
}

DeviceKind deviceValue(Napi::Env env, const Napi::Value& value, const char* name) {
  if (value.IsString()) {
    const std::string device = value.As<Napi::String>().Utf8Value();
    if (device == "cpu") return DeviceKind::CPU;
    if (device == "cuda") return DeviceKind::CUDA;
  }
  throwType(env, std::string(name) + " must be 'cpu' or 'cuda'");
}

Napi::Object optionsArg(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (info.Length() <= index || info[index].IsUndefined() || info[index].IsNull()) return Napi::Object::New(info.Env());
  if (!info[index].IsObject() || info[index].IsArray()) throwType(info.Env(), std::string(name) + " must be an object");
  return info[index].As<Napi::Object>();
}

int intOption(const Napi::Object& options, const char* key, int fallback, int min, int max, const char* where) {
  const Napi::Value value = options.Get(key);
  if (value.IsUndefined()) return fallback;
  return static_cast<int>(integerValue(options.Env(), value, min, max, join(where, key)));
}

double numberOption(const Napi::Object& options, const char* key, double fallback, double min, double max,
                    const char* where) {
  const Napi::Value value = options.Get(key);
  if (value.IsUndefined()) return fallback;
  if (!value.IsNumber()) throwType(options.Env(), join(where, key) + " must be a number");
  const double number = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(number) || number < min || number > max) {
    throwRange(options.Env(), join(where, key) + " must be a number between " + numberText(min) + " and " +
                                  numberText(max) + " (got " + numberText(number) + ")");
  }
  return number;
}

bool boolOption(const Napi::Object& options, const char* key, bool fallback, const char* where) {
  const Napi::Value value = options.Get(key);
  if (value.IsUndefined()) return fallback;
  if (!value.IsBoolean()) throwType(options.Env(), join(where, key) + " must be a boolean");
  return value.As<Napi::Boolean>().Value();
}

// options.precision: "fp32" (default), "tf32" or "mixed", the CUDA tensor-core products' arithmetic.
nnstudio::Precision precisionOption(const Napi::Object& options) {
  const Napi::Value value = options.Get("precision");
  if (value.IsUndefined() || value.IsNull()) return nnstudio::Precision::Fp32;
  const std::string name = value.IsString() ? value.As<Napi::String>().Utf8Value() : "";
  if (name == "fp32") return nnstudio::Precision::Fp32;
  if (name == "tf32") return nnstudio::Precision::Tf32;
  if (name == "mixed") return nnstudio::Precision::Mixed;
  throwRange(options.Env(), "options.precision must be \"fp32\", \"tf32\" or \"mixed\"");
  return nnstudio::Precision::Fp32;  // not reached: throwRange throws
}

// options.gpus: GPU indices (whole numbers from 0); the backend checks they exist.
std::vector<int> gpuListOption(const Napi::Object& options) {
  const Napi::Value value = options.Get("gpus");
  std::vector<int> gpus;
  if (value.IsUndefined() || value.IsNull()) return gpus;
  if (!value.IsArray()) throwType(options.Env(), "options.gpus must be an array of GPU indices");
  const Napi::Array array = value.As<Napi::Array>();
  for (uint32_t i = 0; i < array.Length(); ++i) {
    const Napi::Value item = array.Get(i);
    const double index = item.IsNumber() ? item.As<Napi::Number>().DoubleValue() : -1.0;
    if (!(index >= 0 && index <= 1024 && index == double(int(index))))
      throwRange(options.Env(), "options.gpus[" + std::to_string(i) + "] must be a GPU index (a whole number from 0)");
    gpus.push_back(int(index));
  }
  return gpus;
}

std::vector<float> floatListOption(const Napi::Object& options, const char* key, const char* where) {
  const Napi::Env env = options.Env();
  const Napi::Value value = options.Get(key);
  std::vector<float> list;
  if (value.IsUndefined() || value.IsNull()) return list;
  if (isTypedArrayOf(value, napi_float32_array)) {
    const Napi::Float32Array array = value.As<Napi::Float32Array>();
    list.assign(array.Data(), array.Data() + array.ElementLength());
  } else if (value.IsArray()) {
    const Napi::Array array = value.As<Napi::Array>();
    for (uint32_t i = 0; i < array.Length(); ++i) {
      const Napi::Value item = array.Get(i);
      if (!item.IsNumber()) throwType(env, join(where, key) + "[" + std::to_string(i) + "] must be a number");
      list.push_back(static_cast<float>(item.As<Napi::Number>().DoubleValue()));
    }
  } else {
    throwType(env, join(where, key) + " must be an array of numbers");
  }
  for (size_t i = 0; i < list.size(); ++i)
    if (!std::isfinite(list[i])) throwRange(env, join(where, key) + "[" + std::to_string(i) + "] must be a finite number");
  return list;
}

// options.augment: { translate?, flip?, rotate?, scale?, erase? } (the engine checks them against the input)
Augmentation augmentationValue(Napi::Env env, const Napi::Value& value) {
  Augmentation a;
  if (value.IsUndefined() || value.IsNull()) return a;
  if (!value.IsObject() || value.IsArray()) throwType(env, "options.augment must be an object");
  const Napi::Object object = value.As<Napi::Object>();
  const char* where = "options.augment";
  a.translate = intOption(object, "translate", 0, 0, 1 << 20, where);
  a.flip = boolOption(object, "flip", false, where);
  a.rotate = float(numberOption(object, "rotate", 0, 0, 180, where));
  a.scale = float(numberOption(object, "scale", 0, 0, 0.5, where));
  a.erase = float(numberOption(object, "erase", 0, 0, 1, where));
  return a;
}

TrainOptions trainOptions(Napi::Env env, const Napi::Object& options) {
  TrainOptions result;
  const int intMax = std::numeric_limits<int>::max();
  result.epochs = intOption(options, "epochs", result.epochs, 1, 1000000, "options");
  result.batchSize = intOption(options, "batchSize", result.batchSize, 1, intMax, "options");
  result.shuffle = boolOption(options, "shuffle", result.shuffle, "options");
  const Napi::Value seed = options.Get("seed");
  if (!seed.IsUndefined()) result.seed = seedValue(env, seed, "options.seed");
  result.threads = intOption(options, "threads", result.threads, 0, 4096, "options");
  result.progressIntervalSeconds =
      numberOption(options, "progressIntervalSeconds", result.progressIntervalSeconds, 0.0, 3600.0, "options");
  result.lrSchedule = lrScheduleValue(env, options.Get("lrSchedule"));
  result.classWeights = floatListOption(options, "classWeights", "options");
  result.targetMean = floatListOption(options, "targetMean", "options");
  result.targetStd = floatListOption(options, "targetStd", "options");
  result.earlyStopping = earlyStoppingValue(env, options.Get("earlyStopping"));
  result.augment = augmentationValue(env, options.Get("augment"));
  result.ema = numberOption(options, "ema", 0.0, 0.0, 0.999999, "options");
  result.gpus = gpuListOption(options);
  result.precision = precisionOption(options);
  return result;
}

namespace {

// A regression's dataset: features and optional float targets, one row of the head's width per sample.
DatasetArg regressionDatasetValue(Napi::Env env, const Napi::Object& object, const ModelSpec& spec,
                                  const std::string& where) {
  const Napi::Value featuresValue = object.Get("features");
  const Napi::Value targetsValue = object.Get("targets");
  if (!isTypedArrayOf(featuresValue, napi_float32_array)) throwType(env, where + ".features must be a Float32Array");
  const bool hasTargets = !targetsValue.IsUndefined() && !targetsValue.IsNull();
  if (hasTargets && !isTypedArrayOf(targetsValue, napi_float32_array))
    throwType(env, where + ".targets must be a Float32Array");
  // inferShapes plans the network first (it refuses an input of 2^31 values or more, so products fit)
  const std::vector<LayerInfo> layers = guardEngine(env, [&] { return inferShapes(spec); });
  const int64_t width = layers.back().outputShape.empty() ? 1 : layers.back().outputShape[0];
  int64_t featureSize = 1;
  for (int dim : spec.input) featureSize *= dim;
  const Napi::Float32Array features = featuresValue.As<Napi::Float32Array>();
  const int64_t featureCount = static_cast<int64_t>(features.ElementLength());
  if (featureCount < 1) throwRange(env, where + " has no samples (features is empty)");
  if (featureCount % featureSize != 0)
    throwRange(env, where + ".features has " + std::to_string(featureCount) + " values, not a multiple of the " +
                        std::to_string(featureSize) + " features per sample (the spec's input)");
  DatasetArg dataset;
  dataset.count = featureCount / featureSize;
  dataset.featureSize = featureSize;
  dataset.features.assign(features.Data(), features.Data() + featureCount);
  if (hasTargets) {
    const Napi::Float32Array targets = targetsValue.As<Napi::Float32Array>();
    const int64_t targetCount = static_cast<int64_t>(targets.ElementLength());
    if (targetCount != dataset.count * width)
      throwRange(env, where + ".targets has " + std::to_string(targetCount) + " values but " +
                          std::to_string(dataset.count) + " samples x " + std::to_string(width) +
                          " outputs of the model's last layer need " + std::to_string(dataset.count * width));
    dataset.targets.assign(targets.Data(), targets.Data() + targetCount);
    dataset.targetWidth = static_cast<int>(width);
  }
  return dataset;
}

}  // namespace

DatasetArg datasetValue(Napi::Env env, const Napi::Value& value, const ModelSpec& spec, const char* name) {
  const std::string where(name);
  if (spec.task == TaskKind::Regression) {
    if (!value.IsObject()) throwType(env, where + " must be an object {features: Float32Array, targets: Float32Array}");
    return regressionDatasetValue(env, value.As<Napi::Object>(), spec, where);
  }
  if (!value.IsObject()) throwType(env, where + " must be an object {features: Float32Array, labels: Int32Array}");
  const Napi::Object object = value.As<Napi::Object>();
  const Napi::Value featuresValue = object.Get("features");
  const Napi::Value labelsValue = object.Get("labels");
  if (!isTypedArrayOf(featuresValue, napi_float32_array)) throwType(env, where + ".features must be a Float32Array");
  if (!isTypedArrayOf(labelsValue, napi_int32_array)) throwType(env, where + ".labels must be an Int32Array");
  const Napi::Float32Array features = featuresValue.As<Napi::Float32Array>();
  const Napi::Int32Array labels = labelsValue.As<Napi::Int32Array>();

  // classCount plans the network first: it refuses an input of 2^31 values or more, so the product fits.
  const int classes = guardEngine(env, [&] { return classCount(spec); });
  int64_t featureSize = 1;
  for (int dim : spec.input) featureSize *= dim;
  const int64_t count = static_cast<int64_t>(labels.ElementLength());
  const int64_t featureCount = static_cast<int64_t>(features.ElementLength());
  if (count < 1) throwRange(env, where + " has no samples (labels is empty)");
  if (featureSize < 1 || featureCount / featureSize != count || featureCount % featureSize != 0) {
    throwRange(env, where + ".features has " + std::to_string(featureCount) + " values but " + std::to_string(count) +
                        " labels x " + std::to_string(featureSize) + " features per sample (the spec's input) need " +
                        std::to_string(count * featureSize));
  }

  // The run's own copy, taken now on the JS thread; the label check below reads the copy, so what was
  // checked is what the engine reads.
  DatasetArg dataset;
  dataset.features.assign(features.Data(), features.Data() + featureCount);
  dataset.labels.assign(labels.Data(), labels.Data() + count);
  dataset.count = count;
  dataset.featureSize = featureSize;

  // Labels index the head's outputs (one-hot); check them here rather than trust every backend to.
  for (int64_t i = 0; i < count; ++i) {
    const int32_t label = dataset.labels[static_cast<size_t>(i)];
    if (label < 0 || label >= classes) {
      throwRange(env, where + ".labels[" + std::to_string(i) + "] is " + std::to_string(label) +
                          " but the model predicts " + std::to_string(classes) + " classes (labels 0.." +
                          std::to_string(classes - 1) + ")");
    }
  }
  return dataset;
}

std::vector<float> parametersValue(Napi::Env env, const Napi::Value& value, size_t expected, const char* name) {
  if (!isTypedArrayOf(value, napi_float32_array)) throwType(env, std::string(name) + " must be a Float32Array");
  const Napi::Float32Array parameters = value.As<Napi::Float32Array>();
  if (parameters.ElementLength() != expected) {
    throwRange(env, std::string(name) + " has " + std::to_string(parameters.ElementLength()) +
                        " values but the model has " + std::to_string(expected) + " parameters");
  }
  return std::vector<float>(parameters.Data(), parameters.Data() + expected);
}

// ---- C++ -> JS ----

Napi::Array intArray(Napi::Env env, const std::vector<int>& values) {
  Napi::Array array = Napi::Array::New(env, values.size());
  for (size_t i = 0; i < values.size(); ++i) array.Set(static_cast<uint32_t>(i), Napi::Number::New(env, values[i]));
  return array;
}

Napi::Float32Array float32Array(Napi::Env env, const std::vector<float>& values) {
  Napi::Float32Array array = Napi::Float32Array::New(env, values.size());
  std::copy(values.begin(), values.end(), array.Data());
  return array;
}

Napi::Int32Array int32Array(Napi::Env env, const std::vector<int32_t>& values) {
  Napi::Int32Array array = Napi::Int32Array::New(env, values.size());
  std::copy(values.begin(), values.end(), array.Data());
  return array;
}

Napi::Object deviceObject(Napi::Env env, const DeviceInfo& device) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("kind", device.kind == DeviceKind::CUDA ? "cuda" : "cpu");
  object.Set("index", device.index);
  object.Set("name", device.name);
  object.Set("memoryBytes", static_cast<double>(device.memoryBytes));
  if (device.kind == DeviceKind::CUDA) {
    object.Set("computeCapability", std::to_string(device.computeMajor) + "." + std::to_string(device.computeMinor));
  } else {
    object.Set("threads", device.threads);
  }
  return object;
}

Napi::Object layerInfoObject(Napi::Env env, const LayerInfo& layer) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("label", layer.label);
  object.Set("outputShape", intArray(env, layer.outputShape));
  object.Set("parameters", static_cast<double>(layer.parameters));
  object.Set("multiplyAdds", static_cast<double>(layer.multiplyAdds));
  return object;
}

Napi::Object paramTensorObject(Napi::Env env, const ParamTensor& tensor) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("name", tensor.name);
  object.Set("shape", intArray(env, tensor.shape));
  object.Set("offset", static_cast<double>(tensor.offset));
  object.Set("size", static_cast<double>(tensor.size));
  return object;
}

Napi::Object stepEventObject(Napi::Env env, const StepProgress& step) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("type", "step");
  object.Set("epoch", step.epoch);
  object.Set("step", static_cast<double>(step.step));
  object.Set("stepsPerEpoch", static_cast<double>(step.stepsPerEpoch));
  object.Set("globalStep", static_cast<double>(step.globalStep));
  object.Set("totalSteps", static_cast<double>(step.totalSteps));
  object.Set("loss", step.loss);
  object.Set("samplesPerSecond", step.samplesPerSecond);
  object.Set("etaSeconds", step.etaSeconds);
  object.Set("learningRate", step.learningRate);
  return object;
}

Napi::Object epochStatsObject(Napi::Env env, const EpochStats& epoch) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("epoch", epoch.epoch);
  object.Set("trainLoss", epoch.trainLoss);
  object.Set("trainAccuracy", epoch.trainAccuracy);
  if (epoch.hasValidation) {
    object.Set("validationLoss", epoch.validationLoss);
    object.Set("validationAccuracy", epoch.validationAccuracy);
  }
  object.Set("seconds", epoch.seconds);
  object.Set("learningRate", epoch.learningRate);
  // a regression's metrics; a value that is not finite is left out (JSON and the UI have no NaN)
  const auto setFinite = [&](const char* key, double number) {
    if (std::isfinite(number)) object.Set(key, number);
  };
  if (epoch.hasRegression) {
    setFinite("trainR2", epoch.trainR2);
    if (epoch.hasValidation) {
      setFinite("validationMae", epoch.validationMae);
      setFinite("validationRmse", epoch.validationRmse);
      setFinite("validationR2", epoch.validationR2);
      if (epoch.hasValidationMape) setFinite("validationMape", epoch.validationMape);
    }
  }
  return object;
}

Napi::Object epochEventObject(Napi::Env env, const EpochStats& epoch) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("type", "epoch");
  const Napi::Object stats = epochStatsObject(env, epoch);
  const Napi::Array keys = stats.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); ++i) object.Set(keys.Get(i), stats.Get(keys.Get(i)));
  return object;
}

const char* statusName(TrainStatus status) {
  switch (status) {
    case TrainStatus::Completed: return "completed";
    case TrainStatus::Cancelled: return "cancelled";
    case TrainStatus::Diverged: return "diverged";
  }
  return "completed";
}

}  // namespace nnstudio::addon
