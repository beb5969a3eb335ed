// The CUDA training session (train/session.h). Per run: the dataset goes to the device once; one
// training step (forward, loss, backward, optimizer + the next step's batch gather) is captured in a CUDA
// graph, plus one of kStepsPerGraph full steps and one for a last partial batch; each epoch uploads its
// order, gathers its first batch and replays the graphs. runSteps only launches: the host waits inside an
// epoch only to keep at most kWindows * kWindowSteps steps queued (so cancel and pause act within
// milliseconds), and the totals are read asynchronously (pinned memory, an event polled) from the
// device-side StepState, which the loss kernel also flags on divergence. The learning rate of each step
// is computed on the device from the schedule and the StepState (a new base LR is written there between
// launches).
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuda/backend.h"
#include "cuda/buffer.h"
#include "cuda/kernel_choice.h"
#include "cuda/kernel_overrides.h"
#include "cuda/loss_scale.h"
#include "cuda/mlp_step_launch.h"
#include "cuda/network.h"
#include "cuda/rank_session.h"
#include "cuda/resident.h"
#include "train/run_control.h"
#include "train/session.h"

namespace nnstudio::cuda {

namespace {

constexpr int kWindowSteps = 32;  // an event every 32 steps...
constexpr int kWindows = 4;       // ...and at most 4 windows (128 steps) queued ahead of the GPU
// Full steps are replayed 8 at a time from one graph of that many steps (the step state is
// on the device, so the copies are identical): the GPU pays a graph's start-up once per group instead
// of once per step. NNSTUDIO_CUDA_STEPS_PER_GRAPH overrides it (1 = one graph per step).
int stepsPerGraph() { return kernelOverrides().stepsPerGraph; }

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
    if (lp.kind == LayerKind::Flatten || (lp.kind == LayerKind::Residual && !lp.blockEnd)) continue;  // aliases
    if (lp.kind == LayerKind::Conv2D && i + 1 < plan.layers.size() && plan.layers[i + 1].kind == LayerKind::MaxPool2D)
      continue;
    activations += 2 * floatBytes * double(batch) * double(lp.outSize);
  }
  auto resident = [&](const DatasetView& d) {
    return floatBytes * double(d.count) * double(d.featureSize + 2 + (d.targets ? d.targetWidth : 0));
  };
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

RunTotals runTotals(const StepState& s) {
  RunTotals t;
  t.globalStep = s.globalStep;
  t.epochStep = s.epochStep;
  t.sampleLossSum = s.sampleLossSum;
  t.correct = s.correct;
  t.samples = s.samples;
  t.squaredErrorSum = s.squaredErrorSum;
  t.batchLossSum = s.batchLossSum;
  t.lossSteps = s.lossSteps;
  t.diverged = s.diverged != 0;
  t.divergedNaN = s.divergedNaN != 0;
  t.divergedAt = s.divergedAt;
  t.lossScaling = s.lossScaling != 0;
  t.lossScaleLog2 = s.lossScaleLog2;
  t.skippedSteps = s.skippedSteps;
  return t;
}

// A run scales its loss where its convolutions take FP16 products (a mixed run on a GPU without BF16, or
// forced): their gradients would otherwise fall below FP16's range (loss_scale.h). Dense layers stay FP32.
bool scalesLoss(const SessionSetup& setup) {
  bool convs = false;
  for (const LayerPlan& lp : setup.plan.layers) convs = convs || lp.kind == LayerKind::Conv2D;
  return convs && lossScalingFor(convTcModeFor(currentDeviceCaps(), kernelOverrides(), setup.options.precision));
}

class CudaSession final : public TrainingSession {
 public:
  CudaSession(const SessionSetup& setup, std::string deviceName, const RankSetup& rank = {});

  std::string deviceName() const override { return deviceName_; }
  void start(StartState state) override;
  void beginEpoch(const std::vector<uint32_t>& order) override;
  int64_t runSteps(int64_t maxSteps) override;
  void requestTotals() override;
  bool totalsPending() const override { return progressPending_; }
  bool takeTotals(RunTotals& totals) override;
  RunTotals totals() override;
  void synchronize() override { check(cudaStreamSynchronize(stream_), "training"); }
  void setBaseLearningRate(double lr) override;
  ValidationTotals validate() override;
  void keepBest() override;
  std::vector<float> weights(WeightsKind which) override;
  std::vector<float> optimizerState() override {
    return download(moments_, momentCount_, stream_, "downloading the optimizer state");
  }

