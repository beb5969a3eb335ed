// Training-control values across the addon boundary; see train_state.h.
#include "addon/train_state.h"

#include <cmath>
#include <limits>
#include <string>

#include "addon/convert.h"

namespace nnstudio::addon {

namespace {

[[noreturn]] void throwType(Napi::Env env, const std::string& message) { throw Napi::TypeError::New(env, message); }

Napi::Object objectValue(Napi::Env env, const Napi::Value& value, const char* where) {
  if (!value.IsObject() || value.IsArray() || value.IsTypedArray()) throwType(env, std::string(where) + " must be an object");
  return value.As<Napi::Object>();
}

std::string stringField(const Napi::Object& object, const char* key, const char* where) {
  const Napi::Value value = object.Get(key);
  if (!value.IsString()) throwType(object.Env(), std::string(where) + "." + key + " must be a string");
  return value.As<Napi::String>().Utf8Value();
}

// A seed as a decimal string, a Number or a BigInt.
uint64_t seedField(Napi::Env env, const Napi::Value& value, const char* where) {
  if (!value.IsString()) return seedValue(env, value, where);
  const std::string text = value.As<Napi::String>().Utf8Value();
  bool digits = !text.empty() && text.size() <= 20;
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  unsigned long long seed = 0;
  if (digits) {
    try {
      size_t used = 0;
      seed = std::stoull(text, &used, 10);
      digits = used == text.size();
    } catch (const std::exception&) {
      digits = false;
    }
  }
  if (!digits) throw Napi::RangeError::New(env, std::string(where) + " must be a decimal integer in [0, 2^64)");
  return uint64_t(seed);
}

EpochStats epochStatsValue(Napi::Env env, const Napi::Value& value, const std::string& where) {
  const Napi::Object object = objectValue(env, value, where.c_str());
  const double inf = std::numeric_limits<double>::infinity();
  EpochStats stats;
  stats.epoch = intOption(object, "epoch", 0, 1, 1000000, where.c_str());
  if (stats.epoch == 0) throwType(env, where + ".epoch must be an integer");
  stats.trainLoss = numberOption(object, "trainLoss", 0, -inf, inf, where.c_str());
  stats.trainAccuracy = numberOption(object, "trainAccuracy", 0, 0, 1, where.c_str());
  stats.hasValidation = !object.Get("validationLoss").IsUndefined();
  if (stats.hasValidation) {
    stats.validationLoss = numberOption(object, "validationLoss", 0, -inf, inf, where.c_str());
    stats.validationAccuracy = numberOption(object, "validationAccuracy", 0, 0, 1, where.c_str());
  }
  stats.seconds = numberOption(object, "seconds", 0, 0, inf, where.c_str());
  stats.learningRate = numberOption(object, "learningRate", 0, 0, inf, where.c_str());
  // a regression's epochs carry its metrics (epochStatsObject leaves out what was not finite)
  const double big = std::numeric_limits<double>::max();
  stats.hasRegression = !object.Get("trainR2").IsUndefined() || !object.Get("validationR2").IsUndefined();
  if (stats.hasRegression) {
    stats.trainR2 = numberOption(object, "trainR2", 0, -big, big, where.c_str());
    stats.validationMae = numberOption(object, "validationMae", 0, 0, big, where.c_str());
    stats.validationRmse = numberOption(object, "validationRmse", 0, 0, big, where.c_str());
    stats.validationR2 = numberOption(object, "validationR2", 0, -big, big, where.c_str());
    stats.hasValidationMape = !object.Get("validationMape").IsUndefined();
    stats.validationMape = numberOption(object, "validationMape", 0, 0, big, where.c_str());
  }
  return stats;
}

}  // namespace

LrSchedule lrScheduleValue(Napi::Env env, const Napi::Value& value) {
  LrSchedule schedule;
  if (value.IsUndefined() || value.IsNull()) return schedule;
  const char* where = "options.lrSchedule";
  const Napi::Object object = objectValue(env, value, where);
  const std::string kind = stringField(object, "kind", where);
  const double inf = std::numeric_limits<double>::infinity();
  if (kind == "constant") {
    schedule.kind = LrScheduleKind::Constant;
  } else if (kind == "step") {
    schedule.kind = LrScheduleKind::Step;
    schedule.everyEpochs = intOption(object, "everyEpochs", schedule.everyEpochs, 1, 1000000, where);
    schedule.gamma = numberOption(object, "gamma", schedule.gamma, 1e-12, 1e6, where);
  } else if (kind == "cosine") {
    schedule.kind = LrScheduleKind::Cosine;
    schedule.minLr = numberOption(object, "minLr", schedule.minLr, 0, inf, where);
  } else if (kind == "onecycle") {
    schedule.kind = LrScheduleKind::OneCycle;
    schedule.maxLr = numberOption(object, "maxLr", schedule.maxLr, 0, inf, where);
    schedule.pctStart = numberOption(object, "pctStart", schedule.pctStart, 1e-9, 1 - 1e-9, where);
    schedule.divFactor = numberOption(object, "divFactor", schedule.divFactor, 1e-12, inf, where);
    schedule.finalDivFactor = numberOption(object, "finalDivFactor", schedule.finalDivFactor, 1e-12, inf, where);
  } else {
    throwType(env, "options.lrSchedule.kind must be 'constant', 'step', 'cosine' or 'onecycle'");
  }
  return schedule;
}

EarlyStopping earlyStoppingValue(Napi::Env env, const Napi::Value& value) {
  EarlyStopping config;
  if (value.IsUndefined() || value.IsNull()) return config;
  const char* where = "options.earlyStopping";
  const Napi::Object object = objectValue(env, value, where);
  const std::string monitor = stringField(object, "monitor", where);
  if (monitor == "validationLoss") config.monitor = MonitorKind::ValidationLoss;
  else if (monitor == "validationAccuracy") config.monitor = MonitorKind::ValidationAccuracy;
  else if (monitor == "trainLoss") config.monitor = MonitorKind::TrainLoss;
  else throwType(env, "options.earlyStopping.monitor must be 'validationLoss', 'validationAccuracy' or 'trainLoss'");
  config.enabled = true;
  config.patience = intOption(object, "patience", config.patience, 1, 1000000, where);
  config.minDelta = numberOption(object, "minDelta", config.minDelta, 0, std::numeric_limits<double>::max(), where);
  config.restoreBest = boolOption(object, "restoreBest", config.restoreBest, where);
  return config;
}

TrainState trainStateValue(Napi::Env env, const Napi::Value& value, const ModelSpec& spec) {
  const char* where = "options.resume";
  const Napi::Object object = objectValue(env, value, where);
  const size_t P = parameterCount(spec);
  TrainState state;
  state.epoch = intOption(object, "epoch", -1, 0, 1000000, where);
  if (state.epoch < 0) throwType(env, "options.resume.epoch must be an integer");
  const Napi::Value step = object.Get("step");
  if (!step.IsNumber()) throwType(env, "options.resume.step must be an integer");
  const double steps = step.As<Napi::Number>().DoubleValue();
  if (!(steps >= 0 && steps <= 9007199254740991.0 && steps == std::floor(steps)))
    throw Napi::RangeError::New(env, "options.resume.step must be a non-negative integer");
  state.step = int64_t(steps);
  state.seed = seedField(env, object.Get("seed"), "options.resume.seed");
  state.learningRate = numberOption(object, "learningRate", 0, 1e-30, std::numeric_limits<double>::max(), where);
  if (state.learningRate <= 0) throwType(env, "options.resume.learningRate must be a positive number");
  state.parameters = parametersValue(env, object.Get("parameters"), P, "options.resume.parameters");
  const size_t moments = spec.optimizer.kind == OptimizerKind::SGD ? P : 2 * P;  // Adam, AdamW: m and v
  state.optimizerState = parametersValue(env, object.Get("optimizerState"), moments, "options.resume.optimizerState");
  const Napi::Value best = object.Get("bestParameters");
  if (!best.IsUndefined() && !best.IsNull())
    state.bestParameters = parametersValue(env, best, P, "options.resume.bestParameters");
  const Napi::Value ema = object.Get("emaParameters");
  if (!ema.IsUndefined() && !ema.IsNull())
    state.emaParameters = parametersValue(env, ema, P, "options.resume.emaParameters");
  const Napi::Value history = object.Get("history");
  if (!history.IsArray()) throwType(env, "options.resume.history must be an array");
  const Napi::Array epochs = history.As<Napi::Array>();
  for (uint32_t i = 0; i < epochs.Length(); ++i)
    state.history.push_back(epochStatsValue(env, epochs.Get(i), "options.resume.history[" + std::to_string(i) + "]"));
  return state;
}

Napi::Object checkpointEventObject(Napi::Env env, const TrainState& state) {
  Napi::Object object = Napi::Object::New(env);
  object.Set("type", "checkpoint");
  object.Set("epoch", state.epoch);
  object.Set("step", static_cast<double>(state.step));
  object.Set("seed", std::to_string(state.seed));
  object.Set("learningRate", state.learningRate);
  object.Set("parameters", float32Array(env, state.parameters));
  object.Set("optimizerState", float32Array(env, state.optimizerState));
  Napi::Array history = Napi::Array::New(env, state.history.size());
  for (size_t i = 0; i < state.history.size(); ++i)
    history.Set(static_cast<uint32_t>(i), epochStatsObject(env, state.history[i]));
  object.Set("history", history);
  if (!state.bestParameters.empty()) object.Set("bestParameters", float32Array(env, state.bestParameters));
  if (!state.emaParameters.empty()) object.Set("emaParameters", float32Array(env, state.emaParameters));
  return object;
}

}  // namespace nnstudio::addon
