// When several GPUs pay (issue 17): a data-parallel run starts slower (NCCL, one session per GPU) and then
// runs each epoch faster; a short run loses more at its start than its epochs gain. The rule and its
// measurements: docs/ARCHITECTURE.md "When more GPUs pay".
#pragma once

#include <cstdint>
#include <string>

#include "spec/model.h"

namespace nnstudio {

// An estimate of a run's training seconds on one GPU, low for every preset but keras_cnn: its steps, each a
// fixed cost plus its forward multiply-adds at a rate the other presets stayed below on an H200.
double oneGpuSecondsEstimate(const NetworkPlan& plan, int64_t samples, int batch, int epochs);

// Empty where `ranks` GPUs pay for this run; else why one GPU trains it (for TrainResult::notes).
std::string severalGpusWouldNotPay(const NetworkPlan& plan, int64_t samples, int batch, int epochs, int ranks);

}  // namespace nnstudio
