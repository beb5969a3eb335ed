// What the training driver (train/driver.cpp) checks and tracks besides the loop: whether a resume
// state fits the run, the optimizer state's size, and early stopping's bookkeeping. Host-only.
#pragma once

#include <string>
#include <vector>

#include "nnstudio/engine.h"

namespace nnstudio {

// Throws EngineError ("resume state: ...") when `state` cannot continue this run: wrong sizes, another
// seed, a step count that another data size or batch size would give, or no epochs left.
void checkResumeState(const TrainState& state, const ModelSpec& spec, const TrainOptions& options,
                      size_t parameterCount, int64_t stepsPerEpoch);

// The size of the optimizer's state for P parameters: SGD's velocity or Adam's m and v.
size_t optimizerStateSize(const ModelSpec& spec, size_t parameterCount);

class EarlyStopTracker {
 public:
  // Throws EngineError when the monitored metric needs validation data the run has not got. In a
  // regression, MonitorKind::ValidationAccuracy monitors the validation R^2 (higher is better).
  EarlyStopTracker(const EarlyStopping& config, bool hasValidation, bool regression = false);
  bool enabled() const { return config_.enabled; }
  // Takes in an epoch's stats; true when it is the best so far (its weights are the ones to keep).
  bool observe(const EpochStats& stats);
  // Patience ran out.
  bool shouldStop() const { return config_.enabled && waited_ >= config_.patience; }
  int bestEpoch() const { return bestEpoch_; }
  // "early stopping: validation loss has not improved by more than 0 for 3 epochs (best 0.1234 at epoch 4)"
  std::string message() const;

 private:
  double value(const EpochStats& stats) const;
  EarlyStopping config_;
  bool regression_ = false;
  double best_ = 0;
  int bestEpoch_ = 0;
  int waited_ = 0;
};

}  // namespace nnstudio
