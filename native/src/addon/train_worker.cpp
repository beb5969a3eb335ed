// startTraining: runs Backend::train on a libuv worker thread and streams every epoch event (and the
// engine's throttled step events, and with options.checkpoints every epoch's TrainState) back to JS
// through an AsyncProgressQueueWorker. Execute() never
// touches N-API: it reads only plain C++ state prepared on the JS thread before Queue().
#include <napi.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "addon/convert.h"
#include "addon/train_state.h"
#include "addon/workers.h"

namespace nnstudio::addon {

namespace {

// One queued event; the queue copies it, so it stays plain data.
struct TrainEvent {
  bool isEpoch = false;
  StepProgress step;   // when !isEpoch && !checkpoint
  EpochStats epoch;    // when isEpoch
  std::shared_ptr<const TrainState> checkpoint;  // a checkpoint event (shared: the queue copies events)
};

using TrainQueueWorker = Napi::AsyncProgressQueueWorker<TrainEvent>;

// The engine's progress callbacks, on the training thread: copy into the queue and return.
class QueueSink final : public ProgressSink {
 public:
  QueueSink(const TrainQueueWorker::ExecutionProgress& progress, bool checkpoints)
      : progress_(progress), checkpoints_(checkpoints) {}
  bool wantsCheckpoints() const override { return checkpoints_; }
  void onCheckpoint(const TrainState& state) override {
    TrainEvent event;
    event.checkpoint = std::make_shared<const TrainState>(state);
    progress_.Send(&event, 1);
  }
  void onStep(const StepProgress& step) override {
    TrainEvent event;
    event.step = step;
    progress_.Send(&event, 1);
  }
  void onEpoch(const EpochStats& epoch) override {
    TrainEvent event;
    event.isEpoch = true;
    event.epoch = epoch;
    progress_.Send(&event, 1);
  }

 private:
  const TrainQueueWorker::ExecutionProgress& progress_;
  bool checkpoints_;
};

struct TrainJob {
  ModelSpec spec;
  DatasetArg train;
  std::optional<DatasetArg> validation;
  TrainOptions options;
  DeviceKind device = DeviceKind::CPU;
  std::optional<std::vector<float>> start;  // initial parameters, else the spec's seeded init
  std::optional<TrainState> resume;         // options.resume points here once the job has its place
  bool checkpoints = false;                 // options.checkpoints: send a checkpoint event every epoch
};

class TrainWorker final : public TrainQueueWorker {
 public:
  TrainWorker(Napi::Env env, TrainJob job, Napi::Value onEvent, std::shared_ptr<TrainControl> control)
      : TrainQueueWorker(env, "nnstudio:train"),
        job_(std::move(job)),
        control_(std::move(control)),
        deferred_(Napi::Promise::Deferred::New(env)),
        context_(env, "nnstudio:train") {
    if (onEvent.IsFunction()) onEvent_ = Napi::Persistent(onEvent.As<Napi::Function>());
  }

  Napi::Promise promise() const { return deferred_.Promise(); }

 protected:
  // ---- training thread ----
  void Execute(const ExecutionProgress& progress) override {
    try {
      QueueSink sink(progress, job_.checkpoints);
      job_.options.resume = job_.resume ? &*job_.resume : nullptr;
      std::unique_ptr<Backend> backend = createBackend(job_.device, job_.options.threads);
      const DatasetView train = job_.train.view();
      const std::optional<DatasetView> validation =
          job_.validation ? std::optional<DatasetView>(job_.validation->view()) : std::nullopt;
      result_ = backend->train(job_.spec, train, validation ? &*validation : nullptr, job_.options, &sink,
                               control_.get(), job_.start ? &*job_.start : nullptr);
    } catch (const std::bad_alloc&) {
      fail(kInternalErrorCode, "out of memory while training");
    } catch (const std::exception& error) {
      fail(errorCodeOf(error), error.what());
    } catch (...) {
      fail(kInternalErrorCode, "the engine failed with an unknown error");
    }
  }

  // ---- JS thread ----
  // Nothing may throw out of these: they run from libuv callbacks, where a C++ exception aborts.
  // When the environment is being torn down (worker_threads terminate) Node waits for this work
  // before running cleanup hooks, and calls into JS fail (and throw here): that cancels the run, so
  // teardown waits one step, not the whole training. (A paused run sends nothing: cancel it first.)
  void OnProgress(const TrainEvent* events, size_t count) override {
    if (events == nullptr || onEvent_.IsEmpty() || !callbackError_.IsEmpty()) return;
    try {
      Napi::Env env = Env();
      Napi::HandleScope handles(env);
      for (size_t i = 0; i < count; ++i) {
        const TrainEvent& event = events[i];
        const Napi::Object object = event.checkpoint ? checkpointEventObject(env, *event.checkpoint)
                                    : event.isEpoch  ? epochEventObject(env, event.epoch)
                                                     : stepEventObject(env, event.step);
        try {
          onEvent_.MakeCallback(env.Global(), {object}, context_);
        } catch (const Napi::Error& error) {
          // A throwing listener stops the run; the promise rejects with what it threw.
          callbackError_ = error;
          control_->cancel.store(true);
          return;
        }
      }
    } catch (...) {
      control_->cancel.store(true);
    }
  }

