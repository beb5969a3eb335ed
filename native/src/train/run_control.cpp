// Resume checks and early stopping (see run_control.h).
#include "train/run_control.h"

#include <cmath>
#include <cstdio>

namespace nnstudio {

namespace {
const char* monitorName(MonitorKind kind, bool regression) {
  switch (kind) {
    case MonitorKind::ValidationLoss: return "validation loss";
    case MonitorKind::ValidationAccuracy: return regression ? "validation R^2" : "validation accuracy";
    case MonitorKind::TrainLoss: return "training loss";
  }
  return "validation loss";
}
}  // namespace

size_t optimizerStateSize(const ModelSpec& spec, size_t parameterCount) {
  return spec.optimizer.kind == OptimizerKind::SGD ? parameterCount : 2 * parameterCount;
}

void checkResumeState(const TrainState& state, const ModelSpec& spec, const TrainOptions& options,
                      size_t parameterCount, int64_t stepsPerEpoch) {
  auto fail = [](const std::string& message) { throw EngineError("resume state: " + message); };
  const std::string P = std::to_string(parameterCount);
  if (state.parameters.size() != parameterCount)
    fail(std::to_string(state.parameters.size()) + " parameters but the model has " + P);
  const size_t moments = optimizerStateSize(spec, parameterCount);
  if (state.optimizerState.size() != moments)
    fail(std::to_string(state.optimizerState.size()) + " optimizer values but " +
         (spec.optimizer.kind == OptimizerKind::SGD ? "SGD" : spec.optimizer.kind == OptimizerKind::Adam ? "Adam" : "AdamW") + " needs " + std::to_string(moments));
  if (!state.bestParameters.empty() && state.bestParameters.size() != parameterCount)
    fail(std::to_string(state.bestParameters.size()) + " best-epoch parameters but the model has " + P);
  if (options.ema > 0 && state.emaParameters.size() != parameterCount)
    fail(std::to_string(state.emaParameters.size()) + " averaged (EMA) parameters but the model has " + P +
         (state.emaParameters.empty() ? " (was it written by a run without ema?)" : ""));
  if (options.ema <= 0 && !state.emaParameters.empty())
    fail("it holds a weight average (EMA) but this run has no ema: resume with the same ema");
  if (state.epoch < 0) fail("negative epoch count");
  if (int64_t(state.history.size()) != state.epoch)
    fail(std::to_string(state.history.size()) + " epochs of history for " + std::to_string(state.epoch) + " epochs");
  if (state.step != int64_t(state.epoch) * stepsPerEpoch)
    fail(std::to_string(state.step) + " steps after " + std::to_string(state.epoch) + " epochs, but this data and batch size make " +
         std::to_string(stepsPerEpoch) + " steps per epoch (was it written for other data, another batch size or another number of GPUs?)");
  if (state.seed != options.seed)
    fail("written with seed " + std::to_string(state.seed) + ", resumed with seed " + std::to_string(options.seed));
  if (!(std::isfinite(state.learningRate) && state.learningRate > 0)) fail("the learning rate must be positive");
  if (state.epoch >= options.epochs)
    fail("already " + std::to_string(state.epoch) + " epochs trained of the " + std::to_string(options.epochs) +
         " asked; ask for more epochs");
}

EarlyStopTracker::EarlyStopTracker(const EarlyStopping& config, bool hasValidation, bool regression)
    : config_(config), regression_(regression) {
  if (!config.enabled) return;
  if (config.patience < 1) throw EngineError("early stopping: patience must be at least 1 epoch");
  if (!(std::isfinite(config.minDelta) && config.minDelta >= 0)) throw EngineError("early stopping: minDelta must be >= 0");
  if (config.monitor != MonitorKind::TrainLoss && !hasValidation)
    throw EngineError(std::string("early stopping monitors the ") + monitorName(config.monitor, regression) +
                      " but the run has no validation data");
}

double EarlyStopTracker::value(const EpochStats& stats) const {
  switch (config_.monitor) {
    case MonitorKind::ValidationLoss: return stats.validationLoss;
    case MonitorKind::ValidationAccuracy: return regression_ ? stats.validationR2 : stats.validationAccuracy;
    case MonitorKind::TrainLoss: return stats.trainLoss;
  }
  return stats.validationLoss;
}

bool EarlyStopTracker::observe(const EpochStats& stats) {
  if (!config_.enabled) return false;
  const double v = value(stats);
  const bool higherIsBetter = config_.monitor == MonitorKind::ValidationAccuracy;
  const bool improved = bestEpoch_ == 0 || (higherIsBetter ? v > best_ + config_.minDelta : v < best_ - config_.minDelta);
  if (improved && std::isfinite(v)) {
    best_ = v;
    bestEpoch_ = stats.epoch;
    waited_ = 0;
    return true;
  }
  ++waited_;
  return false;
}

std::string EarlyStopTracker::message() const {
  char best[64];
  std::snprintf(best, sizeof best, "%.6g", best_);
  return std::string("early stopping: the ") + monitorName(config_.monitor, regression_) + " has not improved for " +
         std::to_string(waited_) + (waited_ == 1 ? " epoch" : " epochs") + " (best " + best + " at epoch " +
         std::to_string(bestEpoch_) + ")";
}

}  // namespace nnstudio
