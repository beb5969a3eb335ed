// Tensor-core (TF32 or BF16 mma.sync, sm_80+) implicit GEMM for conv2d's forward and input-gradient passes
// (cuda/conv2d_tc.cu). conv2d.cu's launchers run it where the chooser (kernel_choice.h, chooseConvPass)
// picks it, with the chooser's tile. FP32-level accuracy with TcMath::Tf32x3; plain TF32 or BF16 products
// otherwise (a run's Precision, or NNSTUDIO_CONV_TC=tf32|bf16: over the CPU-parity tolerance, compared looser).
#pragma once

#include "cuda/kernel_choice.h"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

// out = act(conv(in, weight) + bias), as conv2d_forward.
void conv2d_tc_forward(cudaStream_t stream, const ConvTcTile& tile, TcMath math, float* out, const float* in,
                       const float* weight, const float* bias, int N, const ConvGeometry& g, ActivationFn act,
                       float alpha);
// dIn = conv_transpose(dOut, weight) * inAct'(in), as conv2d_backward_input.
void conv2d_tc_backward_input(cudaStream_t stream, const ConvTcTile& tile, TcMath math, float* dIn, const float* dOut,
                              const float* weight, const float* in, int N, const ConvGeometry& g, ActivationFn inAct,
                              float inAlpha);

struct ConvWgradArgs;  // conv_gemm.cuh

// dWeight and dBias (with more than one chunk, the chunks' partial sums in a.partial) by the plan's tile, as
// conv2d.cu's SIMT weight gradient; conv2d.cu runs the chunk reduction after it.
void conv2d_tc_backward_weights(cudaStream_t stream, const ConvWgradPlan& plan, const ConvWgradArgs& a);

}  // namespace nnstudio::cuda
