// evaluate: Backend::evaluate on a thread the addon owns (engine_thread.h), settled as a Promise on the
// JS thread. An evaluation of a large set takes seconds; it must not hold one of libuv's pool threads.
#include <napi.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "addon/convert.h"
#include "addon/engine_thread.h"
#include "addon/workers.h"

namespace nnstudio::addon {

namespace {

struct EvaluateJob {
  ModelSpec spec;
  std::vector<float> parameters;  // copied: the engine API takes a vector
  DatasetArg data;                // the evaluation's own copy
  int batchSize = 256;
  bool tta = false, ttaFlip = false;  // test-time augmentation (evaluateWithTta), with the mirror image
  int threads = 0;
  DeviceKind device = DeviceKind::CPU;
};

class EvaluateRun final : public EngineThreadJob {
 public:
  EvaluateRun(Napi::Env env, EvaluateJob job) : job_(std::move(job)), deferred_(Napi::Promise::Deferred::New(env)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

 protected:
  // ---- evaluation thread ----
  void run() override {
    try {
      std::unique_ptr<Backend> backend = createBackend(job_.device, job_.threads);
      result_ = job_.tta ? evaluateWithTta(*backend, job_.spec, job_.parameters, job_.data.view(), job_.batchSize,
                                           job_.ttaFlip)
                         : backend->evaluate(job_.spec, job_.parameters, job_.data.view(), job_.batchSize);
    } catch (const std::bad_alloc&) {
      fail(kInternalErrorCode, "out of memory while evaluating");
    } catch (const std::exception& error) {
      fail(errorCodeOf(error), error.what());
    } catch (...) {
      fail(kInternalErrorCode, "the engine failed with an unknown error");
    }
    job_.data = {};
    post([this](Napi::Env env) { settle(env); });
  }

  // An evaluation cannot be interrupted: a teardown waits for it to end.
  void stop() override {}

 private:
  void fail(const char* code, const std::string& message) {
    failed_ = true;
    errorCode_ = code;
    errorMessage_ = message.empty() ? std::string("the engine failed") : message;
  }

  // ---- JS thread ----
  void settle(Napi::Env env) {
    try {
      if (failed_) {
        deferred_.Reject(makeError(env, errorMessage_, errorCode_).Value());
        return;
      }
      Napi::Object result = Napi::Object::New(env);
      result.Set("loss", result_.loss);
      result.Set("accuracy", result_.accuracy);
      result.Set("classes", result_.classes);
      result.Set("predictions", int32Array(env, result_.predictions));
      result.Set("probabilities", float32Array(env, result_.probabilities));
      // a regression's head outputs (count, width), normalised units
      if (!result_.outputs.empty()) result.Set("outputs", float32Array(env, result_.outputs));
      deferred_.Resolve(result);
    } catch (const Napi::Error& error) {
      deferred_.Reject(error.Value());
    }
  }

  EvaluateJob job_;
  // written by the evaluation thread before its post, read by settle() after it
  EvalResult result_;
  bool failed_ = false;
  const char* errorCode_ = kInternalErrorCode;
  std::string errorMessage_;
  Napi::Promise::Deferred deferred_;  // JS thread only
};

}  // namespace

Napi::Value Evaluate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guardEngine(env, [&]() -> Napi::Value {
    EvaluateJob job;
    job.spec = specArg(info, 0);
    const size_t parameterTotal = parameterCount(job.spec);
    job.parameters = parametersValue(env, info[1], parameterTotal, "parameters");
    job.data = datasetValue(env, info[2], job.spec, "data");
    const Napi::Object options = optionsArg(info, 3, "options");
    job.batchSize = intOption(options, "batchSize", job.batchSize, 1, 1 << 24, "options");
    job.threads = intOption(options, "threads", job.threads, 0, 4096, "options");
    job.tta = boolOption(options, "tta", false, "options");
    job.ttaFlip = boolOption(options, "ttaFlip", false, "options");
    const Napi::Value device = options.Get("device");
    job.device = device.IsUndefined() ? DeviceKind::CPU : deviceValue(env, device, "options.device");

    auto run = std::make_unique<EvaluateRun>(env, std::move(job));
    Napi::Promise promise = run->promise();
    EngineThreadJob::start(env, "nnstudio:evaluate", std::move(run));
    return promise;
  });
}

}  // namespace nnstudio::addon
