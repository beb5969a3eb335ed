// Standalone activation layers (an activation after a dense or conv2d layer is fused into that layer's
// epilogue instead): elementwise forward/backward, and softmax along rows, one warp per row.
#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void elementwiseForward(float* y, const float* x, int64_t n, ActivationFn fn, float alpha) {
  startAfterPreviousKernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = activate(x[i], fn, alpha);
}

__global__ void geluForward(float* y, const float* x, int64_t n) {
  startAfterPreviousKernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = geluValue(x[i]);
}

__global__ void elementwiseBackward(float* dx, const float* dy, const float* y, int64_t n, ActivationFn fn,
                                    float alpha) {
  startAfterPreviousKernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = gateGradient(dy[i], y[i], fn, alpha);
}

__global__ void geluBackward(float* dx, const float* dy, const float* x, int64_t n) {
  startAfterPreviousKernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = dy[i] * geluSlope(x[i]);
}

__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ double warpSum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// one warp per row
__global__ void softmaxForward(float* y, const float* x, int64_t rows, int64_t width) {
  startAfterPreviousKernel();
  const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* xr = x + row * width;
  float* yr = y + row * width;
  float m = -INFINITY;
  for (int64_t j = lane; j < width; j += 32) m = fmaxf(m, xr[j]);
  m = warpMax(m);
  double sum = 0;
  for (int64_t j = lane; j < width; j += 32) {
    const float e = expf(xr[j] - m);
    yr[j] = e;
    sum += e;
  }
  const float inv = float(1.0 / warpSum(sum));
  __syncwarp();
  for (int64_t j = lane; j < width; j += 32) yr[j] *= inv;
}

__global__ void softmaxBackward(float* dx, const float* dy, const float* y, int64_t rows, int64_t width) {
  startAfterPreviousKernel();
  const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* yr = y + row * width;
  const float* dyr = dy + row * width;
  float* dxr = dx + row * width;
  double dot = 0;
  for (int64_t j = lane; j < width; j += 32) dot += double(dyr[j]) * yr[j];
  const float d = float(warpSum(dot));
  __syncwarp();  // dx may alias dy: every lane has read its dy before anyone writes
  for (int64_t j = lane; j < width; j += 32) dxr[j] = yr[j] * (dyr[j] - d);
}

unsigned gridFor(int64_t n) { return unsigned(std::min<int64_t>(blocksFor(n, kThreads), 65535)); }

}  // namespace

void activation_forward(cudaStream_t stream, float* y, const float* x, int64_t rows, int64_t width, ActivationFn fn,
                        float alpha) {
  const int64_t n = rows * width;
  if (n == 0) return;
  if (fn == ActivationFn::Softmax) {
    launchKernel("softmaxForward", softmaxForward, blocksFor(rows, kThreads / 32), kThreads, 0, stream,
                 y, x, rows, width);
    checkLaunch("softmax forward");
  } else if (fn == ActivationFn::Linear && y == x) {
    return;
  } else if (fn == ActivationFn::GELU) {
    launchKernel("geluForward", geluForward, gridFor(n), kThreads, 0, stream, y, x, n);
    checkLaunch("gelu");
  } else {
    launchKernel("elementwiseForward", elementwiseForward, gridFor(n), kThreads, 0, stream, y, x, n, fn, alpha);
    checkLaunch("activation forward");
  }
}

void activation_backward(cudaStream_t stream, float* dx, const float* dy, const float* y, int64_t rows, int64_t width,
                         ActivationFn fn, float alpha) {
  const int64_t n = rows * width;
  if (n == 0) return;
  if (fn == ActivationFn::Softmax) {
    launchKernel("softmaxBackward", softmaxBackward, blocksFor(rows, kThreads / 32), kThreads, 0, stream,
                 dx, dy, y, rows, width);
    checkLaunch("softmax backward");
  } else if (fn == ActivationFn::Linear && dx == dy) {
    return;
  } else if (fn == ActivationFn::GELU) {
    throw EngineError("internal error: gelu's backward needs its input (gelu_backward)");
  } else {
    launchKernel("elementwiseBackward", elementwiseBackward, gridFor(n), kThreads, 0, stream, dx, dy, y, n, fn, alpha);
    checkLaunch("activation backward");
  }
}

void gelu_backward(cudaStream_t stream, float* dx, const float* dy, const float* x, int64_t n) {
  if (n == 0) return;
  launchKernel("geluBackward", geluBackward, gridFor(n), kThreads, 0, stream, dx, dy, x, n);
  checkLaunch("gelu backward");
}

}  // namespace nnstudio::cuda
