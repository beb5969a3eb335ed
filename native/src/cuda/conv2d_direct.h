// Direct convolution for layers with few channels (cuda/conv2d_direct.cu): forward and input gradient,
// stride 1. conv2d.cu's launchers try these first; the implicit GEMM takes every other shape.
#pragma once

#include <cuda_runtime.h>

#include "cuda/kernels.h"

namespace nnstudio::cuda {

// A forced launch shape (tests, --bench); 0 = the planner's choice.
struct ConvDirectShape {
  int ft = 0;      // output channels per thread (4 or 8)
  int px = 0;      // consecutive output pixels of a row per thread (1, 2 or 4; 1 or 2 when ft = 8)
  int splits = 0;  // threads per output, each summing every splits-th source channel (fixed-order reduction)
  int rows = 0;    // output rows per block
  int blocks = 0;  // the planner's block target when rows = 0
};

// Enqueue the direct kernel and return true when it takes this layer (stride 1, few channels: see the
// thresholds in conv2d_direct.cu) and the switch is on; false: nothing was enqueued. With `force` the
// thresholds and the switch are skipped (only the hard limits apply: stride 1, square kernels 2x2 / 3x3 /
// 5x5, shared memory).
bool conv2d_direct_forward(cudaStream_t stream,
                           float* out,           // (N, F, OH, OW)
                           const float* in,      // (N, C, H, W)
                           const float* weight,  // (F, C, kh, kw)
                           const float* bias,    // (F)
                           int N, const ConvGeometry& g, ActivationFn act, float alpha,
                           const ConvDirectShape* force = nullptr);
bool conv2d_direct_backward_input(cudaStream_t stream,
                                  float* dIn,           // (N, C, H, W)
                                  const float* dOut,    // (N, F, OH, OW)
                                  const float* weight,  // (F, C, kh, kw)
                                  const float* in,      // (N, C, H, W), read only when inAct != Linear
                                  int N, const ConvGeometry& g, ActivationFn inAct, float inAlpha,
                                  const ConvDirectShape* force = nullptr);

// The switch: NNSTUDIO_CONV_DIRECT=0 turns the direct path off (read once); tests may flip it.
bool& conv2d_direct_enabled();

}  // namespace nnstudio::cuda
