// Direct convolution for layers with few channels (cuda/conv2d_direct.cu): forward and input gradient,
// stride 1, square 2x2 / 3x3 / 5x5 kernels. conv2d.cu's launchers run it where the chooser
// (kernel_choice.h, chooseConvPass) picks it, with the chooser's launch plan.
#pragma once

#include <cuda_runtime.h>

#include "cuda/kernel_choice.h"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

void conv2d_direct_forward(cudaStream_t stream, const ConvDirectPlan& plan,
                           float* out,           // (N, F, OH, OW)
                           const float* in,      // (N, C, H, W)
                           const float* weight,  // (F, C, kh, kw)
                           const float* bias,    // (F)
                           int N, const ConvGeometry& g, ActivationFn act, float alpha);
void conv2d_direct_backward_input(cudaStream_t stream, const ConvDirectPlan& plan,
                                  float* dIn,           // (N, C, H, W)
                                  const float* dOut,    // (N, F, OH, OW)
                                  const float* weight,  // (F, C, kh, kw)
                                  const float* in,      // (N, C, H, W), read only when inAct != Linear
                                  int N, const ConvGeometry& g, ActivationFn inAct, float inAlpha);

}  // namespace nnstudio::cuda
