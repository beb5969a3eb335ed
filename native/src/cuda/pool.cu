// Max and average pooling, floor mode, stride possibly smaller than the window (overlap), as
// cpu/pool.cpp. Forward: one thread per output. Backward: one thread per input pixel gathering from
// the windows that cover it (no atomics, deterministic, every dIn element written once), with the
// activation gate of the layer before fused in (see kernels.h).
#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void maxpoolForward(float* out, int32_t* argmax, const float* in, int64_t total, PoolGeometry g) {
  startAfterPreviousKernel();
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int ox = int(i % g.OW);
  const int oy = int((i / g.OW) % g.OH);
  const int c = int((i / (int64_t(g.OW) * g.OH)) % g.C);
  const int64_t n = i / (int64_t(g.OW) * g.OH * g.C);
  const float* sample = in + n * int64_t(g.C) * g.H * g.W;
  const int y0 = oy * g.stride, x0 = ox * g.stride;
  int32_t bestIndex = (c * g.H + y0) * g.W + x0;
  float best = sample[bestIndex];
  // row-major scan with a strict '>' keeps the first maximum; a NaN wins (the CPU's rule)
  for (int ky = 0; ky < g.size; ++ky)
    for (int kx = 0; kx < g.size; ++kx) {
      const int32_t idx = (c * g.H + y0 + ky) * g.W + x0 + kx;
      const float v = sample[idx];
      if ((ky | kx) != 0 && (v > best || v != v)) {
        best = v;
        bestIndex = idx;
      }
    }
  out[i] = best;
  argmax[i] = bestIndex;
}

// range of window indices o with o*stride <= p < o*stride + size, clipped to [0, count)
__device__ __forceinline__ void coveringWindows(int p, int size, int stride, int count, int& first, int& last) {
  first = p < size ? 0 : (p - size) / stride + 1;
  last = min(p / stride, count - 1);
}

__global__ void maxpoolBackward(float* dIn, const float* dOut, const int32_t* argmax, const float* in, int64_t total,
                                PoolGeometry g, ActivationFn inAct, float inAlpha) {
  startAfterPreviousKernel();
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t inSize = int64_t(g.C) * g.H * g.W;
  const int32_t local = int32_t(i % inSize);  // index within the sample, as argmax stores it
  const int64_t n = i / inSize;
  const int x = local % g.W, y = (local / g.W) % g.H, c = local / (g.W * g.H);
  int oy0, oy1, ox0, ox1;
  coveringWindows(y, g.size, g.stride, g.OH, oy0, oy1);
  coveringWindows(x, g.size, g.stride, g.OW, ox0, ox1);
  const int64_t base = (n * g.C + c) * int64_t(g.OH) * g.OW;
  float sum = 0.0f;
  for (int oy = oy0; oy <= oy1; ++oy)
    for (int ox = ox0; ox <= ox1; ++ox) {
      const int64_t o = base + int64_t(oy) * g.OW + ox;
      if (argmax[o] == local) sum += dOut[o];
    }
  dIn[i] = inAct == ActivationFn::Linear ? sum : gateGradient(sum, in[i], inAct, inAlpha);
}

__global__ void maxpoolBackwardFromOutput(float* dIn, const float* dOut, const int32_t* argmax, const float* pooled,
                                          int64_t total, PoolGeometry g, ActivationFn act, float alpha) {
  startAfterPreviousKernel();
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t inSize = int64_t(g.C) * g.H * g.W;
  const int32_t local = int32_t(i % inSize);
  const int64_t n = i / inSize;
  const int x = local % g.W, y = (local / g.W) % g.H, c = local / (g.W * g.H);
  int oy0, oy1, ox0, ox1;
  coveringWindows(y, g.size, g.stride, g.OH, oy0, oy1);
  coveringWindows(x, g.size, g.stride, g.OW, ox0, ox1);
  const int64_t base = (n * g.C + c) * int64_t(g.OH) * g.OW;
  float sum = 0.0f, gate = 0.0f;
  for (int oy = oy0; oy <= oy1; ++oy)
    for (int ox = ox0; ox <= ox1; ++ox) {
      const int64_t o = base + int64_t(oy) * g.OW + ox;
      if (argmax[o] == local) {
        sum += dOut[o];
        gate = pooled[o];  // the input's activated value, the same for every window it wins
      }
    }
  dIn[i] = act == ActivationFn::Linear ? sum : gateGradient(sum, gate, act, alpha);
}

