// The training loop for every backend. Per run: the inputs are checked before any memory is touched, the
// backend opens a session (train/session.h) and takes the starting state. Per epoch: the order (shuffled
// from the seed and the epoch), then steps from the session until the epoch's are done, checking
// TrainControl between them (pause, cancel, a new base learning rate) and reading the totals without
// waiting for throttled step events and divergence; at the epoch's end the totals (a wait), validation,
// early stopping and the TrainState for a checkpoint. A resumed run starts from its TrainState at the
// epoch after it, with every counter as it was.
#include "train/driver.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "spec/lr_schedule.h"
#include "spec/model.h"
#include "train/checks.h"
#include "train/epoch_order.h"
#include "train/gpu_rule.h"
#include "train/partition.h"
#include "train/regression_metrics.h"
#include "train/run_control.h"
#include "train/session.h"

namespace nnstudio {

TrainResult Backend::train(const ModelSpec& spec, const DatasetView& data, const DatasetView* validation,
                           const TrainOptions& options, ProgressSink* progress, TrainControl* control,
                           const std::vector<float>* start) {
  return runTraining(*this, spec, data, validation, options, progress, control, start);
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string lossWord(bool nan) { return nan ? "NaN" : "infinite"; }

// ---- the prologue: every input checked before any memory is touched ----

struct RunShape {
  NetworkPlan plan;
  int batch = 0;
  int64_t stepsPerEpoch = 0, totalSteps = 0;
  int ranks = 1;  // devices training data-parallel
  LrPlan lrPlan;
  double trainTargetSst = 0;  // regression: the training targets' total sum of squares (trainR2's denominator)
};

RunShape checkRun(const ModelSpec& spec, const DatasetView& data, const DatasetView* validation,
                  const TrainOptions& options, const std::vector<float>* start, int ranks) {
  RunShape shape;
  shape.plan = planNetwork(spec);
  const NetworkPlan& plan = shape.plan;
  const int classes = headClassCount(plan);
  if (options.batchSize <= 0) throw EngineError("batch size must be positive, got " + std::to_string(options.batchSize));
  if (options.epochs <= 0) throw EngineError("epochs must be positive, got " + std::to_string(options.epochs));
  if (options.threads < 0) throw EngineError("threads must be >= 0, got " + std::to_string(options.threads));
  checkDataset(plan, classes, data, "training data", true);
  if (validation) checkDataset(plan, classes, *validation, "validation data", true);
  checkTaskOptions(plan, options);
  checkRecipeOptions(spec, options);
  if (start) checkParameters(plan, *start, "starting parameters");
  if (data.count > int64_t(0xFFFFFFFFu)) throw EngineError("training data: more than 2^32 samples");
  shape.batch = int(std::min<int64_t>(options.batchSize, data.count));
  // data-parallel: a global step reads a batch on every device (train/partition.h)
  shape.ranks = ranks;
  shape.stepsPerEpoch = ranks > 1 ? dataParallelSteps(data.count, shape.batch, ranks) : (data.count + shape.batch - 1) / shape.batch;
  if (shape.stepsPerEpoch < 1)
    throw EngineError("training data: " + std::to_string(data.count) + " samples cannot give each of " +
                      std::to_string(ranks) + " GPUs one");
  shape.totalSteps = shape.stepsPerEpoch * options.epochs;
  if (options.resume) checkResumeState(*options.resume, spec, options, plan.parameterCount, shape.stepsPerEpoch);
  shape.lrPlan = makeLrPlan(options.lrSchedule, spec.optimizer.lr, shape.stepsPerEpoch, shape.totalSteps);
  if (plan.regression()) shape.trainTargetSst = totalSumOfSquares(data.targets, data.count, data.targetWidth);
  return shape;
}

// ---- one run ----

class Driver {
 public:
  Driver(const ModelSpec& spec, const DatasetView& data, const DatasetView* validation, const TrainOptions& options,
         ProgressSink* progress, TrainControl* control, const std::vector<float>* start, int ranks);
  TrainResult run(Backend& backend);

 private:
  void open(Backend& backend);
  StartState startState() const;
  std::optional<TrainResult> runEpochSteps(int epoch);  // a value: the run ended (cancelled, diverged)
  std::optional<TrainResult> obeyControl(int epoch);
  void emitStep(const RunTotals& s, int epoch, double elapsed);
  EpochStats epochStats(int epoch, const RunTotals& s, double seconds);
  TrainState checkpoint(int epoch, const RunTotals& s);
  TrainResult finish(TrainStatus status, std::string message, int64_t steps, WeightsKind weights);
  TrainResult finishDiverged(const RunTotals& s);
  TrainResult finishCompleted();

  const Clock::time_point runStart_ = Clock::now();
  const ModelSpec& spec_;
  const DatasetView& data_;
  const DatasetView* validation_;
  const TrainOptions& options_;
  ProgressSink* progress_;
  TrainControl* control_;
  const std::vector<float>* start_;
  const TrainState* resume_;
  const RunShape shape_;
  const int64_t stepsPerEpoch_;
  EarlyStopTracker stopper_;
  const bool keepBest_;
  const int firstEpoch_;
  const int64_t firstStep_;
  double baseLr_;
  bool haveBest_;  // the session holds best weights (keepBest)

  std::unique_ptr<TrainingSession> session_;
  TrainResult result_;
  std::vector<uint32_t> order_;
  // ---- clocks and the last step event ----
  double trainingSeconds_ = 0;  // steps only: no validation, no pauses
  Clock::time_point epochStart_;
  double pausedSeconds_ = 0;    // this epoch's
  Clock::time_point lastEvent_;
  // The totals at the last step event of this epoch. The session's totals restart at every epoch: an
  // epoch's loss is then its own sum, not a difference of run totals whose rounding would depend on
  // where the run started, so a resumed run reports the uninterrupted run's history bit for bit.
  RunTotals reported_;
};

Driver::Driver(const ModelSpec& spec, const DatasetView& data, const DatasetView* validation,
               const TrainOptions& options, ProgressSink* progress, TrainControl* control,
               const std::vector<float>* start, int ranks)
    : spec_(spec),
      data_(data),
      validation_(validation),
      options_(options),
      progress_(progress),
      control_(control),
      start_(start),
      resume_(options.resume),
      shape_(checkRun(spec, data, validation, options, start, ranks)),
      stepsPerEpoch_(shape_.stepsPerEpoch),
      stopper_(options.earlyStopping, validation != nullptr, spec.task == TaskKind::Regression),
      keepBest_(stopper_.enabled() && options.earlyStopping.restoreBest),
      firstEpoch_(resume_ ? resume_->epoch + 1 : 1),
      firstStep_(resume_ ? resume_->step : 0),
      baseLr_(resume_ ? resume_->learningRate : double(spec.optimizer.lr)),
      haveBest_(keepBest_ && resume_ && !resume_->bestParameters.empty()) {
  if (resume_) {
    result_.history = resume_->history;
    // the tracker picks up where it was; without the best weights (restoreBest newly asked) it starts over
    if (!keepBest_ || !resume_->bestParameters.empty())
      for (const EpochStats& stats : resume_->history) stopper_.observe(stats);
  }
}

// The backend allocates (or refuses the run) before the host builds the initial weights.
void Driver::open(Backend& backend) {
  const SessionSetup setup{spec_,    shape_.plan,  data_,        validation_,
                           options_, shape_.batch, shape_.lrPlan, keepBest_, shape_.ranks};
  session_ = backend.openSession(setup);
  result_.device = session_->deviceName();
  session_->start(startState());
  order_.resize(size_t(data_.count));
  lastEvent_ = Clock::now();
}

StartState Driver::startState() const {
  StartState state;
  state.parameters = resume_ ? resume_->parameters : start_ ? *start_ : initialParameters(spec_, spec_.seed);
  if (resume_) {
    state.optimizerState = resume_->optimizerState;
    if (keepBest_) state.bestParameters = resume_->bestParameters;
    state.emaParameters = resume_->emaParameters;
  }
  state.globalStep = firstStep_;
  state.baseLearningRate = baseLr_;
  return state;
}

TrainResult Driver::run(Backend& backend) {
  open(backend);
  for (int epoch = firstEpoch_; epoch <= options_.epochs; ++epoch) {
    epochOrder(order_.data(), order_.size(), options_.shuffle, options_.seed, epoch);
    session_->beginEpoch(order_);
    reported_ = RunTotals{};
    epochStart_ = Clock::now();
    pausedSeconds_ = 0;
    if (std::optional<TrainResult> ended = runEpochSteps(epoch)) return std::move(*ended);
    // ---- epoch summary ----
    const RunTotals s = session_->totals();
    const double seconds = secondsSince(epochStart_) - pausedSeconds_;
    trainingSeconds_ += seconds;
    if (s.diverged) return finishDiverged(s);
    emitStep(s, epoch, trainingSeconds_);
    const EpochStats stats = epochStats(epoch, s, seconds);
    result_.history.push_back(stats);
    if (progress_) progress_->onEpoch(stats);
    // ---- early stopping, checkpoint ----
    if (stopper_.observe(stats) && keepBest_) {
      session_->keepBest();
      haveBest_ = true;
    }
    if (progress_ && progress_->wantsCheckpoints()) progress_->onCheckpoint(checkpoint(epoch, s));
    if (stopper_.shouldStop()) {
      result_.stoppedEarly = true;
      break;
    }
  }
  return finishCompleted();
}

// ---- the steps of an epoch ----

std::optional<TrainResult> Driver::runEpochSteps(int epoch) {
  for (int64_t step = 1; step <= stepsPerEpoch_;) {
    if (control_)
      if (std::optional<TrainResult> ended = obeyControl(epoch)) return ended;
    const int64_t ran = session_->runSteps(stepsPerEpoch_ - step + 1);
    if (ran <= 0) {
      const RunTotals s = session_->totals();
      if (!s.diverged) throw EngineError("training stopped without a reason (internal error)");
      return finishDiverged(s);
    }
    step += ran;
    // ---- throttled progress and divergence, read without stalling a device ----
    if (!session_->totalsPending() && secondsSince(lastEvent_) >= options_.progressIntervalSeconds &&
        step <= stepsPerEpoch_)
      session_->requestTotals();
    RunTotals s;
    if (session_->takeTotals(s)) {
      if (s.diverged) return finishDiverged(session_->totals());
      emitStep(s, epoch, trainingSeconds_ + secondsSince(epochStart_) - pausedSeconds_);
    }
  }
  return std::nullopt;
}

// Pause, cancel and a new learning rate, between steps.
std::optional<TrainResult> Driver::obeyControl(int epoch) {
  if (control_->pause.load()) {
    const auto pauseStart = Clock::now();
    session_->synchronize();
    while (control_->pause.load() && !control_->cancel.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    pausedSeconds_ += secondsSince(pauseStart);
  }
  if (control_->cancel.load()) {
    const RunTotals s = session_->totals();
    if (s.diverged) return finishDiverged(s);
    const int64_t done = s.globalStep - (epoch - 1) * stepsPerEpoch_;
    return finish(TrainStatus::Cancelled,
                  "training cancelled at epoch " + std::to_string(epoch) + ", step " + std::to_string(done + 1) +
                      " of " + std::to_string(stepsPerEpoch_) + "; kept the weights of the last completed step",
                  s.globalStep, WeightsKind::Average);
  }
  const float newLr = control_->newLearningRate.exchange(0.0f);
  if (newLr > 0) {
    baseLr_ = newLr;
    session_->setBaseLearningRate(baseLr_);
  }
  return std::nullopt;
}

// A step event for the steps since the last one (none when there are none).
void Driver::emitStep(const RunTotals& s, int epoch, double elapsed) {
  const int64_t steps = s.lossSteps - reported_.lossSteps;
  if (!progress_ || steps <= 0) return;
  const double since = secondsSince(lastEvent_);
  StepProgress sp;
  sp.epoch = epoch;
  sp.step = std::min<int64_t>(s.epochStep, stepsPerEpoch_);
  sp.stepsPerEpoch = stepsPerEpoch_;
  sp.globalStep = s.globalStep;
  sp.totalSteps = shape_.totalSteps;
  sp.loss = (s.batchLossSum - reported_.batchLossSum) / double(steps);
  sp.samplesPerSecond = since > 0 ? double(s.samples - reported_.samples) / since : 0;
  sp.etaSeconds = s.globalStep > firstStep_
                      ? double(shape_.totalSteps - s.globalStep) * elapsed / double(s.globalStep - firstStep_)
                      : 0;
  sp.learningRate = stepLearningRate(shape_.lrPlan, baseLr_, s.globalStep - 1);
  progress_->onStep(sp);
  reported_ = s;
  lastEvent_ = Clock::now();
}

// ---- the epoch's end ----

EpochStats Driver::epochStats(int epoch, const RunTotals& s, double seconds) {
  EpochStats stats;
  stats.epoch = epoch;
  stats.seconds = seconds;
  stats.trainLoss = s.sampleLossSum / double(s.samples);
  stats.trainAccuracy = double(s.correct) / double(s.samples);
  stats.learningRate = stepLearningRate(shape_.lrPlan, baseLr_, s.globalStep - 1);
  const bool regression = shape_.plan.regression();
  if (regression) {
    stats.hasRegression = true;
    stats.trainAccuracy = 0;
    stats.trainR2 = pooledR2(s.squaredErrorSum, shape_.trainTargetSst);
  }
  if (validation_) {
    const ValidationTotals v = session_->validate();
    stats.hasValidation = true;
    // the weighted mean with class weights; without, weightSum is the count
    stats.validationLoss = v.lossSum / v.weightSum;
    stats.validationAccuracy = regression ? 0.0 : double(v.correct) / double(validation_->count);
    if (regression) {
      if (v.outputs.size() != size_t(validation_->count) * size_t(validation_->targetWidth))
        throw EngineError("validation returned no outputs for the regression metrics (internal error)");
      const RegressionMetrics m = regressionMetrics(v.outputs.data(), validation_->targets, validation_->count,
                                                    validation_->targetWidth, options_.targetMean, options_.targetStd);
      stats.validationMae = m.mae;
      stats.validationRmse = m.rmse;
      stats.validationR2 = m.r2;
      stats.hasValidationMape = m.hasMape;
      stats.validationMape = m.mape;
    }
  }
  return stats;
}

TrainState Driver::checkpoint(int epoch, const RunTotals& s) {
  TrainState state;
  state.epoch = epoch;
  state.step = s.globalStep;
  state.seed = options_.seed;
  state.learningRate = baseLr_;
  state.parameters = session_->weights(WeightsKind::Current);
  state.optimizerState = session_->optimizerState();
  state.history = result_.history;
  if (haveBest_) state.bestParameters = session_->weights(WeightsKind::Best);
  if (options_.ema > 0) state.emaParameters = session_->weights(WeightsKind::Average);
  return state;
}

// ---- the result ----

TrainResult Driver::finish(TrainStatus status, std::string message, int64_t steps, WeightsKind weights) {
  result_.parameters = session_->weights(weights);
  result_.status = status;
  result_.message = std::move(message);
  result_.steps = steps;
  result_.seconds = secondsSince(runStart_);
  return std::move(result_);
}

// What a loss-scaled run did, for the user: a run of FP16 products (cuda/loss_scale.h)
void noteLossScaling(const RunTotals& s, TrainResult& result) {
  if (!s.lossScaling) return;
  result.notes.push_back("mixed precision took FP16 products with dynamic loss scaling (no BF16 on this GPU, or "
                         "NNSTUDIO_CUDA_MIXED=fp16): " + std::to_string(s.skippedSteps) + " of " +
                         std::to_string(s.globalStep) + " steps skipped for gradients that overflowed FP16; "
                         "the loss scale ended at 2^" + std::to_string(s.lossScaleLog2));
}

TrainResult Driver::finishDiverged(const RunTotals& s) {
  noteLossScaling(s, result_);
  const int64_t at = s.divergedAt - 1;  // 0-based global step
  const int epoch = int(at / stepsPerEpoch_) + 1;
  const int64_t step = at % stepsPerEpoch_ + 1;
  return finish(TrainStatus::Diverged,
                "training diverged at epoch " + std::to_string(epoch) + ", step " + std::to_string(step) +
                    ": the loss became " + lossWord(s.divergedNaN) +
                    "; kept the weights of the last step with a finite loss (try a lower learning rate)",
                at, WeightsKind::LastFinite);
}

TrainResult Driver::finishCompleted() {
  const RunTotals s = session_->totals();
  noteLossScaling(s, result_);
  result_.bestEpoch = stopper_.bestEpoch();
  std::string message = result_.stoppedEarly ? stopper_.message() : "";
  if (!haveBest_) return finish(TrainStatus::Completed, message, s.globalStep, WeightsKind::Average);
  result_.restoredBest = true;
  message += std::string(message.empty() ? "" : "; ") + "kept the weights of epoch " + std::to_string(result_.bestEpoch);
  return finish(TrainStatus::Completed, message, s.globalStep, WeightsKind::Best);
}

}  // namespace

TrainResult runTraining(Backend& backend, const ModelSpec& spec, const DatasetView& data, const DatasetView* validation,
                        const TrainOptions& options, ProgressSink* progress, TrainControl* control,
                        const std::vector<float>* start) {
  // how many GPUs first: a data-parallel epoch has fewer global steps, which the schedule and checks need
  std::string fewerDevices;
  int ranks = std::max(1, backend.dataParallelRanks(options, &fewerDevices));
  if (ranks > 1 && options.onlyWhereGpusPay) {
    const std::string why = severalGpusWouldNotPay(planNetwork(spec), data.count, options.batchSize, options.epochs, ranks);
    if (!why.empty()) ranks = 1, fewerDevices = "trained on GPU " + std::to_string(options.gpus.front()) + " only: " + why;
  }
  Driver driver(spec, data, validation, options, progress, control, start, ranks);
  TrainResult result = driver.run(backend);
  if (!fewerDevices.empty()) result.notes.insert(result.notes.begin(), fewerDevices);
  return result;
}

}  // namespace nnstudio