 private:
  void enqueueStep(int n);  // one step on batch rows 0..n-1 (captured, never run directly)
  void averageGradients();
  void connectRanks();
  // what the loss compares with: the labels (classification, with the class weights if any) or targets
  LossTargets lossTargets(const int32_t* labels, const float* targets) const;
  void captureSteps();
  void chooseFusedStep(const SessionSetup& setup);

  // ---- the run ----
  const std::string deviceName_;
  const RankSetup rank_;
  const int64_t epochSamples_;  // the samples of an epoch this session reads (its share when data-parallel)
  const ModelSpec& spec_;
  const bool regression_;
  const int K_;  // the head's width
  const DatasetView data_;
  const DatasetView* validation_;
  const LrPlan lrPlan_;
  const uint64_t seed_;
  const Augmentation augment_;
  const float ema_;  // the weight average's decay; 0: none
  const bool lossScaling_;  // FP16 products: the loss is scaled (loss_scale.h)
  const int batch_;
  const size_t P_, momentCount_;
  // ---- device state: weights, gradients, optimizer moments, the backup for divergence ----
  Stream stream_;
  Network net_;
  DeviceBuffer<float> params_, grads_, backup_, moments_, best_;
  DeviceBuffer<float> average_;  // the weight average (ema > 0), else empty
  // the weights validate() and keepBest() use: the average with ema, else the current ones
  float* evaluated() const { return ema_ > 0 ? average_.get() : params_.get(); }
  DeviceBuffer<StepState> state_;
  // ---- the data, resident for the whole run, and the epoch's order and batch ----
  ResidentData trainData_;
  std::unique_ptr<ResidentData> validData_;
  DeviceBuffer<float> batchFeatures_;
  DeviceBuffer<float> augmented_;       // the augmented batch (options.augment), else empty
  DeviceBuffer<int32_t> batchLabels_;
  DeviceBuffer<float> batchTargets_;     // regression (batch, K)
  DeviceBuffer<float> classWeights_;     // classification with class weights (classes)
  DeviceBuffer<uint8_t> decayMask_;      // weight decay: 1 for the parameters that decay
  DeviceBuffer<float> validOutputs_;     // regression: the validation outputs (count, K), for the metrics
  DeviceBuffer<uint32_t> order_;
  PinnedBuffer<uint32_t> hostOrder_;
  PinnedBuffer<StepState> snapshot_;
  DeviceBuffer<StepState> validState_;
  PinnedBuffer<StepState> validSnapshot_;
  // ---- the step graphs ----
  BatchGather nextBatch_;  // the batch of a step is gathered by the step before (its optimizer kernel)
  const int tailBatch_;
  const int64_t fullSteps_;
  const int group_;
  GraphExec fullStep_, groupSteps_, tailStep_;
  // a small MLP's whole step in one launch (mlp_step.h), when chosen: one of the layouts has blocks > 0
  MlpStepLayout fusedLayout_;
  MlpUnitLayout fusedUnits_;
  DeviceBuffer<float> fusedStaging_;  // the unit split's batch copies
  MlpStepArgs fusedArgs_;
  bool fused() const { return fusedLayout_.blocks > 0 || fusedUnits_.blocks > 0; }
  void launchFused(int rows, int steps) {
    if (fusedUnits_.blocks > 0) mlp_unit_step_fused(stream_, fusedArgs_, fusedUnits_, rows, steps);
    else mlp_step_fused(stream_, fusedArgs_, fusedLayout_, rows, steps);
  }
  // ---- the queue's bound and the asynchronous totals ----
  std::vector<std::unique_ptr<Event>> windows_;
  Event progressEvent_;
  bool progressPending_ = false;
  int64_t launched_ = 0;       // steps launched in the run, for the windows
  int64_t epochLaunched_ = 0;  // steps launched this epoch
  double baseLr_ = 0;          // the source of setBaseLearningRate's copy
};

CudaSession::CudaSession(const SessionSetup& setup, std::string deviceName, const RankSetup& rank)
    : deviceName_(std::move(deviceName)),
      rank_(rank),
      epochSamples_(rank.epochSamples > 0 ? rank.epochSamples : setup.data.count),
      spec_(setup.spec),
      regression_(setup.plan.regression()),
      K_(int(setup.plan.outputWidth)),
      data_(setup.data),
      validation_(setup.validation),
      lrPlan_(setup.lrPlan),
      seed_(rank.rank > 0 ? mixSeed(setup.options.seed, uint64_t(rank.rank), 0xDA7A) : setup.options.seed),
      augment_(setup.options.augment),
      ema_(float(setup.options.ema)),
      lossScaling_(scalesLoss(setup)),
      batch_(setup.batch),
      P_(setup.plan.parameterCount),
      momentCount_(optimizerStateSize(setup.spec, setup.plan.parameterCount)),
      net_(setup.spec, setup.batch, false, true, !setup.options.classWeights.empty(), setup.options.precision),
      params_(std::max<size_t>(P_, 1), "allocating the weights"),
      grads_(std::max<size_t>(P_, 1), "allocating the gradients"),
      backup_(std::max<size_t>(P_, 1), "allocating the weights' backup"),
      moments_(std::max<size_t>(momentCount_, 1), "allocating the optimizer state"),
      best_(setup.keepBest ? std::max<size_t>(P_, 1) : 0, "allocating the best epoch's weights"),
      average_(setup.options.ema > 0 ? std::max<size_t>(P_, 1) : 0, "allocating the weight average"),
      state_(1),
      trainData_(setup.data, stream_, "uploading the training data"),
      validData_(setup.validation ? std::make_unique<ResidentData>(*setup.validation, stream_,
                                                                    "uploading the validation data")
                                  : nullptr),
      batchFeatures_(size_t(setup.batch) * size_t(setup.data.featureSize), "allocating the batch"),
      augmented_(setup.options.augment.enabled() ? size_t(setup.batch) * size_t(setup.data.featureSize) : 0,
                 "allocating the augmented batch"),
      batchLabels_(regression_ ? 0 : size_t(setup.batch)),
      batchTargets_(regression_ ? size_t(setup.batch) * size_t(K_) : 0, "allocating the batch's targets"),
      classWeights_(setup.options.classWeights.size(), "allocating the class weights"),
      decayMask_(setup.spec.optimizer.weightDecay > 0 ? setup.plan.parameterCount : 0, "allocating the decay mask"),
      validOutputs_(regression_ && setup.validation ? size_t(setup.validation->count) * size_t(K_) : 0,
                    "allocating the validation outputs"),
      order_(size_t(epochSamples_)),
      hostOrder_(size_t(epochSamples_)),
      snapshot_(1),
      validState_(1),
      validSnapshot_(1),
      tailBatch_(int(epochSamples_ % setup.batch)),
      fullSteps_(epochSamples_ / setup.batch),
      group_(int(std::min<int64_t>(stepsPerGraph(), std::max<int64_t>(fullSteps_, 1)))) {
  nextBatch_.features = trainData_.features.get();
  nextBatch_.labels = regression_ ? nullptr : trainData_.labels.get();
  nextBatch_.order = order_.get();
  nextBatch_.batchFeatures = batchFeatures_.get();
  nextBatch_.batchLabels = batchLabels_.get();
  if (regression_) {
    nextBatch_.targets = trainData_.targets.get();
    nextBatch_.batchTargets = batchTargets_.get();
    nextBatch_.targetWidth = K_;
  }
  // small host vectors, copied once before any step (the pageable copies have read them on return)
  if (classWeights_.size())
    check(cudaMemcpyAsync(classWeights_.get(), setup.options.classWeights.data(), classWeights_.bytes(),
                          cudaMemcpyHostToDevice, stream_),
          "uploading the class weights");
  if (decayMask_.size()) {
    const std::vector<uint8_t> mask = weightDecayMask(setup.spec);
    check(cudaMemcpyAsync(decayMask_.get(), mask.data(), decayMask_.bytes(), cudaMemcpyHostToDevice, stream_),
          "uploading the decay mask");
    check(cudaStreamSynchronize(stream_), "uploading the decay mask");  // `mask` dies at the end of this block
  }
  nextBatch_.featureSize = data_.featureSize;
  nextBatch_.count = epochSamples_;
  nextBatch_.batch = batch_;
  if (rank_.ranks > 1) connectRanks();
  chooseFusedStep(setup);
  captureSteps();
  for (int i = 0; i < kWindows; ++i) windows_.push_back(std::make_unique<Event>());
}

LossTargets CudaSession::lossTargets(const int32_t* labels, const float* targets) const {
  LossTargets t;
  t.labels = regression_ ? nullptr : labels;
  t.targets = regression_ ? targets : nullptr;
  t.classWeights = classWeights_.get();
  return t;
}

// The fused step where the network, the run and the device allow it and the chooser takes it (mlp_step.h).
void CudaSession::chooseFusedStep(const SessionSetup& setup) {
  if (kernelOverrides().fusedStep == Switch::Off) return;
  const MlpStepRun run{!setup.options.classWeights.empty(), setup.options.augment.enabled(), setup.options.ema > 0,
                       rank_.ranks > 1};
  if (!mlpStepRefusal(setup.plan, run).empty()) return;
  const MlpStepShape shape = mlpStepShape(setup.plan, setup.spec.optimizer, batch_);
  const int blocks = mlp_step_blocks(shape);
  const MlpUnitLayout units = mlp_unit_step_layout(shape);
  if (!chooseMlpStep(currentDeviceCaps(), kernelOverrides(), shape, std::max(blocks, units.blocks))) return;
  std::vector<const LayerPlan*> dense;
  for (const LayerPlan& lp : setup.plan.layers)
    if (lp.kind == LayerKind::Dense) dense.push_back(&lp);
  const OptimizerSpec& opt = spec_.optimizer;
  MlpStepArgs& a = fusedArgs_;
  a.features = trainData_.features.get();
  a.labels = trainData_.labels.get();
  a.order = order_.get();
  a.batch = batch_;
  a.inputs = shape.inputs;
  a.hidden = shape.hidden;
  a.classes = shape.classes;
  a.act = dense[0]->activation;
  a.alpha = dense[0]->alpha;
  a.smoothing = setup.plan.labelSmoothing;
  a.params = params_.get();
  a.backup = backup_.get();
  a.m = moments_.get();
  a.v = opt.kind == OptimizerKind::SGD ? nullptr : moments_.get() + P_;
  a.w1 = dense[0]->weightOffset;
  a.b1 = dense[0]->biasOffset;
  a.w2 = dense[1]->weightOffset;
  a.b2 = dense[1]->biasOffset;
  a.state = state_.get();
  a.schedule = lrPlan_;
  a.adam = opt.kind != OptimizerKind::SGD;
  a.momentum = opt.momentum;
  a.nesterov = opt.nesterov;
  a.beta1 = opt.beta1;
  a.beta2 = opt.beta2;
  a.eps = opt.eps;
  a.decay = WeightDecay{opt.weightDecay, nullptr, opt.decoupled()};
  a.precision = setup.options.precision;
  if (chooseUnitSplit(kernelOverrides(), shape, units, blocks)) {
    fusedUnits_ = units;
    fusedStaging_.allocate(units.stagingFloats(shape.inputs), "allocating the fused MLP step's batch copies");
    a.staging = fusedStaging_.get();
  } else if (blocks >= 2) fusedLayout_ = mlpStepLayout(shape, blocks);
}

void CudaSession::enqueueStep(int n) {
  if (fused()) return launchFused(n, 1);
  const OptimizerSpec& opt = spec_.optimizer;
  const WeightDecay decay{decayMask_.size() ? opt.weightDecay : 0.0f, decayMask_.get(), opt.decoupled()};
  const float* input = batchFeatures_.get();
  if (augmented_.size()) {
    const std::vector<int>& in = spec_.input;  // [C, H, W]: the driver checked
    augment_batch(stream_, augmented_.get(), input, n, in[0], in[1], in[2], augment_, seed_, state_.get());
    input = augmented_.get();
  }
  // (batchnorm's running statistics live in params_ and move with this forward pass)
  net_.forward(stream_, params_.get(), input, n, true, seed_, state_.get(), params_.get());
  net_.loss(stream_, lossTargets(batchLabels_.get(), batchTargets_.get()), n, state_.get());
  net_.backward(stream_, params_.get(), grads_.get(), n);
  if (rank_.ranks > 1) averageGradients();  // every device then takes the same step
  if (lossScaling_) check_gradients_finite(stream_, grads_.get(), P_, state_.get());
  if (opt.kind == OptimizerKind::SGD)
    sgd_step(stream_, params_.get(), grads_.get(), moments_.get(), backup_.get(), P_, lrPlan_, opt.momentum,
             state_.get(), &nextBatch_, decay, opt.nesterov);
  else
    adam_step(stream_, params_.get(), grads_.get(), moments_.get(), moments_.get() + P_, backup_.get(), P_, lrPlan_,
              opt.beta1, opt.beta2, opt.eps, state_.get(), &nextBatch_, decay);
  if (ema_ > 0) ema_update(stream_, average_.get(), params_.get(), P_, ema_, state_.get());
}

// Data-parallel: the gradients averaged over the devices, in place, on the compute stream (captured with the
// step: NCCL >= 2.9). Every rank gets the same bits, so the weights stay identical without a broadcast.
void CudaSession::averageGradients() {
  const NcclResult result = rank_.nccl->allReduce(grads_.get(), grads_.get(), P_, kNcclFloat32, kNcclAvg, rank_.comm,
                                                  stream_);
  if (result != kNcclSuccess)
    throw EngineError(std::string("averaging the gradients over the GPUs (NCCL): ") + rank_.nccl->getErrorString(result));
}

// NCCL connects its peers at a collective's first launch, which a stream capture forbids ("failed to peer with
// device 1: operation not permitted when stream is capturing"): one all-reduce of the captured one's size runs
// first, uncaptured, on every rank at once (DataParallelSession builds the ranks' sessions together).
void CudaSession::connectRanks() {
  check(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), stream_), "clearing the gradients");
  averageGradients();
  check(cudaStreamSynchronize(stream_), "connecting the GPUs (NCCL)");
}

