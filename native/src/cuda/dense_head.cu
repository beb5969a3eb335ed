// The classifier head of a training step in one launch: the last dense layer's forward, the loss (with
// the step's bookkeeping in StepState) and the layer's whole backward. Separately these are four small
// dependent launches (gemm, lossKernel, the weight-gradient gemm, the input-gradient gemm) whose work is
// tiny next to their launch cost; for a small head (e.g. batch 128 x 128 inputs x 10 units) one block,
// or a thread-block cluster of a few blocks that split the batch rows, does it all with the operands in
// shared memory:
//   y  (N, K)  = act(x (N, I) . W^T + b)     the outputs (logits when the loss folds the activation)
//   dz (N, K)  = dLoss/dy * act'(y)          the per-output pieces of loss_math.cuh, over threads
//   dW (K, I)  = dz^T . x,  dB (K) = column sums of dz
//   dIn (N, I) = (dz . W) * inAct'(x)         when asked for
// With a cluster, block r takes rows [r * rowsPer, ...) for everything but dW, dB and the batch loss,
// whose per-block partials are summed over the blocks in rank order through distributed shared memory
// (as gemm.cu's split-K). Every sum has a fixed order (no atomics): results are deterministic.
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/cluster_probes.h"
#include "cuda/kernel_choice.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/loss_math.cuh"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = kDenseHeadThreads;
constexpr int kMaxBlocks = 16;  // a cluster (more than 8: non-portable, where the GPU schedules it)

struct HeadArgs {
  LossKind loss;
  float* out;             // (N, K)
  float* dWeight;         // (K, I)
  float* dBias;           // (K)
  float* dIn;             // (N, I) or null
  const float* in;        // (N, I)
  const float* weight;    // (K, I)
  const float* bias;      // (K)
  const int32_t* labels;  // (N)
  StepState* state;
  int N, I, K;
  ActivationFn act, inAct;
  float alpha, inAlpha;
  float smoothing;        // softmax cross-entropy's label smoothing (loss_math.cuh softmaxTarget)
  // the split, chosen on the host (denseHeadLayout)
  int blocks;   // the cluster's blocks (1: a plain launch)
  int rowsPer;  // rows per block
  int P;        // forward: lanes per row (a power of two, 4..32), each summing every P-th input
  int SX;       // shared row stride of x: SX % 32 == P, so a warp's P-strided reads of 32/P rows hit 32 banks
  int G;        // backward: row groups per input column (G * I <= kThreads when G > 1)
};

// shared memory, in floats: the chooser's layout (kernel_choice.h, denseHeadLayout)
using HeadLayout = DenseHeadLayout;

// ---- the kernel: KP = K padded (register tiles of KP accumulators) ----