__global__ void avgpoolForward(float* out, const float* in, int64_t total, PoolGeometry g) {
  startAfterPreviousKernel();
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int ox = int(i % g.OW);
  const int oy = int((i / g.OW) % g.OH);
  const int64_t plane = i / (int64_t(g.OW) * g.OH);  // n * C + c
  const float* p = in + plane * g.H * g.W;
  float sum = 0.0f;
  for (int ky = 0; ky < g.size; ++ky)
    for (int kx = 0; kx < g.size; ++kx) sum += p[(oy * g.stride + ky) * g.W + ox * g.stride + kx];
  out[i] = sum * (1.0f / float(g.size * g.size));
}

__global__ void avgpoolBackward(float* dIn, const float* dOut, const float* in, int64_t total, PoolGeometry g,
                                ActivationFn inAct, float inAlpha) {
  startAfterPreviousKernel();
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int x = int(i % g.W), y = int((i / g.W) % g.H);
  const int64_t plane = i / (int64_t(g.W) * g.H);
  int oy0, oy1, ox0, ox1;
  coveringWindows(y, g.size, g.stride, g.OH, oy0, oy1);
  coveringWindows(x, g.size, g.stride, g.OW, ox0, ox1);
  const float* d = dOut + plane * g.OH * g.OW;
  float sum = 0.0f;
  for (int oy = oy0; oy <= oy1; ++oy)
    for (int ox = ox0; ox <= ox1; ++ox) sum += d[oy * g.OW + ox];
  sum *= 1.0f / float(g.size * g.size);
  dIn[i] = inAct == ActivationFn::Linear ? sum : gateGradient(sum, in[i], inAct, inAlpha);
}

}  // namespace

void maxpool_forward(cudaStream_t stream, float* out, int32_t* argmax, const float* in, int N, const PoolGeometry& g) {
  const int64_t total = int64_t(N) * g.C * g.OH * g.OW;
  if (total == 0) return;
  launchKernel("maxpoolForward", maxpoolForward, blocksFor(total, kThreads), kThreads, 0, stream,
               out, argmax, in, total, g);
  checkLaunch("maxpool forward");
}

void maxpool_backward(cudaStream_t stream, float* dIn, const float* dOut, const int32_t* argmax, const float* in, int N,
                      const PoolGeometry& g, ActivationFn inAct, float inAlpha) {
  const int64_t total = int64_t(N) * g.C * g.H * g.W;
  if (total == 0) return;
  launchKernel("maxpoolBackward", maxpoolBackward, blocksFor(total, kThreads), kThreads, 0, stream,
               dIn, dOut, argmax, in, total, g, inAct, inAlpha);
  checkLaunch("maxpool backward");
}

void maxpool_backward_from_output(cudaStream_t stream, float* dIn, const float* dOut, const int32_t* argmax,
                                  const float* pooled, int N, const PoolGeometry& g, ActivationFn act, float alpha) {
  const int64_t total = int64_t(N) * g.C * g.H * g.W;
  if (total == 0) return;
  launchKernel("maxpoolBackwardFromOutput", maxpoolBackwardFromOutput, blocksFor(total, kThreads), kThreads, 0, stream,
               dIn, dOut, argmax, pooled, total, g,
                                                                                  act, alpha);
  checkLaunch("maxpool backward");
}

void avgpool_forward(cudaStream_t stream, float* out, const float* in, int N, const PoolGeometry& g) {
  const int64_t total = int64_t(N) * g.C * g.OH * g.OW;
  if (total == 0) return;
  launchKernel("avgpoolForward", avgpoolForward, blocksFor(total, kThreads), kThreads, 0, stream, out, in, total, g);
  checkLaunch("avgpool forward");
}

void avgpool_backward(cudaStream_t stream, float* dIn, const float* dOut, const float* in, int N, const PoolGeometry& g,
                      ActivationFn inAct, float inAlpha) {
  const int64_t total = int64_t(N) * g.C * g.H * g.W;
  if (total == 0) return;
  launchKernel("avgpoolBackward", avgpoolBackward, blocksFor(total, kThreads), kThreads, 0, stream,
               dIn, dOut, in, total, g, inAct, inAlpha);
  checkLaunch("avgpool backward");
}

}  // namespace nnstudio::cuda