void CudaSession::captureSteps() {
  fullStep_.capture(stream_, [&] { enqueueStep(batch_); });
  if (group_ > 1)
    groupSteps_.capture(stream_, [&] {
      if (fused()) return launchFused(batch_, group_);
      for (int i = 0; i < group_; ++i) enqueueStep(batch_);
    });
  if (tailBatch_) tailStep_.capture(stream_, [&] { enqueueStep(tailBatch_); });
}

void CudaSession::start(StartState state) {
  const size_t paramBytes = sizeof(float) * P_;
  check(cudaMemcpyAsync(params_.get(), state.parameters.data(), paramBytes, cudaMemcpyHostToDevice, stream_),
        "uploading the weights");
  check(cudaMemcpyAsync(backup_.get(), params_.get(), paramBytes, cudaMemcpyDeviceToDevice, stream_),
        "copying the weights");
  check(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), stream_), "clearing gradients");
  check(cudaMemsetAsync(moments_.get(), 0, moments_.bytes(), stream_), "clearing optimizer state");
  check(cudaMemsetAsync(state_.get(), 0, sizeof(StepState), stream_), "clearing the step state");
  StepState initialState{};  // pageable: cudaMemcpyAsync has read it when it returns
  initialState.globalStep = state.globalStep;
  initialState.baseLr = state.baseLearningRate;
  initialState.lossScaling = lossScaling_ ? 1 : 0;
  initialState.lossScaleLog2 = lossScaling_ ? kernelOverrides().lossScaleLog2 : 0;
  check(cudaMemcpyAsync(state_.get(), &initialState, sizeof(StepState), cudaMemcpyHostToDevice, stream_),
        "setting the step state");
  if (!state.optimizerState.empty())
    check(cudaMemcpyAsync(moments_.get(), state.optimizerState.data(), sizeof(float) * momentCount_,
                          cudaMemcpyHostToDevice, stream_),
          "uploading the optimizer state");
  if (!state.bestParameters.empty())
    check(cudaMemcpyAsync(best_.get(), state.bestParameters.data(), paramBytes, cudaMemcpyHostToDevice, stream_),
          "uploading the best weights");
  if (ema_ > 0) {
    if (state.emaParameters.empty())
      check(cudaMemcpyAsync(average_.get(), params_.get(), paramBytes, cudaMemcpyDeviceToDevice, stream_),
            "starting the weight average");
    else
      check(cudaMemcpyAsync(average_.get(), state.emaParameters.data(), paramBytes, cudaMemcpyHostToDevice, stream_),
            "uploading the weight average");
  }
  // the pageable sources above are read when the copies return; `state` dies with this call
}