template <int KP>
__global__ void __launch_bounds__(kThreads) denseHeadKernel(HeadArgs a, HeadLayout l) {
  startAfterPreviousKernel();
  extern __shared__ float4 shared4[];
  float* smem = reinterpret_cast<float*>(shared4);
  float* xs = smem + l.xs;
  float* wt = smem + l.wt;
  float* bs = smem + l.bs;
  float* ys = smem + l.ys;
  float* dz = smem + l.dz;
  double* terms = reinterpret_cast<double*>(smem + l.terms);
  double* stats = reinterpret_cast<double*>(smem + l.stats);
  float* part = smem + l.part;
  float* red = smem + l.red;  // [0, 2): double total, [2, 4): long long correct, [4, 4 + KP): dB
  const int N = a.N, I = a.I, K = a.K, SX = a.SX, P = a.P, G = a.G, C = a.blocks;
  const int rank = blockIdx.x, n0 = rank * a.rowsPer, R = min(a.rowsPer, N - n0);
  const float* in = a.in + size_t(n0) * I;
  const int32_t* labels = a.labels + n0;
  const int tid = threadIdx.x;

  // ---- stage this block's x rows, W^T and b ----
  if ((I & 3) == 0 && (reinterpret_cast<uintptr_t>(in) & 15) == 0) {
    const int I4 = I / 4, total = R * I4;
    const float4* in4 = reinterpret_cast<const float4*>(in);
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
    for (int e = tid; e < R * I; e += kThreads) {
      const int n = e / I;
      xs[n * SX + e - n * I] = __ldg(in + e);
    }
  }
  for (int base = tid; base < K * I; base += 4 * kThreads) {  // the loads first: one wait for all four
    float v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (base + u * kThreads < K * I) v[u] = __ldg(a.weight + base + u * kThreads);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int e = base + u * kThreads;
      if (e < K * I) {
        const int k = e / I;
        wt[(e - k * I) * KP + k] = v[u];
      }
    }
  }
  for (int e = tid; e < (KP - K) * I; e += kThreads) {
    const int k = e / I;
    wt[(e - k * I) * KP + K + k] = 0.0f;
  }
  if (tid < KP) bs[tid] = tid < K ? __ldg(a.bias + tid) : 0.0f;
  __syncthreads();

  // ---- forward: P lanes per row, each summing every P-th input for all K units, then a butterfly ----
  {
    const int s = tid & (P - 1), lane = tid & 31, warp = tid / 32;
    // warp-uniform trips (rows past R compute on row 0 and write nothing), so the shuffles take the full warp
    for (int base = warp * (32 / P); base < R; base += kThreads / P) {
      const int n = base + lane / P;
      const bool live = n < R;
      float acc[KP];
#pragma unroll
      for (int k = 0; k < KP; ++k) acc[k] = 0.0f;
      const float* xr = xs + (live ? n : 0) * SX;
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
        for (int k = 0; k < KP; ++k) acc[k] += __shfl_xor_sync(0xffffffffu, acc[k], o);
#pragma unroll
      for (int k = 0; k < KP; ++k)
        if (live && k < K && (k & (P - 1)) == s) {
          const float y = activate(acc[k] + bs[k], a.act, a.alpha);
          ys[n * KP + k] = y;
          a.out[size_t(n0 + n) * K + k] = y;
        }
    }
  }
  __syncthreads();

  // ---- loss: rowLoss's pieces (loss_math.cuh) a thread per output, its sums a thread per row ----
  const bool softmax = a.loss == LossKind::SoftmaxCrossEntropy;
  const double elements = softmax ? double(N) : double(N) * K;
  const double scale = lossGradientScale(a.state) / elements;  // the loss scale: 1 unless loss-scaled
  for (int e = tid; e < R * KP; e += kThreads) {
    const int n = e / KP, k = e - n * KP;
    const float* y = ys + n * KP;
    if (k >= K) {
      dz[e] = 0.0f;
    } else if (softmax) {
      if (K > 1) terms[e] = softmaxTerm(y[k], rowMax(y, K));
      else dz[e] = 0.0f;
    } else {
      const double t = targetOf(labels[n], K, k);
      terms[e] = elementLoss(a.loss, y[k], t);
      dz[e] = gateGradient(float(elementSlope(a.loss, y[k], t) * scale), y[k], a.act, a.alpha);
    }
  }
  __syncthreads();
  double total = 0;  // the batch's loss and correct count, in thread 0 after blockSum
  long long right = 0;
  {
    for (int n = tid; n < R; n += kThreads) {  // as lossKernel: the row's loss in output order
      const float* y = ys + n * KP;
      const int32_t label = labels[n];
      if (predictRow(a.loss, y, K) == label) ++right;
      if (softmax) {
        if (K == 1) continue;
        double sum = 0;
        for (int k = 0; k < K; ++k) sum += terms[n * KP + k];
        const double lse = rowMax(y, K) + log(sum);
        stats[n] = lse;
        double zSum = 0;
        if (a.smoothing != 0.0f)
          for (int k = 0; k < K; ++k) zSum += y[k];
        total += softmaxLoss(lse, y[label], zSum, a.smoothing, K);
      } else {
        double row = 0;
        for (int k = 0; k < K; ++k) row += terms[n * KP + k];
        total += row;
      }
    }
    blockSum<kThreads>(total, right);
    if (tid == 0 && C > 1) {
      *reinterpret_cast<double*>(red) = total;
      *reinterpret_cast<long long*>(red + 2) = right;
    }
  }
  __syncthreads();
  if (softmax && K > 1) {
    for (int e = tid; e < R * KP; e += kThreads) {
      const int n = e / KP, k = e - n * KP;
      if (k < K) {
        const float y = ys[e];
        dz[e] = gateGradient(softmaxGradient(y, stats[n], k == labels[n], scale, a.smoothing, K), y, a.act, a.alpha);
      }
    }
    __syncthreads();
  }

  // ---- dB: a warp per unit, lanes over rows, then a butterfly ----
  {
    const int warp = tid / 32, lane = tid & 31;
    for (int k = warp; k < K; k += kThreads / 32) {
      float sum = 0.0f;
      for (int n = lane; n < R; n += 32) sum += dz[n * KP + k];
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      if (lane == 0) {
        if (C == 1) a.dBias[k] = sum;
        else red[4 + k] = sum;
      }
    }
  }

  // ---- dW and dIn: a thread per (input column i, row group g), holding W[:, i] and dW[:, i] partials ----
  float* dIn = a.dIn ? a.dIn + size_t(n0) * I : nullptr;
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
    for (int n = g; n < R; n += G) {
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
      if (dIn) dIn[size_t(n) * I + i] = gateGradient(dot, xv, a.inAct, a.inAlpha);
    }
    // one block, one group: straight out; else the partials go to shared memory
    float* to = G == 1 && C == 1 ? a.dWeight + i : part + size_t(g) * KP * I + i;
