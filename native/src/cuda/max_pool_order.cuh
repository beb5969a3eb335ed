// The max pool's order of a window's values, the same in every kernel that pools (pool.cu, conv2d_pool.cu, the
// fused batchnorm + pool of batchnorm_math.cuh): the window is scanned row-major and a value replaces the best so
// far when it is strictly greater, or NaN (a NaN wins, as PyTorch's max pool propagates it). Ties keep the
// first, so every kernel finds the CPU's argmax.
#pragma once

namespace nnstudio::cuda {

__device__ __forceinline__ bool replacesMax(float v, float best) { return v > best || v != v; }

}  // namespace nnstudio::cuda
