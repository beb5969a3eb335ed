// The addon's asynchronous entry points; each lives in its own file with the job it runs on a thread the
// addon owns (engine_thread.h).
#pragma once

#include <napi.h>

namespace nnstudio::addon {

// startTraining(specJson, train, validation|null, options, initialParameters|null, onEvent)
//   -> { promise, cancel(), pause(), resume() }                          (train_worker.cpp)
Napi::Value StartTraining(const Napi::CallbackInfo& info);
// evaluate(specJson, parameters, data, options) -> Promise<EvalResult>   (evaluate_worker.cpp)
Napi::Value Evaluate(const Napi::CallbackInfo& info);

}  // namespace nnstudio::addon