#pragma unroll
    for (int k = 0; k < KP; ++k)
      if (k < K) to[size_t(k) * I] = acc[k];
  }
  if (G > 1) {  // the row groups' partials, in group order (in place into group 0's when a cluster sums on)
    __syncthreads();
    for (int e = tid; e < K * I; e += kThreads) {
      const int k = e / I, i = e - k * I;
      float sum = part[k * I + i];
      for (int g = 1; g < G; ++g) sum += part[(g * KP + k) * I + i];
      if (C == 1) a.dWeight[e] = sum;
      else part[e] = sum;
    }
  }
  if (C == 1) {
    if (tid == 0) recordBatchLoss(a.state, total, right, N, elements);  // last: its global reads wait for no one
    return;
  }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // ---- the cluster: dW, dB and the batch loss summed over the blocks in rank order ----
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  if (rank == 0 && tid == 0) {
    double total = 0;
    long long right = 0;
    for (int r = 0; r < C; ++r) {
      const float* other = cluster.map_shared_rank(red, r);
      total += *reinterpret_cast<const double*>(other);
      right += *reinterpret_cast<const long long*>(other + 2);
    }
    recordBatchLoss(a.state, total, right, N, elements);
  }
  const int outputs = K * I + K, per = (outputs + C - 1) / C;
  const int e1 = min(outputs, (rank + 1) * per);
  for (int e = rank * per + tid; e < e1; e += kThreads) {
    const bool weight = e < K * I;
    const float* from = weight ? part + e : red + 4 + (e - K * I);
    float sum = 0.0f;
    for (int r = 0; r < C; ++r) sum += *cluster.map_shared_rank(from, r);  // fixed order
    if (weight) a.dWeight[e] = sum;
    else a.dBias[e - K * I] = sum;
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
#else
  __trap();  // never launched: the host uses clusters only where they exist
#endif
}

using KernelFn = void (*)(HeadArgs, HeadLayout);

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

// Can clusters of `blocks` blocks of every instance run with `sharedBytes` each?
bool clustersFit(int blocks, size_t sharedBytes) {
  for (int kp : {4, 8, 12, 16, 32})
    if (!clusterFits(kernelFor(kp), kThreads, sharedBytes, blocks)) return false;
  return true;
}

}  // namespace

// ---- the device: shared memory opt-in and the largest cluster, once per device (DeviceCaps) ----

int denseHeadClusterLimit(size_t sharedBytes, bool clusterLaunch) {
  for (int kp : {4, 8, 12, 16, 32})
    check(cudaFuncSetAttribute(kernelFor(kp), cudaFuncAttributeMaxDynamicSharedMemorySize, int(sharedBytes)),
          "dense head (shared memory)");
  // the cluster code exists only in machine code for sm_90+
  if (!clusterLaunch || !runsSm90Code(kernelFor(4))) return 1;
  for (int kp : {4, 8, 12, 16, 32})
    if (cudaFuncSetAttribute(kernelFor(kp), cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
      cudaGetLastError();
  for (int blocks = kMaxBlocks; blocks >= 2; blocks /= 2)
    if (clustersFit(blocks, sharedBytes)) return blocks;
  return 1;
}

bool dense_head_supported(int N, int inputs, int units) {
  return denseHeadSupported(currentDeviceCaps(), N, inputs, units);
}

void dense_head_fused(cudaStream_t stream, LossKind loss, float* out, float* dWeight, float* dBias, float* dIn,
                      const float* in, const float* weight, const float* bias, const int32_t* labels, int N,
                      int inputs, int units, ActivationFn act, float alpha, ActivationFn inAct, float inAlpha,
                      StepState* state, int blocks, float smoothing) {
  if (N == 0) return;
  const DeviceCaps& caps = currentDeviceCaps();
  blocks = denseHeadBlocks(caps, blocks);
  if (N < 1 || inputs < 1 || units < 1 || units > kDenseHeadMaxUnits || !denseHeadFits(caps, N, inputs, units, blocks))
    throw EngineError("dense head: shape too large for the fused kernel");
  const HeadLayout l = denseHeadLayout(N, inputs, units, blocks);
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
  a.smoothing = loss == LossKind::SoftmaxCrossEntropy ? smoothing : 0.0f;
  a.blocks = l.blocks;
  a.rowsPer = l.rowsPer;
  a.P = l.P;
  a.SX = l.SX;
  a.G = l.G;
  const KernelFn kernel = kernelFor(l.KP);
  const size_t bytes = l.floats * sizeof(float);
  if (l.blocks == 1) {
    launchKernel("denseHeadKernel", kernel, 1, kThreads, bytes, stream, a, l);
  } else {
    launchClusterKernel("denseHeadKernel (cluster)", kernel, dim3(unsigned(l.blocks)), kThreads, bytes, stream,
                        l.blocks, a, l);
  }
  checkLaunch("dense head");
}

}  // namespace nnstudio::cuda
