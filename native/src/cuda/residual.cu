// A residual block's sum on the GPU: y = f(a + b) elementwise (forward: the block's layers' output plus the
// shortcut, f an elementwise activation layer that follows the block or the identity; backward: the
// gradient through the layers plus the shortcut's, at the block's input), and the backward of such an f
// written where the block's two branches read it. The projection shortcut itself runs through conv2d.cu's
// kernels (a 1x1 convolution with stride).
#include <algorithm>
#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float4 activate4(float4 v, ActivationFn fn, float alpha) {
  return make_float4(activate(v.x, fn, alpha), activate(v.y, fn, alpha), activate(v.z, fn, alpha),
                     activate(v.w, fn, alpha));
}

// grid-stride over n values: onFour(k) for values 4k..4k+3 when `vector` (every pointer the kernel reads or
// writes 16-byte aligned; a batch's input may start anywhere in the resident data), then onOne(i) for the rest
template <class Four, class One>
__device__ __forceinline__ void gridStride4(int64_t n, bool vector, Four onFour, One onOne) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x, first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t n4 = vector ? n / 4 : 0;
  for (int64_t k = first; k < n4; k += stride) onFour(k);
  for (int64_t i = n4 * 4 + first; i < n; i += stride) onOne(i);
}

__global__ void addKernel(float* y, const float* a, const float* b, int64_t n, bool vector, ActivationFn fn,
                          float alpha) {
  startAfterPreviousKernel();
  gridStride4(
      n, vector,
      [&](int64_t k) {
        const float4 u = reinterpret_cast<const float4*>(a)[k], v = reinterpret_cast<const float4*>(b)[k];
        reinterpret_cast<float4*>(y)[k] = activate4(make_float4(u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w), fn, alpha);
      },
      [&](int64_t i) { y[i] = activate(a[i] + b[i], fn, alpha); });
}

// g = f'(y) dy into first and second (either may be null)
__global__ void gateKernel(float* first, float* second, const float* dy, const float* y, int64_t n, bool vector,
                           ActivationFn fn, float alpha) {
  startAfterPreviousKernel();
  gridStride4(
      n, vector,
      [&](int64_t k) {
        const float4 d = reinterpret_cast<const float4*>(dy)[k], v = reinterpret_cast<const float4*>(y)[k];
        const float4 g = make_float4(gateGradient(d.x, v.x, fn, alpha), gateGradient(d.y, v.y, fn, alpha),
                                     gateGradient(d.z, v.z, fn, alpha), gateGradient(d.w, v.w, fn, alpha));
        if (first) reinterpret_cast<float4*>(first)[k] = g;
        if (second) reinterpret_cast<float4*>(second)[k] = g;
      },
      [&](int64_t i) {
        const float g = gateGradient(dy[i], y[i], fn, alpha);
        if (first) first[i] = g;
        if (second) second[i] = g;
      });
}

unsigned gridFor(int64_t n) { return unsigned(std::min<int64_t>((n / 4 + kThreads - 1) / kThreads + 1, 65535)); }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

void residual_add(cudaStream_t stream, float* y, const float* a, const float* b, int64_t n, ActivationFn fn,
                  float alpha) {
  if (n <= 0) return;
  const bool vector = aligned16(y) && aligned16(a) && aligned16(b);
  launchKernel("residual add", addKernel, gridFor(n), kThreads, 0, stream, y, a, b, n, vector, fn, alpha);
}

void residual_activation_backward(cudaStream_t stream, float* first, float* second, const float* dy, const float* y,
                                  int64_t n, ActivationFn fn, float alpha) {
  if (n <= 0 || (!first && !second)) return;
  const bool vector = aligned16(first) && aligned16(second) && aligned16(dy) && aligned16(y);
  launchKernel("residual activation backward", gateKernel, gridFor(n), kThreads, 0, stream, first, second, dy, y, n,
               vector, fn, alpha);
}

}  // namespace nnstudio::cuda
