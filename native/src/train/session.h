// The engine seam: what a backend provides for one training run on one device. The driver
// (train/driver.cpp) owns the loop for every backend: checks, epoch order, pause/cancel/learning rate,
// progress, divergence, validation, early stopping, checkpoints and the result. A session owns the
// run's state on its device (network, weights, gradients, optimizer state, the divergence backup, the
// best epoch's weights) and runs steps from an order. Backend::openSession creates one once the inputs
// are checked; it allocates everything the run needs, or refuses the run (the GPU's memory check), before
// the host builds the initial weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnstudio/engine.h"
#include "spec/lr_schedule.h"
#include "spec/model.h"

namespace nnstudio {

// A checked run, as a backend needs it to open a session. The references outlive the session.
struct SessionSetup {
  const ModelSpec& spec;
  const NetworkPlan& plan;
  const DatasetView& data;
  const DatasetView* validation;  // null: none
  const TrainOptions& options;
  int batch;                      // the batch size, at most data.count
  const LrPlan& lrPlan;
  bool keepBest;                  // early stopping keeps the best epoch's weights (restoreBest)
  int ranks = 1;                  // devices training data-parallel (Backend::dataParallelRanks)
};

// The state a run starts from: initial weights, `start`, or a resumed TrainState.
struct StartState {
  std::vector<float> parameters;      // (P)
  std::vector<float> optimizerState;  // optimizerStateSize floats; empty: zeros
  std::vector<float> bestParameters;  // (P) when keepBest and a resumed state has them; else empty
  std::vector<float> emaParameters;   // (P) a resumed weight average (options.ema > 0); empty: the parameters
  int64_t globalStep = 0;             // optimizer steps already done
  double baseLearningRate = 0;
};

// The counters the driver reads: globalStep over the run, the others since the epoch began. After a
// non-finite batch loss the session flags divergence and updates nothing more (weights nor totals).
struct RunTotals {
  int64_t globalStep = 0;    // optimizer steps done (Adam's t of the last update)
  int64_t epochStep = 0;     // batches done this epoch
  double sampleLossSum = 0;  // sum over samples of each sample's loss (each batch's mean times its size)
  int64_t correct = 0;       // right predictions
  int64_t samples = 0;
  double squaredErrorSum = 0;  // regression: sum of (output - target)^2 over every element, normalised units
  double batchLossSum = 0;   // sum over steps of each batch's mean loss
  int64_t lossSteps = 0;     // steps in batchLossSum
  bool diverged = false;
  bool divergedNaN = false;  // the loss was NaN (else infinite)
  int64_t divergedAt = 0;    // the 1-based global step whose loss was not finite
  // CUDA runs with FP16 products (cuda/loss_scale.h): the loss scale 2^lossScaleLog2 now, and the steps
  // skipped for gradients that overflowed it
  bool lossScaling = false;
  int lossScaleLog2 = 0;
  int64_t skippedSteps = 0;
};

struct ValidationTotals {
  double lossSum = 0;        // sum over samples of each sample's loss, times its class weight with class weights
  double weightSum = 0;      // sum over samples of their class weights (the count without class weights)
  int64_t correct = 0;
  std::vector<float> outputs;  // regression: the head's outputs (count, width), for the metrics; else empty
};

enum class WeightsKind {
  Current,     // as of the last step run
  Best,        // the best epoch's (keepBest)
  LastFinite,  // the last weights whose loss was finite (after divergence)
  Average,     // the weight average (options.ema > 0), else Current
};

// One run on one device. Every call comes from the training thread, in the driver's order: start, then
// per epoch beginEpoch and runSteps until the epoch's steps are done, then totals() and the epoch's end.
class TrainingSession {
 public:
  virtual ~TrainingSession() = default;
  virtual std::string deviceName() const = 0;  // TrainResult::device: "cpu (2 threads)", the GPU's name

  virtual void start(StartState state) = 0;
  // A new epoch over `order` (data.count indices; valid and unchanged until the epoch's totals() are
  // read): zeroes the epoch's counters.
  virtual void beginEpoch(const std::vector<uint32_t>& order) = 0;
  // Runs (or queues) the next steps of the epoch, at most maxSteps (>= 1); returns how many. 0: the
  // session has halted because the run diverged, which totals() shows. A device may queue steps ahead of
  // what it has run and return before they finish; it never returns 0.
  virtual int64_t runSteps(int64_t maxSteps) = 0;

  // Throttled progress without waiting: requestTotals() asks for the totals as of the steps queued so far;
  // takeTotals() hands them over once they have arrived (at once on the CPU).
  virtual void requestTotals() = 0;
  virtual bool totalsPending() const = 0;
  virtual bool takeTotals(RunTotals& totals) = 0;
  // Waits for every queued step and returns the totals; a pending request is dropped.
  virtual RunTotals totals() = 0;
  virtual void synchronize() = 0;  // waits for every queued step (before pausing)

  // The base learning rate from the next step queued on (the schedule multiplies it).
  virtual void setBaseLearningRate(double lr) = 0;
  // Loss and right predictions over the validation set with the weights the run evaluates (training off):
  // the weight average with options.ema > 0, else the current weights.
  virtual ValidationTotals validate() = 0;
  virtual void keepBest() = 0;  // the evaluated weights (as validate) become the best epoch's
  virtual std::vector<float> weights(WeightsKind which) = 0;  // (P)
  virtual std::vector<float> optimizerState() = 0;            // SGD: velocity (P); Adam: m (P) then v (P)
};

}  // namespace nnstudio
