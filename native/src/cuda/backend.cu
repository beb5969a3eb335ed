// The CUDA training loop and evaluation (see backend.h). Per run: the dataset goes to the device once;
// one training step (forward, loss, backward, optimizer + the next step's batch gather) is captured in a
// CUDA graph, plus one for a last partial batch; each epoch uploads its order (the CPU backend's shuffle,
// so both backends see the same batches), gathers its first batch and replays the graph once per batch.
// The host never waits inside an epoch except to keep at most kAhead steps queued (so cancel and pause
// act within milliseconds) and reads the device-side StepState asynchronously for throttled progress
// and divergence. The learning rate of each step is computed on the device from the schedule and the
// StepState (a new base LR is written there between launches); a resumed run uploads its TrainState
// (weights, moments, step count) and goes on from the next epoch.
#include "cuda/backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "cpu/backend.h"
#include "cuda/buffer.h"
#include "cuda/kernel_overrides.h"
#include "cuda/network.h"
#include "cpu/run_control.h"
#include "spec/lr_schedule.h"
#include "spec/rng.h"

namespace nnstudio::cuda {

std::vector<DeviceInfo> listDevices();

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr int kWindowSteps = 32;  // an event every 32 steps...
constexpr int kWindows = 4;       // ...and at most 4 windows (128 steps) queued ahead of the GPU
// Full steps are replayed 8 at a time from one graph of that many steps (the step state is
// on the device, so the copies are identical): the GPU pays a graph's start-up once per group instead
// of once per step. NNSTUDIO_CUDA_STEPS_PER_GRAPH overrides it (1 = one graph per step).
int stepsPerGraph() { return kernelOverrides().stepsPerGraph; }

// A dataset resident on the device.
struct ResidentData {
  DeviceBuffer<float> features;
  DeviceBuffer<int32_t> labels;
  ResidentData(const DatasetView& d, cudaStream_t stream, const char* what) {
    features.allocate(size_t(d.count) * size_t(d.featureSize), what);
    check(cudaMemcpyAsync(features.get(), d.features, features.bytes(), cudaMemcpyHostToDevice, stream), what);
    if (d.labels) {
      labels.allocate(size_t(d.count), what);
      check(cudaMemcpyAsync(labels.get(), d.labels, labels.bytes(), cudaMemcpyHostToDevice, stream), what);
    }
  }
};

class GraphExec {
 public:
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  // Records what `enqueue` launches on `stream` (nothing runs) and instantiates it.
  template <class Fn>
  void capture(cudaStream_t stream, Fn&& enqueue) {
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capturing a training step");
    cudaGraph_t graph = nullptr;
    try {
      enqueue();
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    check(cudaStreamEndCapture(stream, &graph), "capturing a training step");
    const cudaError_t e = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);
    check(e, "preparing the training step's CUDA graph");
  }
  void launch(cudaStream_t stream) const { check(cudaGraphLaunch(exec_, stream), "launching a training step"); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

template <class T>
std::vector<T> download(const DeviceBuffer<T>& buffer, size_t count, cudaStream_t stream, const char* what) {
  std::vector<T> host(count);
  if (count) check(cudaMemcpyAsync(host.data(), buffer.get(), sizeof(T) * count, cudaMemcpyDeviceToHost, stream), what);
  check(cudaStreamSynchronize(stream), what);
  return host;
}

std::string lossWord(bool nan) { return nan ? "NaN" : "infinite"; }

// A lower bound of the GPU memory a run takes: weights, gradients, the divergence backup, optimizer state
// (and the best epoch's weights); each layer's stored output and gradient for one batch (a conv before a
// max pool may be fused and store nothing); the gathered batch; the resident data and its order. A run
// that needs more than the GPU has free is refused with the figures before anything is allocated (and
// before the host builds the initial weights). NNSTUDIO_CUDA_MEMORY_CHECK=0 skips it (tests of the
// allocation's own error); what it leaves out (workspaces, masks, graphs) still fails at its allocation.
void checkFitsOnGpu(const NetworkPlan& plan, size_t optimizerFloats, bool keepBest, int batch, const DatasetView& data,
                    const DatasetView* validation, const std::string& device) {
  if (!kernelOverrides().memoryCheck) return;
  const double floatBytes = sizeof(float);
  const double weights = floatBytes * (double(plan.parameterCount) * (keepBest ? 4 : 3) + double(optimizerFloats));
  double activations = floatBytes * double(batch) * double(plan.inputSize);
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& lp = plan.layers[i];
    if (lp.kind == LayerKind::Flatten) continue;
    if (lp.kind == LayerKind::Conv2D && i + 1 < plan.layers.size() && plan.layers[i + 1].kind == LayerKind::MaxPool2D)
      continue;
    activations += 2 * floatBytes * double(batch) * double(lp.outSize);
  }
  auto resident = [&](const DatasetView& d) { return floatBytes * double(d.count) * double(d.featureSize + 2); };
  const double dataBytes = resident(data) + (validation ? resident(*validation) : 0.0);
  const double needed = weights + activations + dataBytes;
  size_t freeBytes = 0, totalBytes = 0;
  gpuMemory(freeBytes, totalBytes);
  if (totalBytes == 0 || needed <= double(freeBytes)) return;
  throw EngineError("too little free memory on " + device + " for this model and batch size: the run needs at least " +
                    gibText(needed) + " (weights, gradients and optimizer state " + gibText(weights) +
                    ", activations for a batch of " + std::to_string(batch) + " " + gibText(activations) + ", data " +
                    gibText(dataBytes) + "), and the GPU has " + gibText(double(freeBytes)) + " free of " +
                    gibText(double(totalBytes)) +
                    ": lower the batch size, use a smaller model, close other GPU programs, or train on the CPU");
}

// The CPU backend's order for an epoch (same seed, same shuffle).
void epochOrder(uint32_t* order, size_t count, bool shuffle, uint64_t seed, int epoch) {
  for (uint32_t i = 0; i < count; ++i) order[i] = i;
  if (!shuffle || count < 2) return;
  Rng rng(mixSeed(seed, uint64_t(epoch), 0x5EED));
  for (size_t i = count - 1; i > 0; --i) std::swap(order[i], order[rng.below(uint32_t(i + 1))]);
}

}  // namespace

CudaBackend::CudaBackend(int deviceIndex) : deviceIndex_(deviceIndex) {
  for (const DeviceInfo& d : listDevices())
    if (d.index == deviceIndex) info_ = d;
  if (info_.kind != DeviceKind::CUDA)
    throw EngineError("no CUDA device is available with index " + std::to_string(deviceIndex));
}

// ---- training ----

TrainResult CudaBackend::train(const ModelSpec& spec, const DatasetView& data, const DatasetView* validation,
                               const TrainOptions& options, ProgressSink* progress, TrainControl* control,
                               const std::vector<float>* start) {
  const auto runStart = Clock::now();
  // ---- input checks, before touching any memory (the CPU backend's) ----
  const NetworkPlan plan = planNetwork(spec);
  const int classes = plan.outputWidth == 1 ? 2 : int(plan.outputWidth);
  if (options.batchSize <= 0) throw EngineError("batch size must be positive, got " + std::to_string(options.batchSize));
  if (options.epochs <= 0) throw EngineError("epochs must be positive, got " + std::to_string(options.epochs));
  cpu::checkDataset(plan, classes, data, "training data", true);
  if (validation) cpu::checkDataset(plan, classes, *validation, "validation data", true);
  if (start) cpu::checkParameters(plan, *start, "starting parameters");
  if (data.count > int64_t(0xFFFFFFFFu)) throw EngineError("training data: more than 2^32 samples");
  const int batch = int(std::min<int64_t>(options.batchSize, data.count));
  const int64_t stepsPerEpoch = (data.count + batch - 1) / batch;
  const int64_t totalSteps = stepsPerEpoch * options.epochs;
  const TrainState* resume = options.resume;
  if (resume) checkResumeState(*resume, spec, options, plan.parameterCount, stepsPerEpoch);
  const LrPlan lrPlan = makeLrPlan(options.lrSchedule, spec.optimizer.lr, stepsPerEpoch, totalSteps);
  EarlyStopTracker stopper(options.earlyStopping, validation != nullptr);
  const bool keepBest = stopper.enabled() && options.earlyStopping.restoreBest;

  check(cudaSetDevice(deviceIndex_), "selecting the GPU");
  const int64_t featureSize = data.featureSize;
  const size_t P = plan.parameterCount;
  const bool adam = spec.optimizer.kind == OptimizerKind::Adam;
  checkFitsOnGpu(plan, optimizerStateSize(spec, P), keepBest, batch, data, validation, info_.name);
  Stream stream;

  TrainResult result;
  result.device = info_.name;
  result.parameters = resume ? resume->parameters : start ? *start : initialParameters(spec, spec.seed);
  double baseLr = resume ? resume->learningRate : double(spec.optimizer.lr);
  const int64_t firstStep = resume ? resume->step : 0;
  const int firstEpoch = resume ? resume->epoch + 1 : 1;
  if (resume) {
    result.history = resume->history;
    // the tracker picks up where it was; without the best weights (restoreBest newly asked) it starts over
    if (!keepBest || !resume->bestParameters.empty())
      for (const EpochStats& stats : resume->history) stopper.observe(stats);
  }

  // ---- device state: weights, gradients, optimizer moments, the backup for divergence ----
  Network net(spec, batch);
  DeviceBuffer<float> params(std::max<size_t>(P, 1), "allocating the weights");
  DeviceBuffer<float> grads(std::max<size_t>(P, 1), "allocating the gradients");
  DeviceBuffer<float> backup(std::max<size_t>(P, 1), "allocating the weights' backup");
  const size_t momentCount = optimizerStateSize(spec, P);
  DeviceBuffer<float> moments(std::max<size_t>(momentCount, 1), "allocating the optimizer state");
  DeviceBuffer<float> best(keepBest ? std::max<size_t>(P, 1) : 0, "allocating the best epoch's weights");
  bool haveBest = false;
  DeviceBuffer<StepState> state(1);
  const size_t paramBytes = sizeof(float) * P;
  check(cudaMemcpyAsync(params.get(), result.parameters.data(), paramBytes, cudaMemcpyHostToDevice, stream),
        "uploading the weights");
  check(cudaMemcpyAsync(backup.get(), params.get(), paramBytes, cudaMemcpyDeviceToDevice, stream), "copying the weights");
  check(cudaMemsetAsync(grads.get(), 0, grads.bytes(), stream), "clearing gradients");
  check(cudaMemsetAsync(moments.get(), 0, moments.bytes(), stream), "clearing optimizer state");
  check(cudaMemsetAsync(state.get(), 0, sizeof(StepState), stream), "clearing the step state");
  StepState initialState{};  // pageable: cudaMemcpyAsync has read it when it returns
  initialState.globalStep = firstStep;
  initialState.baseLr = baseLr;
  check(cudaMemcpyAsync(state.get(), &initialState, sizeof(StepState), cudaMemcpyHostToDevice, stream),
        "setting the step state");
  if (resume) {
    check(cudaMemcpyAsync(moments.get(), resume->optimizerState.data(), sizeof(float) * momentCount,
                          cudaMemcpyHostToDevice, stream),
          "uploading the optimizer state");
    if (keepBest && !resume->bestParameters.empty()) {
      check(cudaMemcpyAsync(best.get(), resume->bestParameters.data(), paramBytes, cudaMemcpyHostToDevice, stream),
            "uploading the best weights");
      haveBest = true;
    }
  }

  // ---- the data, resident for the whole run ----
  ResidentData trainData(data, stream, "uploading the training data");
  std::unique_ptr<ResidentData> validData;
  if (validation) validData = std::make_unique<ResidentData>(*validation, stream, "uploading the validation data");
  DeviceBuffer<float> batchFeatures(size_t(batch) * size_t(featureSize), "allocating the batch");
  DeviceBuffer<int32_t> batchLabels{size_t(batch)};
  DeviceBuffer<uint32_t> order(size_t(data.count));
  PinnedBuffer<uint32_t> hostOrder(size_t(data.count));
  PinnedBuffer<StepState> snapshot(1);
  DeviceBuffer<StepState> validState(1);
  PinnedBuffer<StepState> validSnapshot(1);

  // ---- one step as a graph (and one for a last partial batch) ----
  const OptimizerSpec& opt = spec.optimizer;
  // the batch of a step is gathered by the step before (its optimizer kernel), the epoch's first by gather_batch
  BatchGather nextBatch;
  nextBatch.features = trainData.features.get();
  nextBatch.labels = trainData.labels.get();
  nextBatch.order = order.get();
  nextBatch.batchFeatures = batchFeatures.get();
  nextBatch.batchLabels = batchLabels.get();
  nextBatch.featureSize = featureSize;
  nextBatch.count = data.count;
  nextBatch.batch = batch;
  auto enqueueStep = [&](int n) {
    net.forward(stream, params.get(), batchFeatures.get(), n, true, options.seed, state.get());
    net.loss(stream, batchLabels.get(), n, state.get());
    net.backward(stream, params.get(), grads.get(), n);
    if (adam)
      adam_step(stream, params.get(), grads.get(), moments.get(), moments.get() + P, backup.get(), P, lrPlan, opt.beta1,
                opt.beta2, opt.eps, state.get(), &nextBatch);
    else
      sgd_step(stream, params.get(), grads.get(), moments.get(), backup.get(), P, lrPlan, opt.momentum, state.get(),
               &nextBatch);
  };
  const int tailBatch = int(data.count % batch);
  const int64_t fullSteps = data.count / batch;
  const int group = int(std::min<int64_t>(stepsPerGraph(), std::max<int64_t>(fullSteps, 1)));
  GraphExec fullStep, groupSteps, tailStep;
  fullStep.capture(stream, [&] { enqueueStep(batch); });
  if (group > 1)
    groupSteps.capture(stream, [&] {
      for (int i = 0; i < group; ++i) enqueueStep(batch);
    });
  if (tailBatch) tailStep.capture(stream, [&] { enqueueStep(tailBatch); });

  std::vector<std::unique_ptr<Event>> windows;
  for (int i = 0; i < kWindows; ++i) windows.push_back(std::make_unique<Event>());
  Event progressEvent;
  bool progressPending = false;
  int64_t launched = 0;
  double trainingSeconds = 0;
  // The loss totals restart at every epoch (zeroed on the device with the epoch's step count): an epoch's
  // loss is then its own sum, not a difference of run totals whose rounding would depend on where the
  // run started, so a resumed run reports the uninterrupted run's history bit for bit.
  StepState reported{};        // totals at the last step event of this epoch
  auto lastEvent = Clock::now();

  auto readState = [&]() -> StepState {
    check(cudaMemcpyAsync(snapshot.get(), state.get(), sizeof(StepState), cudaMemcpyDeviceToHost, stream),
          "reading training progress");
    check(cudaStreamSynchronize(stream), "training");
    progressPending = false;
    return snapshot[0];
  };
  auto finishWith = [&](TrainStatus status, std::string message, int64_t steps, const DeviceBuffer<float>& weights) {
    check(cudaMemcpyAsync(result.parameters.data(), weights.get(), paramBytes, cudaMemcpyDeviceToHost, stream),
          "downloading the weights");
    check(cudaStreamSynchronize(stream), "downloading the weights");
    result.status = status;
    result.message = std::move(message);
    result.steps = steps;
    result.seconds = secondsSince(runStart);
    return result;
  };
  auto diverged = [&](const StepState& s) {
    const int64_t at = s.divergedAt - 1;  // 0-based global step
    const int epoch = int(at / stepsPerEpoch) + 1;
    const int64_t step = at % stepsPerEpoch + 1;
    return finishWith(TrainStatus::Diverged,
                      "training diverged at epoch " + std::to_string(epoch) + ", step " + std::to_string(step) +
                          ": the loss became " + lossWord(s.divergedNaN != 0) +
                          "; kept the weights of the last step with a finite loss (try a lower learning rate)",
                      at, backup);
  };
  auto emitStep = [&](const StepState& s, int epoch, double elapsed) {
    const int64_t steps = s.lossSteps - reported.lossSteps;
    if (!progress || steps <= 0) return;
    const double since = secondsSince(lastEvent);
    StepProgress sp;
    sp.epoch = epoch;
    sp.step = std::min<int64_t>(s.epochStep, stepsPerEpoch);
    sp.stepsPerEpoch = stepsPerEpoch;
    sp.globalStep = s.globalStep;
    sp.totalSteps = totalSteps;
    sp.loss = (s.batchLossSum - reported.batchLossSum) / double(steps);
    sp.samplesPerSecond = since > 0 ? double(s.samples - reported.samples) / since : 0;
    sp.etaSeconds =
        s.globalStep > firstStep ? double(totalSteps - s.globalStep) * elapsed / double(s.globalStep - firstStep) : 0;
    sp.learningRate = stepLearningRate(lrPlan, baseLr, s.globalStep - 1);
    progress->onStep(sp);
    reported = s;
    lastEvent = Clock::now();
  };

  auto takeNewLearningRate = [&] {
    const float newLr = control ? control->newLearningRate.exchange(0.0f) : 0.0f;
    if (newLr <= 0) return;
    baseLr = newLr;
    // pageable source: the copy has read it on return, and it lands between the launches around it
    check(cudaMemcpyAsync(&state.get()->baseLr, &baseLr, sizeof(double), cudaMemcpyHostToDevice, stream),
          "setting the learning rate");
  };

  for (int epoch = firstEpoch; epoch <= options.epochs; ++epoch) {
    // the GPU is idle here (the last epoch ended with a synchronise): the pinned order can be rewritten
    epochOrder(hostOrder.get(), size_t(data.count), options.shuffle, options.seed, epoch);
    check(cudaMemcpyAsync(order.get(), hostOrder.get(), sizeof(uint32_t) * size_t(data.count), cudaMemcpyHostToDevice,
                          stream),
          "uploading the epoch's order");
    check(cudaMemsetAsync(&state.get()->epochStep, 0, sizeof(long long), stream), "starting the epoch");
    check(cudaMemsetAsync(&state.get()->sampleLossSum, 0, offsetof(StepState, blocksDone) - offsetof(StepState, sampleLossSum),
                          stream),
          "starting the epoch");
    reported = StepState{};
    gather_batch(stream, batchFeatures.get(), batchLabels.get(), trainData.features.get(), trainData.labels.get(),
                 order.get(), featureSize, batch, batch, state.get());
    const auto epochStart = Clock::now();
    double pausedSeconds = 0;
    for (int64_t step = 1; step <= stepsPerEpoch;) {
      // ---- control: pause / cancel, between launches ----
      if (control) {
        if (control->pause.load()) {
          const auto pauseStart = Clock::now();
          check(cudaStreamSynchronize(stream), "training");
          while (control->pause.load() && !control->cancel.load())
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          pausedSeconds += secondsSince(pauseStart);
        }
        if (control->cancel.load()) {
          const StepState s = readState();
          if (s.diverged) return diverged(s);
          const int64_t done = s.globalStep - (epoch - 1) * stepsPerEpoch;
          return finishWith(TrainStatus::Cancelled,
                            "training cancelled at epoch " + std::to_string(epoch) + ", step " +
                                std::to_string(done + 1) + " of " + std::to_string(stepsPerEpoch) +
                                "; kept the weights of the last completed step",
                            s.globalStep, params);
        }
        takeNewLearningRate();
      }
      // ---- the step (or a group of full steps) ----
      int64_t steps = 1;
      if (group > 1 && fullSteps - step + 1 >= group) {
        groupSteps.launch(stream);
        steps = group;
      } else {
        (step > fullSteps ? tailStep : fullStep).launch(stream);
      }
      step += steps;
      const int64_t before = launched;
      launched += steps;
      if (launched / kWindowSteps != before / kWindowSteps) {
        Event& window = *windows[size_t((launched / kWindowSteps) % kWindows)];
        check(cudaEventSynchronize(window), "training");  // the window recorded kWindows ago
        check(cudaEventRecord(window, stream), "training");
      }
      // ---- throttled progress and divergence, read without stalling the GPU ----
      if (progressPending && cudaEventQuery(progressEvent) == cudaSuccess) {
        progressPending = false;
        const StepState s = snapshot[0];
        if (s.diverged) return diverged(readState());
        emitStep(s, epoch, trainingSeconds + secondsSince(epochStart) - pausedSeconds);
      }
      if (!progressPending && secondsSince(lastEvent) >= options.progressIntervalSeconds && step <= stepsPerEpoch) {
        check(cudaMemcpyAsync(snapshot.get(), state.get(), sizeof(StepState), cudaMemcpyDeviceToHost, stream),
              "reading training progress");
        check(cudaEventRecord(progressEvent, stream), "reading training progress");
        progressPending = true;
      }
    }
    // ---- epoch summary ----
    const StepState s = readState();
    EpochStats stats;
    stats.epoch = epoch;
    stats.seconds = secondsSince(epochStart) - pausedSeconds;
    trainingSeconds += stats.seconds;
    if (s.diverged) return diverged(s);
    emitStep(s, epoch, trainingSeconds);
    const double seen = double(s.samples);
    stats.trainLoss = s.sampleLossSum / seen;
    stats.trainAccuracy = double(s.correct) / seen;
    stats.learningRate = stepLearningRate(lrPlan, baseLr, s.globalStep - 1);
    if (validData) {
      check(cudaMemsetAsync(validState.get(), 0, sizeof(StepState), stream), "validation");
      for (int64_t first = 0; first < validation->count; first += batch) {
        const int n = int(std::min<int64_t>(batch, validation->count - first));
        const float* outputs = net.forward(stream, params.get(), validData->features.get() + first * featureSize, n,
                                           false, 0, state.get());
        loss_predict(stream, spec.loss, outputs, validData->labels.get() + first, n, net.outputWidth(), nullptr,
                     nullptr, validState.get(), nullptr);
      }
      check(cudaMemcpyAsync(validSnapshot.get(), validState.get(), sizeof(StepState), cudaMemcpyDeviceToHost, stream),
            "validation");
      check(cudaStreamSynchronize(stream), "validation");
      stats.hasValidation = true;
      stats.validationLoss = validSnapshot[0].sampleLossSum / double(validation->count);
      stats.validationAccuracy = double(validSnapshot[0].correct) / double(validation->count);
    }
    result.history.push_back(stats);
    if (progress) progress->onEpoch(stats);
    // ---- early stopping, checkpoint ----
    if (stopper.observe(stats) && keepBest) {
      check(cudaMemcpyAsync(best.get(), params.get(), paramBytes, cudaMemcpyDeviceToDevice, stream),
            "keeping the best weights");
      haveBest = true;
    }
    if (progress && progress->wantsCheckpoints()) {
      TrainState checkpoint;
      checkpoint.epoch = epoch;
      checkpoint.step = s.globalStep;
      checkpoint.seed = options.seed;
      checkpoint.learningRate = baseLr;
      checkpoint.parameters = download(params, P, stream, "downloading the weights for a checkpoint");
      checkpoint.optimizerState = download(moments, momentCount, stream, "downloading the optimizer state");
      checkpoint.history = result.history;
      if (haveBest) checkpoint.bestParameters = download(best, P, stream, "downloading the best weights");
      progress->onCheckpoint(checkpoint);
    }
    if (stopper.shouldStop()) {
      result.stoppedEarly = true;
      break;
    }
  }
  const StepState s = readState();
  result.bestEpoch = stopper.bestEpoch();
  std::string message = result.stoppedEarly ? stopper.message() : "";
  if (haveBest) {
    result.restoredBest = true;
    message += std::string(message.empty() ? "" : "; ") + "kept the weights of epoch " + std::to_string(result.bestEpoch);
    return finishWith(TrainStatus::Completed, message, s.globalStep, best);
  }
  return finishWith(TrainStatus::Completed, message, s.globalStep, params);
}

// ---- evaluation ----

EvalResult CudaBackend::evaluate(const ModelSpec& spec, const std::vector<float>& parameters, const DatasetView& data,
                                 int batchSize) {
  const NetworkPlan plan = planNetwork(spec);
  const int classes = plan.outputWidth == 1 ? 2 : int(plan.outputWidth);
  cpu::checkDataset(plan, classes, data, "evaluation data", false);
  cpu::checkParameters(plan, parameters, "parameters");
  if (batchSize <= 0) throw EngineError("evaluation batch size must be positive, got " + std::to_string(batchSize));
  check(cudaSetDevice(deviceIndex_), "selecting the GPU");
  Stream stream;
  // the GPU wants wide batches; the result does not depend on the batch size
  const int batch = int(std::min<int64_t>(std::max(batchSize, 1024), data.count));
  Network net(spec, batch, false, /*trainable=*/false);
  const int K = net.outputWidth();

  DeviceBuffer<float> params(std::max<size_t>(parameters.size(), 1));
  check(cudaMemcpyAsync(params.get(), parameters.data(), sizeof(float) * parameters.size(), cudaMemcpyHostToDevice,
                        stream),
        "uploading the weights");
  ResidentData resident(data, stream, "uploading the evaluation data");
  DeviceBuffer<int32_t> predictions(size_t(data.count));
  DeviceBuffer<float> probabilities(size_t(data.count) * size_t(classes));
  DeviceBuffer<StepState> state(1);
  DeviceBuffer<unsigned long long> confusion(size_t(classes) * size_t(classes));
  check(cudaMemsetAsync(state.get(), 0, sizeof(StepState), stream), "evaluation");
  check(cudaMemsetAsync(confusion.get(), 0, confusion.bytes(), stream), "evaluation");
  for (int64_t first = 0; first < data.count; first += batch) {
    const int n = int(std::min<int64_t>(batch, data.count - first));
    const float* outputs =
        net.forward(stream, params.get(), resident.features.get() + first * data.featureSize, n, false, 0, state.get());
    loss_predict(stream, spec.loss, outputs, data.labels ? resident.labels.get() + first : nullptr, n, K,
                 predictions.get() + first, probabilities.get() + first * classes, state.get(), confusion.get());
  }
  EvalResult result;
  result.classes = classes;
  result.predictions = download(predictions, size_t(data.count), stream, "downloading predictions");
  result.probabilities = download(probabilities, size_t(data.count) * size_t(classes), stream, "downloading predictions");
  const StepState s = download(state, 1, stream, "evaluation")[0];
  if (data.labels) {
    const std::vector<unsigned long long> counts = download(confusion, confusion.size(), stream, "evaluation");
    result.confusion.assign(counts.begin(), counts.end());
    result.loss = s.sampleLossSum / double(data.count);
    result.accuracy = double(s.correct) / double(data.count);
  }
  return result;
}

// ---- the seam devices.cpp calls ----

std::unique_ptr<Backend> createBackend(int deviceIndex) { return std::make_unique<CudaBackend>(deviceIndex); }

}  // namespace nnstudio::cuda
