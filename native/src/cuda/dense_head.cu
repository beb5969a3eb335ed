// The classifier head of a training step in one launch: the last dense layer's forward, the loss (with
// the step's bookkeeping in StepState) and the layer's whole backward. Separately these are four small
// dependent launches (gemm, lossKernel, the weight-gradient gemm, the input-gradient gemm) whose work is
// tiny next to their launch cost; for a small head (e.g. batch 128 x 128 inputs x 10 units) one block
// does it all with the operands in shared memory:
//   z  (N, K)      = act(x (N, I) . W^T + b)         logits (outputs), written to `out`
//   dz (N, K)      = dLoss/dz, rowLoss of loss_math.cuh times act'(z)
//   dW (K, I)      = dz^T . x,   dB (K) = column sums of dz
//   dIn (N, I)     = (dz . W) * inAct'(x)             when asked for
// Every sum has a fixed order (no atomics): results are deterministic.
#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/loss_math.cuh"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int kMaxUnits = 32;

// How the block splits the work, chosen on the host (see layoutFor).
struct HeadArgs {
  LossKind loss;
  float* out;            // (N, K)
  float* dWeight;        // (K, I)
  float* dBias;          // (K)
  float* dIn;            // (N, I) or null
  const float* in;       // (N, I)
  const float* weight;   // (K, I)
  const float* bias;     // (K)
  const int32_t* labels; // (N)
  StepState* state;
  int N, I, K;
  ActivationFn act, inAct;
  float alpha, inAlpha;
  int P;   // forward: lanes per row (a power of two, 4..32), each summing every P-th input
  int SX;  // the shared row stride of x: SX % 32 == P, so a warp's P-strided reads of 32/P rows hit 32 banks
  int G;   // backward: row groups per input column (G * I <= kThreads when G > 1)
};

struct HeadLayout {
  int KP = 0;       // K padded to the kernel's register tile (4, 8, 12, 16, 32)
  int P = 4, SX = 0, G = 1;
  size_t floats = 0;
};

int paddedUnits(int K) { return K <= 4 ? 4 : K <= 8 ? 8 : K <= 12 ? 12 : K <= 16 ? 16 : K <= kMaxUnits ? 32 : 0; }

HeadLayout layoutFor(int N, int I, int K) {
  HeadLayout l;
  l.KP = paddedUnits(K);
  int p = 32;
  while (p > 4 && p * N > kThreads) p /= 2;
  l.P = p;
  l.SX = (I + 31) / 32 * 32 + p;
  l.G = I >= kThreads ? 1 : std::max(1, std::min(N, kThreads / I));
  // x, W^T, b, outputs, dz, the backward's partial dW per row group
  l.floats = size_t(N) * l.SX + size_t(I) * l.KP + l.KP + 2 * size_t(N) * l.KP +
             (l.G > 1 ? size_t(l.G) * l.KP * I : 0);
  return l;
}

// ---- the kernel: KP = K padded (register tiles of KP accumulators; the padding holds zeros) ----

