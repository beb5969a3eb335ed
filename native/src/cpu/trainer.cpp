// The CPU training loop: per epoch shuffle (seeded by options.seed and the epoch), mini-batches (the
// last partial batch included), forward, loss, backward, optimizer step at the scheduled learning rate.
// Checks TrainControl every step, throttles step events, keeps the last weights with a finite loss for
// divergence; at each epoch end: early stopping and the TrainState for a checkpoint. A resumed run
// starts from a TrainState at the epoch after it, with every counter as it was.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "cpu/backend.h"
#include "cpu/network.h"
#include "spec/lr_schedule.h"
#include "spec/rng.h"
#include "train/checks.h"
#include "train/epoch_order.h"
#include "train/run_control.h"

namespace nnstudio::cpu {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string lossWord(double loss) { return std::isnan(loss) ? "NaN" : "infinite"; }

}  // namespace

TrainResult CpuBackend::train(const ModelSpec& spec, const DatasetView& data, const DatasetView* validation,
                              const TrainOptions& options, ProgressSink* progress, TrainControl* control,
                              const std::vector<float>* start) {
  const auto runStart = Clock::now();
  // ---- input checks, before touching any memory ----
  NetworkPlan plan = planNetwork(spec);
  const int classes = headClassCount(plan);
  if (options.batchSize <= 0) throw EngineError("batch size must be positive, got " + std::to_string(options.batchSize));
  if (options.epochs <= 0) throw EngineError("epochs must be positive, got " + std::to_string(options.epochs));
  if (options.threads < 0) throw EngineError("threads must be >= 0, got " + std::to_string(options.threads));
  checkDataset(plan, classes, data, "training data", true);
  if (validation) checkDataset(plan, classes, *validation, "validation data", true);
  if (start) checkParameters(plan, *start, "starting parameters");
  if (data.count > int64_t(0xFFFFFFFFu)) throw EngineError("training data: more than 2^32 samples");
  const int batch = int(std::min<int64_t>(options.batchSize, data.count));
  const int64_t stepsPerEpoch = (data.count + batch - 1) / batch;
  const int64_t totalSteps = stepsPerEpoch * options.epochs;
  const TrainState* resume = options.resume;
  if (resume) checkResumeState(*resume, spec, options, plan.parameterCount, stepsPerEpoch);
  const LrPlan lrPlan = makeLrPlan(options.lrSchedule, spec.optimizer.lr, stepsPerEpoch, totalSteps);
  EarlyStopTracker stopper(options.earlyStopping, validation != nullptr);
  const bool keepBest = stopper.enabled() && options.earlyStopping.restoreBest;

  const int threads = options.threads > 0 ? options.threads : threads_;
  FlushDenormals flush;  // this thread; the pool's workers flush too
  ThreadPool pool(threads);
  Network net(spec, batch, pool);
  const size_t P = plan.parameterCount;
  const int64_t featureSize = data.featureSize;

  TrainResult result;
  result.device = "cpu (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  result.parameters = resume ? resume->parameters : start ? *start : initialParameters(spec, spec.seed);
  std::vector<float>& params = result.parameters;
  std::vector<float> grads(P, 0.0f);
  std::vector<float> lastFinite = params;  // weights whose loss was finite, for divergence
  const bool adam = spec.optimizer.kind == OptimizerKind::Adam;
  std::vector<float> state = resume ? resume->optimizerState : std::vector<float>(optimizerStateSize(spec, P), 0.0f);
  double baseLr = resume ? resume->learningRate : double(spec.optimizer.lr);
  float lr = 0;  // of the latest step
  std::vector<float> bestParams;  // early stopping's best epoch (restoreBest)
  int firstEpoch = 1;
  int64_t globalStep = 0;
  if (resume) {
    firstEpoch = resume->epoch + 1;
    globalStep = resume->step;
    result.history = resume->history;
    // the tracker picks up where it was; without the best weights (restoreBest newly asked) it starts over
    if (!keepBest || !resume->bestParameters.empty())
      for (const EpochStats& stats : resume->history) stopper.observe(stats);
    bestParams = resume->bestParameters;
  }
  const int64_t firstStep = globalStep;
  std::vector<float> batchFeatures(size_t(batch) * size_t(featureSize));
  std::vector<int32_t> batchLabels(static_cast<size_t>(batch));
  std::vector<uint32_t> order(size_t(data.count));

  double trainingSeconds = 0;  // steps only: no validation, no pauses

  // ---- progress throttling ----
  auto lastEvent = Clock::now();
  double eventLossSum = 0;
  int64_t eventSteps = 0, eventSamples = 0;

  for (int epoch = firstEpoch; epoch <= options.epochs; ++epoch) {
    epochOrder(order.data(), order.size(), options.shuffle, options.seed, epoch);
    auto epochStart = Clock::now();
    double pausedSeconds = 0;
    double lossSum = 0;
    int64_t correct = 0, seen = 0;
    for (int64_t step = 1; step <= stepsPerEpoch; ++step) {
      // ---- control: cancel / pause ----
      if (control) {
        if (control->pause.load()) {
          auto pauseStart = Clock::now();
          while (control->pause.load() && !control->cancel.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
          pausedSeconds += secondsSince(pauseStart);
        }
        if (control->cancel.load()) {
          result.status = TrainStatus::Cancelled;
          result.message = "training cancelled at epoch " + std::to_string(epoch) + ", step " + std::to_string(step) +
                           " of " + std::to_string(stepsPerEpoch) + "; kept the weights of the last completed step";
          result.steps = globalStep;
          result.seconds = secondsSince(runStart);
          return result;
        }
        const float newLr = control->newLearningRate.exchange(0.0f);
        if (newLr > 0) baseLr = newLr;
      }
      // ---- batch ----
      const int64_t first = (step - 1) * batch;
      const int n = int(std::min<int64_t>(batch, data.count - first));
      const float* x;
      if (options.shuffle) {
        for (int i = 0; i < n; ++i) {
          const uint32_t row = order[size_t(first + i)];
          std::memcpy(batchFeatures.data() + int64_t(i) * featureSize, data.features + int64_t(row) * featureSize,
                      sizeof(float) * size_t(featureSize));
          batchLabels[size_t(i)] = data.labels[row];
        }
        x = batchFeatures.data();
      } else {
        x = data.features + first * featureSize;  // already contiguous
        std::memcpy(batchLabels.data(), data.labels + first, sizeof(int32_t) * size_t(n));
      }
      // ---- forward, loss ----
      net.forward(params.data(), x, n, true, mixSeed(options.seed, uint64_t(globalStep), 0xD0));
      const double loss = net.loss(batchLabels.data(), n, true, &correct);
      if (!std::isfinite(loss)) {
        result.status = TrainStatus::Diverged;
        result.message = "training diverged at epoch " + std::to_string(epoch) + ", step " + std::to_string(step) +
                         ": the loss became " + lossWord(loss) +
                         "; kept the weights of the last step with a finite loss (try a lower learning rate)";
        params = lastFinite;
        result.steps = globalStep;
        result.seconds = secondsSince(runStart);
        return result;
      }
      std::memcpy(lastFinite.data(), params.data(), sizeof(float) * P);
      // ---- backward, update ----
      net.backward(params.data(), grads.data(), n);
      lr = stepLearningRate(lrPlan, baseLr, globalStep);
      ++globalStep;
      if (adam)
        adam_step(&pool, params.data(), grads.data(), state.data(), state.data() + P, P, lr, spec.optimizer.beta1,
                  spec.optimizer.beta2, spec.optimizer.eps, globalStep);
      else
        sgd_step(&pool, params.data(), grads.data(), state.data(), P, lr, spec.optimizer.momentum);
      lossSum += loss * n;
      seen += n;
      result.steps = globalStep;

      // ---- step events, throttled ----
      eventLossSum += loss;
      ++eventSteps;
      eventSamples += n;
      if (progress) {
        const double sinceEvent = secondsSince(lastEvent);
        if (sinceEvent >= options.progressIntervalSeconds || step == stepsPerEpoch) {
          const double elapsed = trainingSeconds + secondsSince(epochStart) - pausedSeconds;
          StepProgress sp;
          sp.epoch = epoch;
          sp.step = step;
          sp.stepsPerEpoch = stepsPerEpoch;
          sp.globalStep = globalStep;
          sp.totalSteps = totalSteps;
          sp.loss = eventLossSum / double(eventSteps);
          sp.samplesPerSecond = sinceEvent > 0 ? double(eventSamples) / sinceEvent : 0;
          sp.etaSeconds = double(totalSteps - globalStep) * elapsed / double(globalStep - firstStep);
          sp.learningRate = lr;
          progress->onStep(sp);
          lastEvent = Clock::now();
          eventLossSum = 0;
          eventSteps = 0;
          eventSamples = 0;
        }
      }
    }
    // ---- epoch summary ----
    EpochStats stats;
    stats.epoch = epoch;
    stats.seconds = secondsSince(epochStart) - pausedSeconds;
    trainingSeconds += stats.seconds;
    stats.trainLoss = lossSum / double(seen);
    stats.trainAccuracy = double(correct) / double(seen);
    stats.learningRate = lr;
    if (validation) {
      double vLoss = 0;
      int64_t vCorrect = 0;
      for (int64_t s = 0; s < validation->count; s += batch) {
        const int n = int(std::min<int64_t>(batch, validation->count - s));
        net.forward(params.data(), validation->features + s * featureSize, n, false, 0);
        vLoss += net.loss(validation->labels + s, n, false, &vCorrect) * n;
      }
      stats.hasValidation = true;
      stats.validationLoss = vLoss / double(validation->count);
      stats.validationAccuracy = double(vCorrect) / double(validation->count);
    }
    result.history.push_back(stats);
    if (progress) progress->onEpoch(stats);
    // ---- early stopping, checkpoint ----
    if (stopper.observe(stats) && keepBest) bestParams = params;
    if (progress && progress->wantsCheckpoints()) {
      TrainState checkpoint;
      checkpoint.epoch = epoch;
      checkpoint.step = globalStep;
      checkpoint.seed = options.seed;
      checkpoint.learningRate = baseLr;
      checkpoint.parameters = params;
      checkpoint.optimizerState = state;
      checkpoint.history = result.history;
      if (keepBest) checkpoint.bestParameters = bestParams;
      progress->onCheckpoint(checkpoint);
    }
    if (stopper.shouldStop()) {
      result.stoppedEarly = true;
      result.message = stopper.message();
      break;
    }
  }
  result.status = TrainStatus::Completed;
  result.bestEpoch = stopper.bestEpoch();
  if (keepBest && !bestParams.empty()) {
    params = bestParams;
    result.restoredBest = true;
    if (!result.message.empty()) result.message += "; ";
    result.message += "kept the weights of epoch " + std::to_string(result.bestEpoch);
  }
  result.seconds = secondsSince(runStart);
  return result;
}

}  // namespace nnstudio::cpu