void CudaSession::beginEpoch(const std::vector<uint32_t>& order) {
  // the GPU is idle here (the last epoch ended with a synchronise): the pinned order can be rewritten
  if (int64_t(order.size()) != epochSamples_)
    throw EngineError("an epoch's order of " + std::to_string(order.size()) + " samples for a session of " +
                      std::to_string(epochSamples_) + " (internal error)");
  std::memcpy(hostOrder_.get(), order.data(), sizeof(uint32_t) * size_t(epochSamples_));
  check(cudaMemcpyAsync(order_.get(), hostOrder_.get(), sizeof(uint32_t) * size_t(epochSamples_), cudaMemcpyHostToDevice,
                        stream_),
        "uploading the epoch's order");
  check(cudaMemsetAsync(&state_.get()->epochStep, 0, sizeof(long long), stream_), "starting the epoch");
  check(cudaMemsetAsync(&state_.get()->sampleLossSum, 0,
                        offsetof(StepState, blocksDone) - offsetof(StepState, sampleLossSum), stream_),
        "starting the epoch");
  gather_batch(stream_, nextBatch_, int(std::min<int64_t>(batch_, epochSamples_)), state_.get());  // a rank's share may be under a batch
  epochLaunched_ = 0;
}

// The group graph while a whole group of full steps is left, else one full step, then the tail.
int64_t CudaSession::runSteps(int64_t maxSteps) {
  int64_t steps = 1;
  if (group_ > 1 && maxSteps >= group_ && fullSteps_ - epochLaunched_ >= group_) {
    groupSteps_.launch(stream_);
    steps = group_;
  } else {
    (epochLaunched_ >= fullSteps_ ? tailStep_ : fullStep_).launch(stream_);
  }
  epochLaunched_ += steps;
  const int64_t before = launched_;
  launched_ += steps;
  if (launched_ / kWindowSteps != before / kWindowSteps) {
    Event& window = *windows_[size_t((launched_ / kWindowSteps) % kWindows)];
    check(cudaEventSynchronize(window), "training");  // the window recorded kWindows ago
    check(cudaEventRecord(window, stream_), "training");
  }
  return steps;
}

