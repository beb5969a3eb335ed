// JS <-> C++ for training control: the learning-rate schedule, early stopping and the TrainState of a
// checkpoint (typed arrays for the tensors, the seed as a decimal string so that 64 bits survive JS).
#pragma once

#include <napi.h>

#include "nnstudio/engine.h"

namespace nnstudio::addon {

// options.lrSchedule: {kind: 'constant'|'step'|'cosine'|'onecycle', everyEpochs?, gamma?, minLr?, maxLr?,
// pctStart?, divFactor?, finalDivFactor?}; undefined: constant.
LrSchedule lrScheduleValue(Napi::Env env, const Napi::Value& value);
// options.earlyStopping: {monitor: 'validationLoss'|'validationAccuracy'|'trainLoss', patience?, minDelta?,
// restoreBest?}; undefined: off.
EarlyStopping earlyStoppingValue(Napi::Env env, const Napi::Value& value);
// options.resume: {epoch, step, seed, learningRate, parameters, optimizerState, history, bestParameters?}.
TrainState trainStateValue(Napi::Env env, const Napi::Value& value, const ModelSpec& spec);

// {type: 'checkpoint', epoch, step, seed, learningRate, parameters, optimizerState, history, bestParameters?}
Napi::Object checkpointEventObject(Napi::Env env, const TrainState& state);

}  // namespace nnstudio::addon
