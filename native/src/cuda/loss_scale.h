// Dynamic loss scaling for runs whose gradients pass through FP16 products (a mixed run on a GPU without
// BF16, or NNSTUDIO_CUDA_MIXED=fp16): FP16 holds magnitudes from 6e-8 to 65504, and a network's gradients
// often lie below that range. The loss kernel multiplies the output's gradient by 2^log2, so every gradient
// of the backward pass (each step of it is linear in that gradient) comes out scaled; the optimizer divides
// by the same power of two (exact) and skips the step when a check of the gradients finds one that is not
// finite (an FP16 operand beyond 65504 is infinite). The rule is PyTorch's GradScaler's with its defaults:
// start at 2^16, halve on overflow, double after 2000 steps without one. The state lives in StepState,
// on the device, so the captured graph of a step serves every step. Plain C++, tested on the CPU.
#pragma once

#include "spec/rng.h"  // NNSTUDIO_HOST_DEVICE

namespace nnstudio::cuda {

inline constexpr int kLossScaleStartLog2 = 16;      // GradScaler's init_scale 65536
inline constexpr int kLossScaleGrowthSteps = 2000;  // its growth_interval
inline constexpr int kLossScaleMinLog2 = -24;       // far below any useful scale; a floor against underflow to 0
inline constexpr int kLossScaleMaxLog2 = 60;        // scaled FP32 gradients stay far from FP32's 2^128

// After a step: on overflow the step was skipped and the scale halves; else one more good step, and after
// kLossScaleGrowthSteps of them the scale doubles.
NNSTUDIO_HOST_DEVICE inline void advanceLossScale(int& log2, int& goodSteps, long long& skippedSteps, bool overflow) {
  if (overflow) {
    if (log2 > kLossScaleMinLog2) --log2;
    goodSteps = 0;
    ++skippedSteps;
    return;
  }
  if (++goodSteps < kLossScaleGrowthSteps) return;
  goodSteps = 0;
  if (log2 < kLossScaleMaxLog2) ++log2;
}

}  // namespace nnstudio::cuda
