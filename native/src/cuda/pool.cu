// Max and average pooling, floor mode, stride possibly smaller than the window (overlap), as
// cpu/pool.cpp. Forward: one thread per output. Backward: one thread per input pixel gathering from
// the windows that cover it, or, for max pools whose windows tile the input (stride == size), one
// thread per window writing it whole (no atomics, deterministic, every dIn element written once), with
// the activation gate of the layer before fused in (see kernels.h). Index arithmetic is 32-bit whenever the
// tensor allows it (Index = int): 64-bit division and modulo cost several times more than the memory
// traffic of these kernels (keras_cnn's max-pool backward: 57 µs with int64 indices on the H100).
#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"
#include "cuda/max_pool_order.cuh"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 256;

// Where output element i sits: its (n, c) plane, n * C + c, and (oy, ox) in it.
template <class Index>
struct PoolOutputPosition {
  Index plane;
  int oy, ox;
  __device__ PoolOutputPosition(Index i, const PoolGeometry& g) {
    const Index rest = i / g.OW;
    ox = int(i - rest * g.OW);
    plane = rest / g.OH;
    oy = int(rest - plane * g.OH);
  }
};

template <class Index>
__global__ void maxpoolForward(float* out, int32_t* argmax, const float* in, Index total, PoolGeometry g) {
  startAfterPreviousKernel();
  const Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
  if (i >= total) return;
  const auto [plane, oy, ox] = PoolOutputPosition<Index>(i, g);  // plane: n * C + c
  const Index n = plane / g.C;
  const int c = int(plane - n * g.C);
  const float* sample = in + int64_t(n) * g.C * g.H * g.W;
  const int y0 = oy * g.stride, x0 = ox * g.stride;
  int32_t bestIndex = (c * g.H + y0) * g.W + x0;
  float best = sample[bestIndex];
  // row-major scan with a strict '>' keeps the first maximum; a NaN wins (the CPU's rule)
  for (int ky = 0; ky < g.size; ++ky)
    for (int kx = 0; kx < g.size; ++kx) {
      const int32_t idx = (c * g.H + y0 + ky) * g.W + x0 + kx;
      const float v = sample[idx];
      if ((ky | kx) != 0 && replacesMax(v, best)) {
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

// Where input element i sits: its sample n, its index within the sample (as argmax stores it), its
// (c, y, x), and the first output of its (n, c) plane.
template <class Index>
struct PoolInputPosition {
  Index n;
  int32_t local;
  int c, y, x;
  int64_t outPlane;
  __device__ PoolInputPosition(Index i, const PoolGeometry& g) {
    const Index inSize = Index(g.C) * g.H * g.W;
    n = i / inSize;
    local = int32_t(i - n * inSize);
    const int row = local / g.W;
    x = local - row * g.W;
    c = row / g.H;
    y = row - c * g.H;
    outPlane = (int64_t(n) * g.C + c) * int64_t(g.OH) * g.OW;
  }
};

// One thread per INPUT pixel gathers from the windows that cover it (overlapping windows allowed): dOut
// summed where it won, times the activation's slope at its value, which is gateSrc[i] (the input) when
// GATE_FROM_INPUT, else the pooled output of a window it won (the same number).
template <class Index, bool GATE_FROM_INPUT>
__global__ void maxpoolBackward(float* dIn, const float* dOut, const int32_t* argmax, const float* gateSrc, Index total,
                                PoolGeometry g, ActivationFn act, float alpha) {
  startAfterPreviousKernel();
  const Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
  if (i >= total) return;
  const PoolInputPosition<Index> at(i, g);
  const int32_t local = at.local;
  int oy0, oy1, ox0, ox1;
  coveringWindows(at.y, g.size, g.stride, g.OH, oy0, oy1);
  coveringWindows(at.x, g.size, g.stride, g.OW, ox0, ox1);
  const int64_t base = at.outPlane;
  float sum = 0.0f, gate = 0.0f;
  for (int oy = oy0; oy <= oy1; ++oy)
    for (int ox = ox0; ox <= ox1; ++ox) {
      const int64_t o = base + int64_t(oy) * g.OW + ox;
      if (argmax[o] == local) {
        sum += dOut[o];
        if constexpr (!GATE_FROM_INPUT) gate = gateSrc[o];
      }
    }
  dIn[i] = act == ActivationFn::Linear ? sum : gateGradient(sum, GATE_FROM_INPUT ? gateSrc[i] : gate, act, alpha);
}

// Non-overlapping windows (stride == size), the usual case: one thread per OUTPUT writes its whole window
// (the gated gradient at the argmax, zeros elsewhere; the last window of a row or column also zeroes the
// floor mode's uncovered remainder). Two index divisions per window instead of several per input pixel:
// keras_cnn's max-pool backward took 50 µs on the H100 the gather way, bound by integer division.
// The gate's activated value is gateSrc[i] (the pooled output) or, when gateFromInput, the input at the
// argmax, which is the same number.
template <class Index>
__global__ void maxpoolBackwardWindows(float* dIn, const float* dOut, const int32_t* argmax, const float* gateSrc,
                                       bool gateFromInput, Index total, PoolGeometry g, ActivationFn act,
                                       float alpha) {
  startAfterPreviousKernel();
  const Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
  if (i >= total) return;
  const auto [plane, oy, ox] = PoolOutputPosition<Index>(i, g);  // plane: n * C + c
  const Index n = plane / g.C;
  const int64_t sampleBase = int64_t(n) * g.C * g.H * g.W;
  const int32_t planeOffset = int32_t(plane - n * g.C) * g.H * g.W;  // c * H * W: argmax counts from the sample
  const int32_t winner = argmax[i] - planeOffset;
  float v = dOut[i];
  if (act != ActivationFn::Linear) {
    const float y = gateFromInput ? gateSrc[sampleBase + argmax[i]] : gateSrc[i];
    v = gateGradient(v, y, act, alpha);
  }
  float* out = dIn + sampleBase + planeOffset;
  const int y0 = oy * g.size, x0 = ox * g.size;
  const int y1 = oy == g.OH - 1 ? g.H : y0 + g.size, x1 = ox == g.OW - 1 ? g.W : x0 + g.size;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      const int32_t idx = y * g.W + x;
      out[idx] = idx == winner ? v : 0.0f;
    }
}

template <class Index>
__global__ void avgpoolForward(float* out, const float* in, Index total, PoolGeometry g) {
  startAfterPreviousKernel();
  const Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
  if (i >= total) return;
  const auto [plane, oy, ox] = PoolOutputPosition<Index>(i, g);  // plane: n * C + c
  const float* p = in + int64_t(plane) * g.H * g.W;
  float sum = 0.0f;
  for (int ky = 0; ky < g.size; ++ky)
    for (int kx = 0; kx < g.size; ++kx) sum += p[(oy * g.stride + ky) * g.W + ox * g.stride + kx];
  out[i] = sum * (1.0f / float(g.size * g.size));
}

template <class Index>
__global__ void avgpoolBackward(float* dIn, const float* dOut, const float* in, Index total, PoolGeometry g,
                                ActivationFn inAct, float inAlpha) {
  startAfterPreviousKernel();
  const Index i = Index(blockIdx.x) * Index(blockDim.x) + Index(threadIdx.x);
  if (i >= total) return;
  const Index rest = i / g.W;
  const int x = int(i - rest * g.W);
  const Index plane = rest / g.H;  // n * C + c
  const int y = int(rest - plane * g.H);
  int oy0, oy1, ox0, ox1;
  coveringWindows(y, g.size, g.stride, g.OH, oy0, oy1);
  coveringWindows(x, g.size, g.stride, g.OW, ox0, ox1);
  const float* d = dOut + int64_t(plane) * g.OH * g.OW;
  float sum = 0.0f;
  for (int oy = oy0; oy <= oy1; ++oy)
    for (int ox = ox0; ox <= ox1; ++ox) sum += d[oy * g.OW + ox];
  sum *= 1.0f / float(g.size * g.size);
  dIn[i] = inAct == ActivationFn::Linear ? sum : gateGradient(sum, in[i], inAct, inAlpha);
}

// launch(int{}) when every index below `total` (plus a block's overshoot) fits in 32 bits, else launch(int64_t{})
template <class Launch>
void withIndexType(int64_t total, Launch&& launch) {
  if (total < (int64_t(1) << 31) - kThreads) launch(int{});
  else launch(int64_t{});
}

// The window path for stride == size (see maxpoolBackwardWindows); false when the windows overlap or skip.
bool maxpoolBackwardByWindows(cudaStream_t stream, float* dIn, const float* dOut, const int32_t* argmax,
                              const float* gateSrc, bool gateFromInput, int N, const PoolGeometry& g, ActivationFn act,
                              float alpha) {
  if (g.stride != g.size) return false;
  const int64_t windows = int64_t(N) * g.C * g.OH * g.OW;
  if (windows == 0) return true;
  withIndexType(windows, [&](auto index) {
    using Index = decltype(index);
    launchKernel("maxpoolBackwardWindows", maxpoolBackwardWindows<Index>, blocksFor(windows, kThreads), kThreads, 0,
                 stream, dIn, dOut, argmax, gateSrc, gateFromInput, Index(windows), g, act, alpha);
  });
  checkLaunch("maxpool backward");
  return true;
}

// any windows: the window path where it applies, else the gather
void maxpoolBackwardAny(cudaStream_t stream, float* dIn, const float* dOut, const int32_t* argmax, const float* gateSrc,
                        bool gateFromInput, int N, const PoolGeometry& g, ActivationFn act, float alpha) {
  if (maxpoolBackwardByWindows(stream, dIn, dOut, argmax, gateSrc, gateFromInput, N, g, act, alpha)) return;
  const int64_t total = int64_t(N) * g.C * g.H * g.W;
  if (total == 0) return;
  withIndexType(total, [&](auto index) {
    using Index = decltype(index);
    if (gateFromInput)
      launchKernel("maxpoolBackward", maxpoolBackward<Index, true>, blocksFor(total, kThreads), kThreads, 0, stream,
                   dIn, dOut, argmax, gateSrc, Index(total), g, act, alpha);
    else
      launchKernel("maxpoolBackwardFromOutput", maxpoolBackward<Index, false>, blocksFor(total, kThreads), kThreads,
                   0, stream, dIn, dOut, argmax, gateSrc, Index(total), g, act, alpha);
  });
  checkLaunch("maxpool backward");
}

}  // namespace

void maxpool_forward(cudaStream_t stream, float* out, int32_t* argmax, const float* in, int N, const PoolGeometry& g) {
  const int64_t total = int64_t(N) * g.C * g.OH * g.OW;
  if (total == 0) return;
  withIndexType(total, [&](auto index) {
    using Index = decltype(index);
    launchKernel("maxpoolForward", maxpoolForward<Index>, blocksFor(total, kThreads), kThreads, 0, stream,
                 out, argmax, in, Index(total), g);
  });
  checkLaunch("maxpool forward");
}

void maxpool_backward(cudaStream_t stream, float* dIn, const float* dOut, const int32_t* argmax, const float* in, int N,
                      const PoolGeometry& g, ActivationFn inAct, float inAlpha) {
  maxpoolBackwardAny(stream, dIn, dOut, argmax, in, true, N, g, inAct, inAlpha);
}

void maxpool_backward_from_output(cudaStream_t stream, float* dIn, const float* dOut, const int32_t* argmax,
                                  const float* pooled, int N, const PoolGeometry& g, ActivationFn act, float alpha) {
  maxpoolBackwardAny(stream, dIn, dOut, argmax, pooled, false, N, g, act, alpha);
}

void avgpool_forward(cudaStream_t stream, float* out, const float* in, int N, const PoolGeometry& g) {
  const int64_t total = int64_t(N) * g.C * g.OH * g.OW;
  if (total == 0) return;
  withIndexType(total, [&](auto index) {
    using Index = decltype(index);
    launchKernel("avgpoolForward", avgpoolForward<Index>, blocksFor(total, kThreads), kThreads, 0, stream,
                 out, in, Index(total), g);
  });
  checkLaunch("avgpool forward");
}

void avgpool_backward(cudaStream_t stream, float* dIn, const float* dOut, const float* in, int N, const PoolGeometry& g,
                      ActivationFn inAct, float inAlpha) {
  const int64_t total = int64_t(N) * g.C * g.H * g.W;
  if (total == 0) return;
  withIndexType(total, [&](auto index) {
    using Index = decltype(index);
    launchKernel("avgpoolBackward", avgpoolBackward<Index>, blocksFor(total, kThreads), kThreads, 0, stream,
                 dIn, dOut, in, Index(total), g, inAct, inAlpha);
  });
  checkLaunch("avgpool backward");
}

}  // namespace nnstudio::cuda