template <int KP>
__global__ void __launch_bounds__(kThreads) denseHeadKernel(HeadArgs a) {
  startAfterPreviousKernel();
  extern __shared__ float4 shared4[];
  const int N = a.N, I = a.I, K = a.K, SX = a.SX, P = a.P, G = a.G;
  float* xs = reinterpret_cast<float*>(shared4);  // (N, SX)
  float* wt = xs + N * SX;                         // (I, KP): W transposed, zero past K
  float* bs = wt + I * KP;                         // (KP)
  float* ys = bs + KP;                             // (N, KP): outputs
  float* dz = ys + N * KP;                         // (N, KP): dLoss/dz, zero past K
  float* part = dz + N * KP;                       // (G, KP, I): partial dW per row group
  const int tid = threadIdx.x;

  // ---- stage x, W^T and b ----
  if ((I & 3) == 0 && (reinterpret_cast<uintptr_t>(a.in) & 15) == 0) {
    const int I4 = I / 4, total = N * I4;
    const float4* in4 = reinterpret_cast<const float4*>(a.in);
    for (int base = tid; base < total; base += 4 * kThreads) {
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (base + u * kThreads < total) v[u] = __ldg(in4 + base + u * kThreads);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int e = base + u * kThreads;
        if (e < total) {
          const int n = e / I4;
          *reinterpret_cast<float4*>(xs + n * SX + 4 * (e - n * I4)) = v[u];
        }
      }
    }
  } else {
    for (int e = tid; e < N * I; e += kThreads) {
      const int n = e / I;
      xs[n * SX + e - n * I] = __ldg(a.in + e);
    }
  }
  for (int e = tid; e < KP * I; e += kThreads) {
    const int k = e / I, i = e - k * I;
    wt[i * KP + k] = k < K ? __ldg(a.weight + e) : 0.0f;
  }
  if (tid < KP) bs[tid] = tid < K ? __ldg(a.bias + tid) : 0.0f;
  __syncthreads();

  // ---- forward: P lanes per row, each summing every P-th input for all K units, then a butterfly ----
  {
    const int s = tid & (P - 1), lane = tid & 31;
    const unsigned group = P == 32 ? 0xffffffffu : ((1u << P) - 1u) << (lane & ~(P - 1));
    for (int n = tid / P; n < N; n += kThreads / P) {  // a row's P lanes share n: they stay together
      float acc[KP];
#pragma unroll
      for (int k = 0; k < KP; ++k) acc[k] = 0.0f;
      const float* xr = xs + n * SX;
      for (int i = s; i < I; i += P) {
        const float xv = xr[i];
        const float4* w4 = reinterpret_cast<const float4*>(wt + i * KP);
#pragma unroll
        for (int q = 0; q < KP / 4; ++q) {
          const float4 w = w4[q];
          acc[4 * q + 0] = fmaf(xv, w.x, acc[4 * q + 0]);
          acc[4 * q + 1] = fmaf(xv, w.y, acc[4 * q + 1]);
          acc[4 * q + 2] = fmaf(xv, w.z, acc[4 * q + 2]);
          acc[4 * q + 3] = fmaf(xv, w.w, acc[4 * q + 3]);
        }
      }
      for (int o = 1; o < P; o <<= 1)
#pragma unroll
        for (int k = 0; k < KP; ++k) acc[k] += __shfl_xor_sync(group, acc[k], o);
#pragma unroll
      for (int k = 0; k < KP; ++k)
        if (k < K && (k & (P - 1)) == s) {
          const float y = activate(acc[k] + bs[k], a.act, a.alpha);
          ys[n * KP + k] = y;
          a.out[n * K + k] = y;
        }
    }
  }
  __syncthreads();

  // ---- loss: one thread per row, as lossKernel; dz = dLoss/dy * act'(y) ----
  {
    const bool perSample = a.loss == LossKind::SoftmaxCrossEntropy;
    const double elements = perSample ? double(N) : double(N) * K;
    const double scale = 1.0 / elements;
    double total = 0;
    long long right = 0;
    for (int n = tid; n < N; n += kThreads) {
      const float* y = ys + n * KP;
      float* d = dz + n * KP;
      const int32_t label = a.labels[n];
      if (predictRow(a.loss, y, K) == label) ++right;
      total += rowLoss(a.loss, y, label, K, d, scale);
      if (a.act != ActivationFn::Linear)
        for (int k = 0; k < K; ++k) d[k] = gateGradient(d[k], y[k], a.act, a.alpha);
      for (int k = K; k < KP; ++k) d[k] = 0.0f;
    }
    blockSum<kThreads>(total, right);
    if (tid == 0) recordBatchLoss(a.state, total, right, N, elements);
  }
  __syncthreads();

  // ---- dB: a warp per unit, lanes over rows, then a butterfly ----
  {
    const int warp = tid / 32, lane = tid & 31;
    for (int k = warp; k < K; k += kThreads / 32) {
      float sum = 0.0f;
      for (int n = lane; n < N; n += 32) sum += dz[n * KP + k];
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      if (lane == 0) a.dBias[k] = sum;
    }
  }

  // ---- dW and dIn: a thread per (input column i, row group g), holding W[:, i] and dW[:, i] partials ----
  for (int e = tid; e < G * I; e += kThreads) {
    const int g = e / I, i = e - g * I;
    float w[KP], acc[KP];
    const float4* w4 = reinterpret_cast<const float4*>(wt + i * KP);
#pragma unroll
    for (int q = 0; q < KP / 4; ++q) {
      const float4 v = w4[q];
      w[4 * q + 0] = v.x;
      w[4 * q + 1] = v.y;
      w[4 * q + 2] = v.z;
      w[4 * q + 3] = v.w;
    }
#pragma unroll
    for (int k = 0; k < KP; ++k) acc[k] = 0.0f;
#pragma unroll 2
    for (int n = g; n < N; n += G) {
      const float xv = xs[n * SX + i];
      const float4* d4 = reinterpret_cast<const float4*>(dz + n * KP);
      float dot = 0.0f;
#pragma unroll
      for (int q = 0; q < KP / 4; ++q) {
        const float4 d = d4[q];
        acc[4 * q + 0] = fmaf(d.x, xv, acc[4 * q + 0]);
        acc[4 * q + 1] = fmaf(d.y, xv, acc[4 * q + 1]);
        acc[4 * q + 2] = fmaf(d.z, xv, acc[4 * q + 2]);
        acc[4 * q + 3] = fmaf(d.w, xv, acc[4 * q + 3]);
        dot = fmaf(d.x, w[4 * q + 0], dot);
        dot = fmaf(d.y, w[4 * q + 1], dot);
        dot = fmaf(d.z, w[4 * q + 2], dot);
        dot = fmaf(d.w, w[4 * q + 3], dot);
      }
      if (a.dIn) a.dIn[n * I + i] = gateGradient(dot, xv, a.inAct, a.inAlpha);
    }
    if (G == 1) {
#pragma unroll
      for (int k = 0; k < KP; ++k)
        if (k < K) a.dWeight[k * I + i] = acc[k];
    } else {
#pragma unroll
      for (int k = 0; k < KP; ++k)
        if (k < K) part[(g * KP + k) * I + i] = acc[k];
    }
  }
  if (G > 1) {  // the row groups' partials, in group order
    __syncthreads();
    for (int e = tid; e < K * I; e += kThreads) {
      const int k = e / I, i = e - k * I;
      float sum = part[k * I + i];
      for (int g = 1; g < G; ++g) sum += part[(g * KP + k) * I + i];
      a.dWeight[e] = sum;
    }
  }
}

