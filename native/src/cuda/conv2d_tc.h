// Tensor-core (TF32 mma.sync, sm_80+) implicit GEMM for conv2d's forward and input-gradient passes
// (cuda/conv2d_tc.cu). conv2d.cu's launchers ask it first; it enqueues the pass and returns true where
// it is on and pays, otherwise false and the SIMT kernel runs. FP32-level accuracy by default (3xTF32).
#pragma once

#include "cuda/kernels.h"

namespace nnstudio::cuda {

// NNSTUDIO_CONV_TC (read once): unset = where it pays, "0" = never, "1" = wherever the device can
// (sm_80+, every shape: tests), "tf32" = where it pays, but 1xTF32 (plain TF32 products: 1.4-2x
// over the CPU-parity tolerance on keras conv2; for comparisons only, never the default).
enum class ConvTcMode : int { Env = -1, Off = 0, Auto = 1, Always = 2, Fast = 3 };
// Tests and benchmarks: override the environment's mode (Env = back to it); `variant` > 0 picks a tile
// shape instead of the choice by shape (conv2d_tc.cu, dispatchSplit).
void conv2d_tc_set_mode(ConvTcMode mode, int variant = 0);

// out = act(conv(in, weight) + bias), as conv2d_forward. True when enqueued here.
bool conv2d_tc_forward(cudaStream_t stream, float* out, const float* in, const float* weight, const float* bias,
                       int N, const ConvGeometry& g, ActivationFn act, float alpha);
// dIn = conv_transpose(dOut, weight) * inAct'(in), as conv2d_backward_input. True when enqueued here.
bool conv2d_tc_backward_input(cudaStream_t stream, float* dIn, const float* dOut, const float* weight,
                              const float* in, int N, const ConvGeometry& g, ActivationFn inAct, float inAlpha);

}  // namespace nnstudio::cuda