void CudaSession::requestTotals() {
  check(cudaMemcpyAsync(snapshot_.get(), state_.get(), sizeof(StepState), cudaMemcpyDeviceToHost, stream_),
        "reading training progress");
  check(cudaEventRecord(progressEvent_, stream_), "reading training progress");
  progressPending_ = true;
}

bool CudaSession::takeTotals(RunTotals& totals) {
  if (!progressPending_ || cudaEventQuery(progressEvent_) != cudaSuccess) return false;
  progressPending_ = false;
  totals = runTotals(snapshot_[0]);
  return true;
}

RunTotals CudaSession::totals() {
  check(cudaMemcpyAsync(snapshot_.get(), state_.get(), sizeof(StepState), cudaMemcpyDeviceToHost, stream_),
        "reading training progress");
  check(cudaStreamSynchronize(stream_), "training");
  progressPending_ = false;
  return runTotals(snapshot_[0]);
}

void CudaSession::setBaseLearningRate(double lr) {
  baseLr_ = lr;
  // pageable source: the copy has read it on return, and it lands between the launches around it
  check(cudaMemcpyAsync(&state_.get()->baseLr, &baseLr_, sizeof(double), cudaMemcpyHostToDevice, stream_),
        "setting the learning rate");
}

ValidationTotals CudaSession::validate() {
  const DatasetView& val = *validation_;
  check(cudaMemsetAsync(validState_.get(), 0, sizeof(StepState), stream_), "validation");
  const LossConfig config{spec_.loss, spec_.huberDelta, regression_, spec_.labelSmoothing};
  for (int64_t first = 0; first < val.count; first += batch_) {
    const int n = int(std::min<int64_t>(batch_, val.count - first));
    const float* outputs = net_.forward(stream_, evaluated(), validData_->features.get() + first * val.featureSize,
                                        n, false, 0, state_.get());
    const LossTargets targets =
        lossTargets(regression_ ? nullptr : validData_->labels.get() + first,
                    regression_ ? validData_->targets.get() + first * K_ : nullptr);
    loss_predict(stream_, config, outputs, targets, n, K_, nullptr, nullptr, validState_.get(), nullptr);
    if (regression_)
      check(cudaMemcpyAsync(validOutputs_.get() + first * K_, outputs, sizeof(float) * size_t(n) * size_t(K_),
                            cudaMemcpyDeviceToDevice, stream_),
            "validation");
  }
  check(cudaMemcpyAsync(validSnapshot_.get(), validState_.get(), sizeof(StepState), cudaMemcpyDeviceToHost, stream_),
        "validation");
  check(cudaStreamSynchronize(stream_), "validation");
  ValidationTotals v;
  v.lossSum = validSnapshot_[0].sampleLossSum;
  v.weightSum = validSnapshot_[0].weightSum;
  v.correct = validSnapshot_[0].correct;
  if (regression_) v.outputs = download(validOutputs_, validOutputs_.size(), stream_, "downloading the validation outputs");
  return v;
}