using KernelFn = void (*)(HeadArgs);

KernelFn kernelFor(int KP) {
  switch (KP) {
    case 4: return denseHeadKernel<4>;
    case 8: return denseHeadKernel<8>;
    case 12: return denseHeadKernel<12>;
    case 16: return denseHeadKernel<16>;
    case 32: return denseHeadKernel<32>;
    default: return nullptr;
  }
}

// the largest dynamic shared memory a block may have on the current device (opted in on each kernel once)
size_t sharedLimit() {
  constexpr int kDevices = 64;
  static int limits[kDevices] = {};  // 0: not asked yet
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) return 48 * 1024;
  if (limits[device] == 0) {
    int optin = 0;
    if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess || optin <= 0)
      optin = 48 * 1024;
    optin -= 1024;  // blockSum's static arrays
    for (int kp : {4, 8, 12, 16, 32})
      check(cudaFuncSetAttribute(kernelFor(kp), cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
            "dense head (shared memory)");
    limits[device] = optin;
  }
  return size_t(limits[device]);
}

}  // namespace

bool dense_head_supported(int N, int inputs, int units) {
  if (N < 1 || inputs < 1 || units < 1 || units > kMaxUnits) return false;
  return layoutFor(N, inputs, units).floats * sizeof(float) <= sharedLimit();
}

void dense_head_fused(cudaStream_t stream, LossKind loss, float* out, float* dWeight, float* dBias, float* dIn,
                      const float* in, const float* weight, const float* bias, const int32_t* labels, int N,
                      int inputs, int units, ActivationFn act, float alpha, ActivationFn inAct, float inAlpha,
                      StepState* state) {
  if (N == 0) return;
  if (!dense_head_supported(N, inputs, units)) throw EngineError("dense head: shape too large for one block");
  const HeadLayout l = layoutFor(N, inputs, units);
  HeadArgs a;
  a.loss = loss;
  a.out = out;
  a.dWeight = dWeight;
  a.dBias = dBias;
  a.dIn = dIn;
  a.in = in;
  a.weight = weight;
  a.bias = bias;
  a.labels = labels;
  a.state = state;
  a.N = N;
  a.I = inputs;
  a.K = units;
  a.act = act == ActivationFn::Softmax ? ActivationFn::Linear : act;  // a row operation: never fused here
  a.alpha = alpha;
  a.inAct = inAct == ActivationFn::Softmax ? ActivationFn::Linear : inAct;
  a.inAlpha = inAlpha;
  a.P = l.P;
  a.SX = l.SX;
  a.G = l.G;
  launchKernel("denseHeadKernel", kernelFor(l.KP), 1, kThreads, l.floats * sizeof(float), stream, a);
  checkLaunch("dense head");
}

}  // namespace nnstudio::cuda
