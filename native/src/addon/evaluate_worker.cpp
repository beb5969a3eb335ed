// evaluate: Backend::evaluate on a libuv worker thread, settled as a Promise.
#include <napi.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "addon/convert.h"
#include "addon/workers.h"

namespace nnstudio::addon {

namespace {

struct EvaluateJob {
  ModelSpec spec;
  std::vector<float> parameters;  // copied: the engine API takes a vector
  DatasetArg data;
  int batchSize = 256;
  int threads = 0;
  DeviceKind device = DeviceKind::CPU;
};

class EvaluateWorker final : public Napi::AsyncWorker {
 public:
  EvaluateWorker(Napi::Env env, EvaluateJob job)
      : Napi::AsyncWorker(env, "nnstudio:evaluate"), job_(std::move(job)), deferred_(Napi::Promise::Deferred::New(env)) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

 protected:
  // ---- worker thread ----
  void Execute() override {
    try {
      std::unique_ptr<Backend> backend = createBackend(job_.device, job_.threads);
      result_ = backend->evaluate(job_.spec, job_.parameters, job_.data.view(), job_.batchSize);
    } catch (const std::bad_alloc&) {
      fail(kInternalErrorCode, "out of memory while evaluating");
    } catch (const std::exception& error) {
      fail(errorCodeOf(error), error.what());
    } catch (...) {
      fail(kInternalErrorCode, "the engine failed with an unknown error");
    }
  }

  // ---- JS thread (nothing may throw out of these) ----
  void OnOK() override {
    try {
      Napi::Env env = Env();
      Napi::HandleScope handles(env);
      try {
        Napi::Object result = Napi::Object::New(env);
        result.Set("loss", result_.loss);
        result.Set("accuracy", result_.accuracy);
        result.Set("classes", result_.classes);
        result.Set("predictions", int32Array(env, result_.predictions));
        result.Set("probabilities", float32Array(env, result_.probabilities));
        deferred_.Resolve(result);
      } catch (const Napi::Error& error) {
        deferred_.Reject(error.Value());
      }
    } catch (...) {
      // the environment is going away
    }
  }

  void OnError(const Napi::Error& error) override {
    try {
      Napi::HandleScope handles(Env());
      deferred_.Reject(makeError(Env(), error.Message(), errorCode_.c_str()).Value());
    } catch (...) {
      // the environment is going away
    }
  }

 private:
  void fail(const char* code, const std::string& message) {
    errorCode_ = code;
    SetError(message.empty() ? std::string("the engine failed") : message);
  }

  EvaluateJob job_;
  EvalResult result_;
  std::string errorCode_ = kInternalErrorCode;
  Napi::Promise::Deferred deferred_;
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
    const Napi::Value device = options.Get("device");
    job.device = device.IsUndefined() ? DeviceKind::CPU : deviceValue(env, device, "options.device");

    auto worker = std::make_unique<EvaluateWorker>(env, std::move(job));
    Napi::Promise promise = worker->promise();
    worker.release()->Queue();  // deletes itself when done
    return promise;
  });
}

}  // namespace nnstudio::addon
