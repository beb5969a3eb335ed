// Fused conv2d + bias + activation + max pool (cuda/conv2d_pool.cu): the conv's output is never stored,
// only the pool's output and argmax; the weight gradient is computed from the pool's output gradient.
#pragma once

#include "cuda/kernels.h"

namespace nnstudio::cuda {

// The pairs it implements and where it pays are the chooser's (kernel_choice.h: convPoolSupported,
// chooseConvPoolFusion); it runs them with the chooser's plans.
// pooled (N, F, PH, PW) = maxpool(act(conv(in, weight) + bias)); argmax (N, F, PH, PW) holds the index
// within the sample's (F, OH, OW) conv output of the window's first maximum (the CPU's rule), computed
// on the activated values. The conv output itself is never stored.
// windows (N, F, PH, PW), where given: each window's argmax as one byte, its row and column in the window (bits
// 0-1 the column, 2-3 the row) and whether the pooled value is positive (bit 7): for the thin weight gradient
// (chooseConvPoolWindowBytes), a quarter of the argmax's bytes, and with ReLU no read of pooled. argmax may then
// be null (not written).
void conv2d_maxpool_forward(cudaStream_t stream, float* pooled, int32_t* argmax, const float* in,
                            const float* weight, const float* bias, int N, const ConvGeometry& g,
                            const PoolGeometry& p, ActivationFn act, float alpha, uint8_t* windows = nullptr);
// dWeight (F,C,kh,kw), dBias (F) from the pool's output gradient dPooled (N,F,PH,PW): the conv's
// pre-activation gradient is dPooled * act'(pooled) at argmax and zero elsewhere (for overlapping
// windows, stride < size, several windows may share an argmax: their contributions add). Deterministic
// (no float atomics), workspace of conv2d_maxpool_weights_workspace(N, g, p) floats (any batch up to N).
size_t conv2d_maxpool_weights_workspace(int N, const ConvGeometry& g, const PoolGeometry& p);
// argmax is ignored (may be null) where `windows` (the forward's) is given, and pooled too where they are and act
// is ReLU
void conv2d_maxpool_backward_weights(cudaStream_t stream, float* dWeight, float* dBias, const float* dPooled,
                                     const float* pooled, const int32_t* argmax, const float* in, int N,
                                     const ConvGeometry& g, const PoolGeometry& p, ActivationFn act, float alpha,
                                     float* workspace, const uint8_t* windows = nullptr);

}  // namespace nnstudio::cuda
