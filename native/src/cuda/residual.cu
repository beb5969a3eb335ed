// A residual block's sum on the GPU: y = a + b elementwise (forward: the block's layers' output plus the
// shortcut; backward: the gradient through the layers plus the shortcut's, at the block's input). The
// projection shortcut itself runs through conv2d.cu's kernels (a 1x1 convolution with stride).
#include <algorithm>
#include <cstdint>

#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 256;

// grid-stride, 4 values per thread when all three pointers are 16-byte aligned (a batch's input may start
// anywhere in the resident data: then one value per thread)
__global__ void addKernel(float* y, const float* a, const float* b, int64_t n, bool vector) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t n4 = vector ? n / 4 : 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 u = reinterpret_cast<const float4*>(a)[i];
    const float4 v = reinterpret_cast<const float4*>(b)[i];
    reinterpret_cast<float4*>(y)[i] = make_float4(u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w);
  }
  for (int64_t i = n4 * 4 + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = a[i] + b[i];
}

}  // namespace

void residual_add(cudaStream_t stream, float* y, const float* a, const float* b, int64_t n) {
  if (n <= 0) return;
  const int64_t blocks = std::min<int64_t>((n / 4 + kThreads - 1) / kThreads + 1, 65535);
  const bool vector = ((reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15) == 0;
  launchKernel("residual add", addKernel, unsigned(blocks), kThreads, 0, stream, y, a, b, n, vector);
}

}  // namespace nnstudio::cuda
