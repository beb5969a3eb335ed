// startTraining: runs Backend::train on a thread the addon owns (engine_thread.h) and streams every epoch
// event (and the engine's throttled step events, and with options.checkpoints every epoch's TrainState)
// back to JS through the job's ThreadSafeFunction; the promise settles on the JS thread after the last
// event. The training thread never touches N-API: it reads only plain C++ state prepared on the JS thread
// (the data is the run's own copy) and posts plain data.
#include <napi.h>

#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "addon/convert.h"
#include "addon/engine_thread.h"
#include "addon/train_state.h"
#include "addon/workers.h"

namespace nnstudio::addon {

namespace {

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

// Builds an event object on the JS thread from data the training thread captured.
using EventMaker = std::function<Napi::Object(Napi::Env)>;

class TrainRun final : public EngineThreadJob {
 public:
  TrainRun(Napi::Env env, TrainJob job, Napi::Value onEvent, std::shared_ptr<TrainControl> control)
      : job_(std::move(job)),
        control_(std::move(control)),
        listening_(onEvent.IsFunction()),
        deferred_(Napi::Promise::Deferred::New(env)) {
    if (listening_) onEvent_ = Napi::Persistent(onEvent.As<Napi::Function>());
  }

  Napi::Promise promise() const { return deferred_.Promise(); }

 protected:
  // ---- training thread ----
  void run() override {
    try {
      Sink sink(*this);
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
    job_.train = {};  // the run's copy of the data is not needed any more
    job_.validation.reset();
    post([this](Napi::Env env) { settle(env); });
  }

  void stop() override { control_->cancel.store(true); }

 private:
  // The engine's progress callbacks, on the training thread: capture the plain data and post it.
  class Sink final : public ProgressSink {
   public:
    explicit Sink(TrainRun& run) : run_(run) {}
    bool wantsCheckpoints() const override { return run_.listening_ && run_.job_.checkpoints; }
    void onCheckpoint(const TrainState& state) override {
      auto copy = std::make_shared<const TrainState>(state);
      run_.postEvent([copy](Napi::Env env) { return checkpointEventObject(env, *copy); });
    }
    void onStep(const StepProgress& step) override {
      run_.postEvent([step](Napi::Env env) { return stepEventObject(env, step); });
    }
    void onEpoch(const EpochStats& epoch) override {
      run_.postEvent([epoch](Napi::Env env) { return epochEventObject(env, epoch); });
    }

   private:
    TrainRun& run_;
  };

  void postEvent(EventMaker make) {
    if (!listening_) return;  // nobody to tell
    post([this, make = std::move(make)](Napi::Env env) { deliver(env, make); });
  }

  void fail(const char* code, const std::string& message) {
    failed_ = true;
    errorCode_ = code;
    errorMessage_ = message.empty() ? std::string("the engine failed") : message;
  }

  // ---- JS thread ----
  void deliver(Napi::Env env, const EventMaker& make) {
    if (onEvent_.IsEmpty() || !listenerError_.IsEmpty()) return;
    try {
      onEvent_.Call({make(env)});
    } catch (const Napi::Error& error) {
      // A throwing listener stops the run; the promise rejects with what it threw.
      listenerError_ = error;
      control_->cancel.store(true);
    }
  }

  // Resolves with the result, or rejects with the engine's error or with what a listener threw.
  void settle(Napi::Env env) {
    try {
      if (!listenerError_.IsEmpty()) {
        deferred_.Reject(listenerError_.Value());
      } else if (failed_) {
        deferred_.Reject(makeError(env, errorMessage_, errorCode_).Value());
      } else {
        deferred_.Resolve(resultObject(env));
      }
    } catch (const Napi::Error& error) {
      deferred_.Reject(error.Value());
    }
  }

  Napi::Object resultObject(Napi::Env env) const {
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
    Napi::Array notes = Napi::Array::New(env, result_.notes.size());
    for (size_t i = 0; i < result_.notes.size(); ++i) notes.Set(static_cast<uint32_t>(i), result_.notes[i]);
    result.Set("notes", notes);
    return result;
  }

  TrainJob job_;                           // plain data, the run's own copies
  std::shared_ptr<TrainControl> control_;  // shared with the JS handle's cancel/pause/resume
  const bool listening_;                   // onEvent was given
  // written by the training thread before its last post, read by settle() after it
  TrainResult result_;
  bool failed_ = false;
  const char* errorCode_ = kInternalErrorCode;
  std::string errorMessage_;
  // JS thread only
  Napi::Promise::Deferred deferred_;
  Napi::FunctionReference onEvent_;
  Napi::Error listenerError_;
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
    auto run = std::make_unique<TrainRun>(env, std::move(job), onEvent, control);
    Napi::Object handle = Napi::Object::New(env);
    handle.Set("promise", run->promise());
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
    EngineThreadJob::start(env, "nnstudio:train", std::move(run));
    return handle;
  });
}

}  // namespace nnstudio::addon