void CudaSession::keepBest() {
  check(cudaMemcpyAsync(best_.get(), evaluated(), sizeof(float) * P_, cudaMemcpyDeviceToDevice, stream_),
        "keeping the best weights");
}

std::vector<float> CudaSession::weights(WeightsKind which) {
  switch (which) {
    case WeightsKind::Best: return download(best_, P_, stream_, "downloading the best weights");
    case WeightsKind::LastFinite: return download(backup_, P_, stream_, "downloading the weights");
    case WeightsKind::Average:
      if (ema_ > 0) return download(average_, P_, stream_, "downloading the weight average");
      break;
    case WeightsKind::Current: break;
  }
  return download(params_, P_, stream_, "downloading the weights");
}

}  // namespace

void checkRankFits(const SessionSetup& setup, const std::string& deviceName) {
  // the weight average takes as much as the optimizer state's share per parameter
  const size_t stateFloats = optimizerStateSize(setup.spec, setup.plan.parameterCount) +
                             (setup.options.ema > 0 ? setup.plan.parameterCount : 0);
  checkFitsOnGpu(setup.plan, stateFloats, setup.keepBest, setup.batch, setup.data, setup.validation, deviceName);
}

std::unique_ptr<TrainingSession> openRankSession(const SessionSetup& setup, const std::string& deviceName,
                                                 const RankSetup& rank) {
  return std::make_unique<CudaSession>(setup, deviceName, rank);
}

// The GPU memory check and every allocation, before the host builds the initial weights.
std::unique_ptr<TrainingSession> CudaBackend::openSession(const SessionSetup& setup) {
  const std::vector<int>& gpus = setup.options.gpus;
  if (setup.ranks > 1) {
    std::string why;
    const NcclLibrary* nccl = ncclLibrary(&why);
    if (!nccl) throw EngineError(why);  // dataParallelRanks said it loads (internal error otherwise)
    return openDataParallelSession(setup, std::vector<int>(gpus.begin(), gpus.begin() + setup.ranks), *nccl);
  }
  const int device = gpus.empty() ? deviceIndex_ : gpus.front();
  check(cudaSetDevice(device), "selecting the GPU");
  const std::string name = device == deviceIndex_ ? info_.name : gpuName(device);
  checkRankFits(setup, name);
  return openRankSession(setup, name, RankSetup{});
}

}  // namespace nnstudio::cuda
