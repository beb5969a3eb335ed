// Run state that lives on the device, so that one captured CUDA graph serves every step: kernels read
// the step counters from here instead of from launch arguments, and the loss kernel flags divergence
// so that the optimizer stops updating without any host round-trip. The host reads it (asynchronously,
// into pinned memory) for throttled progress events and once per epoch, and hands it to the training
// driver as RunTotals (session.cu, train/session.h).
#pragma once

#include <cstdint>

namespace nnstudio::cuda {

struct StepState {
  long long epochStep = 0;     // batches done this epoch: the next batch starts at order[epochStep * batch]
  long long globalStep = 0;    // optimizer steps done; Adam's t for the next update is globalStep + 1
  int diverged = 0;            // 1 once a batch loss was not finite; later losses and updates are skipped
  int divergedNaN = 0;         // the loss was NaN (else infinite)
  long long divergedAt = 0;    // the 1-based global step whose loss was not finite
  double baseLr = 0;           // the base learning rate (0: the schedule's initial one); the host sets it
                               // between launches (TrainControl::setLearningRate), the optimizer reads it
  // FP16 loss scaling (loss_scale.h); all zero in a run without it, which is a scale of 2^0 = 1 (exact)
  int lossScaling = 0;         // 1: this run scales (the host sets it at the start)
  int lossScaleLog2 = 0;       // the loss kernel multiplies the output's gradient by 2^lossScaleLog2
  int scaleGoodSteps = 0;      // steps since the last overflow or growth of the scale
  int gradsOverflow = 0;       // the gradients' check found one not finite: this step is skipped
  long long skippedSteps = 0;  // steps skipped for overflow since the session started (Adam's t leaves them out)
  // running totals since the start of the epoch (zeroed with epochStep; the host takes differences
  // between step events). Kept contiguous, from sampleLossSum to blocksDone: the host zeroes them as one.
  double sampleLossSum = 0;    // sum over samples of each sample's loss
  long long correct = 0;       // right predictions
  long long samples = 0;
  double squaredErrorSum = 0;  // regression: sum of squared errors over every element
  double weightSum = 0;        // evaluation (loss_predict): the samples' class weights, summed (1 each without)
  double batchLossSum = 0;     // sum over steps of each batch's mean loss
  long long lossSteps = 0;
  unsigned int blocksDone = 0; // the optimizer's last-block counter (internal)
};

}  // namespace nnstudio::cuda