  void OnOK() override {
    settle([this](Napi::Env env) -> Napi::Value {
      Napi::Object result = Napi::Object::New(env);
      result.Set("status", statusName(result_.status));
      result.Set("message", result_.message);
      result.Set("parameters", float32Array(env, result_.parameters));
      Napi::Array history = Napi::Array::New(env, result_.history.size());
      for (size_t i = 0; i < result_.history.size(); ++i) {
        history.Set(static_cast<uint32_t>(i), epochStatsObject(env, result_.history[i]));
      }
      result.Set("history", history);
      result.Set("seconds", result_.seconds);
      result.Set("steps", static_cast<double>(result_.steps));
      result.Set("device", result_.device);
      result.Set("stoppedEarly", result_.stoppedEarly);
      result.Set("bestEpoch", result_.bestEpoch);
      result.Set("restoredBest", result_.restoredBest);
      return result;
    }, nullptr);
  }

  void OnError(const Napi::Error& error) override {
    const std::string message = error.Message();
    settle(nullptr, [&](Napi::Env env) { return makeError(env, message, errorCode_.c_str()).Value(); });
  }

 private:
  // Resolves with resolved(env), or rejects with rejected(env), or with what a listener threw; inside a
  // callback scope so that the promise's reactions run right after.
  template <typename Resolved, typename Rejected>
  void settle(Resolved resolved, Rejected rejected) {
    try {
      Napi::Env env = Env();
      Napi::HandleScope handles(env);
      Napi::CallbackScope scope(env, context_);
      try {
        if (!callbackError_.IsEmpty()) {
          deferred_.Reject(callbackError_.Value());
        } else if constexpr (!std::is_same_v<Resolved, std::nullptr_t>) {
          deferred_.Resolve(resolved(env));
        } else if constexpr (!std::is_same_v<Rejected, std::nullptr_t>) {
          deferred_.Reject(rejected(env));
        }
      } catch (const Napi::Error& error) {
        deferred_.Reject(error.Value());
      }
    } catch (...) {
      // the environment is going away: nobody is left to observe the promise
    }
  }

  void fail(const char* code, const std::string& message) {
    errorCode_ = code;
    SetError(message.empty() ? std::string("the engine failed") : message);
  }

  TrainJob job_;                              // plain data, the run's own copies
  std::shared_ptr<TrainControl> control_;     // shared with the JS handle's cancel/pause/resume
  TrainResult result_;
  std::string errorCode_ = kInternalErrorCode;
  Napi::Promise::Deferred deferred_;
  Napi::AsyncContext context_;
  Napi::FunctionReference onEvent_;
  Napi::Error callbackError_;
};

// A JS function flipping one of the run's atomics; safe at any time, even after the run ended.
Napi::Function controlFunction(Napi::Env env, const char* name, std::shared_ptr<TrainControl> control,
                               void (*apply)(TrainControl&)) {
  return Napi::Function::New(
      env, [control, apply](const Napi::CallbackInfo& info) -> Napi::Value {
        apply(*control);
        return info.Env().Undefined();
      },
      name);
}

}  // namespace

Napi::Value StartTraining(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guardEngine(env, [&]() -> Napi::Value {
    // ---- validate everything before anything runs ----
    TrainJob job;
    job.spec = specArg(info, 0);
    job.train = datasetValue(env, info[1], job.spec, "train");
    if (!info[2].IsUndefined() && !info[2].IsNull()) job.validation = datasetValue(env, info[2], job.spec, "validation");
    const Napi::Object options = optionsArg(info, 3, "options");
    job.options = trainOptions(env, options);
    const Napi::Value device = options.Get("device");
    job.device = device.IsUndefined() ? DeviceKind::CPU : deviceValue(env, device, "options.device");
    const Napi::Value resume = options.Get("resume");
    if (!resume.IsUndefined() && !resume.IsNull()) job.resume = trainStateValue(env, resume, job.spec);
    job.checkpoints = boolOption(options, "checkpoints", false, "options");
    if (!info[4].IsUndefined() && !info[4].IsNull()) {
      job.start = parametersValue(env, info[4], parameterCount(job.spec), "initialParameters");
    }
    const Napi::Value onEvent = info[5];
    if (!onEvent.IsUndefined() && !onEvent.IsNull() && !onEvent.IsFunction()) {
      throw Napi::TypeError::New(env, "onEvent must be a function");
    }

    // ---- start ----
    auto control = std::make_shared<TrainControl>();
    auto worker = std::make_unique<TrainWorker>(env, std::move(job), onEvent, control);
    Napi::Object handle = Napi::Object::New(env);
    handle.Set("promise", worker->promise());
    handle.Set("cancel", controlFunction(env, "cancel", control, [](TrainControl& c) { c.cancel.store(true); }));
    handle.Set("pause", controlFunction(env, "pause", control, [](TrainControl& c) { c.pause.store(true); }));
    handle.Set("resume", controlFunction(env, "resume", control, [](TrainControl& c) { c.pause.store(false); }));
    handle.Set("setLearningRate", Napi::Function::New(
                                      env, [control](const Napi::CallbackInfo& call) -> Napi::Value {
                                        const Napi::Value lr = call[0];
                                        const double value = lr.IsNumber() ? lr.As<Napi::Number>().DoubleValue() : 0;
                                        if (!(std::isfinite(value) && value > 0 && value <= 1e6))
                                          throw Napi::RangeError::New(call.Env(),
                                                                      "learning rate must be a number in (0, 1e6]");
                                        control->setLearningRate(static_cast<float>(value));
                                        return call.Env().Undefined();
                                      },
                                      "setLearningRate"));
    worker.release()->Queue();  // from here on the worker deletes itself when done
    return handle;
  });
}

}  // namespace nnstudio::addon
