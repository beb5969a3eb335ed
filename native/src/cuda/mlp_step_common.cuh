// What the two fused MLP steps share (mlp_step.cu splits the input columns over the cluster's blocks,
// mlp_unit_step.cu the hidden units): the owned parameters' slots and their optimizer update, a sum over the
// cluster in rank order, and one row's softmax cross-entropy. Device code for sm_90+ (clusters).
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "cuda/device_caps.h"
#include "cuda/launch.cuh"
#include "cuda/loss_math.cuh"
#include "cuda/mlp_step_launch.h"
#include "cuda/optim_math.cuh"

namespace nnstudio::cuda::mlp {

constexpr int kThreads = kMlpStepThreads;

// Host: opts a split's two kernels (FP32 and TF32 products) into the device's whole shared memory less their static
// variables, and into clusters past 8 blocks, so any layout that fits may launch with no attribute set while a step
// is being captured. Returns the bytes a launch may take; 0 without clusters or sm_90 code.
template <class Kernel>
size_t optInSharedMemory(Kernel fp32, Kernel tf32) {
  const DeviceCaps& caps = currentDeviceCaps();
  if (!caps.clusterLaunch || caps.computeMajor < 9) return 0;
  cudaFuncAttributes attr{};
  if (!runsSm90Code(fp32, &attr) || attr.sharedSizeBytes >= caps.sharedOptin) return 0;
  const size_t optin = caps.sharedOptin - attr.sharedSizeBytes;
  for (Kernel kernel : {fp32, tf32})
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(optin)) != cudaSuccess ||
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
      cudaGetLastError();  // not an error of the next launch
      return 0;
    }
  return optin;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace cg = cooperative_groups;

// The step's optimizer constants.
struct StepRule {
  float lr;
  AdamCorrections corrections;
};

// One owned parameter on chip: slot arrays [0] value, [1] before the last applied update, [2], [3] the
// optimizer state (SGD's velocity, or Adam's moments), each at index j.
struct Owned {
  float* slot[4];
};
__device__ __forceinline__ Owned ownedAt(float* smem, const size_t (&offsets)[4], int slots) {
  Owned o;
  for (int c = 0; c < 4; ++c) o.slot[c] = c < 2 + slots ? smem + offsets[c] : nullptr;
  return o;
}

// Updates owned parameter j (flat index i, for the decay rule) with gradient g; returns the new value.
// Weights decay (as weightDecayMask: dense weights do, biases never).
__device__ __forceinline__ float updateOwned(const MlpStepArgs& a, const Owned& o, int j, size_t i, float g,
                                             const StepRule& rule, bool weight) {
  const WeightDecay decay = weight ? a.decay : WeightDecay{};
  const float old = o.slot[0][j];
  o.slot[1][j] = old;
  float p;
  if (a.adam) {
    p = adamUpdate(old, g, i, rule.lr, rule.corrections, a.beta1, a.beta2, a.eps, decay, o.slot[2][j], o.slot[3][j]);
  } else {
    float unused = 0.0f;
    p = sgdUpdate(old, g, i, rule.lr, a.momentum, a.nesterov, decay, a.momentum != 0.0f ? o.slot[2][j] : unused);
  }
  o.slot[0][j] = p;
  return p;
}

// Plain SGD (no momentum, no decay: the presets' rule): sgdUpdate's p - lr g, the same bits as updateOwned's
// without its branches. updateOwnedPlainSgd also keeps the backup, as updateOwned does.
__device__ __forceinline__ float plainSgd(float old, float g, float lr) {
  float unused = 0.0f;
  return sgdUpdate(old, g, 0, lr, 0.0f, false, WeightDecay{}, unused);
}
__device__ __forceinline__ void updateOwnedPlainSgd(const Owned& o, int j, float g, float lr) {
  const float old = o.slot[0][j];
  o.slot[1][j] = old;
  o.slot[0][j] = plainSgd(old, g, lr);
}

// The step's learning rate and Adam's corrections at global step t.
__device__ __forceinline__ StepRule stepRule(const MlpStepArgs& a, double baseLr, long long t) {
  StepRule rule;
  rule.lr = stepLearningRate(a.schedule, baseLr, t);
  rule.corrections = a.adam ? adamCorrections(rule.lr, a.beta1, a.beta2, t + 1) : AdamCorrections{0.0f, 1.0f};
  return rule;
}

// Moves `count` owned parameters between global memory and their slots, the e-th at slot index place(e).slot and
// flat index place(e).at: load (the values, their copy as the backup, the optimizer state) or store (values,
// backup and state).
struct OwnedPlace {
  int slot;
  size_t at;
};
template <class Place>
__device__ void loadOwnedAt(const MlpStepArgs& a, const Owned& o, int slots, int count, Place place) {
  for (int e = threadIdx.x; e < count; e += kThreads) {
    const OwnedPlace p = place(e);
    const float value = a.params[p.at];
    o.slot[0][p.slot] = value;
    o.slot[1][p.slot] = value;
    if (slots >= 1) o.slot[2][p.slot] = a.m[p.at];
    if (slots >= 2) o.slot[3][p.slot] = a.v[p.at];
  }
}
template <class Place>
__device__ void storeOwnedAt(const MlpStepArgs& a, const Owned& o, int slots, int count, Place place) {
  for (int e = threadIdx.x; e < count; e += kThreads) {
    const OwnedPlace p = place(e);
    a.params[p.at] = o.slot[0][p.slot];
    a.backup[p.at] = o.slot[1][p.slot];
    if (slots >= 1) a.m[p.at] = o.slot[2][p.slot];
    if (slots >= 2) a.v[p.at] = o.slot[3][p.slot];
  }
}
// the same for parameters at consecutive slots 0 .. count - 1, flat index at(j)
template <class At>
__device__ void loadOwned(const MlpStepArgs& a, const Owned& o, int slots, int count, At at) {
  loadOwnedAt(a, o, slots, count, [&](int j) { return OwnedPlace{j, at(j)}; });
}
template <class At>
__device__ void storeOwned(const MlpStepArgs& a, const Owned& o, int slots, int count, At at) {
  storeOwnedAt(a, o, slots, count, [&](int j) { return OwnedPlace{j, at(j)}; });
}

// sum over the cluster's blocks of `local`'s counterpart in each, in rank order; the loads are issued together
__device__ __forceinline__ float clusterSum(cg::cluster_group& cluster, const float* local, int C) {
  float v[kMlpStepMaxBlocks];
#pragma unroll
  for (int c = 0; c < kMlpStepMaxBlocks; ++c) v[c] = c < C ? *cluster.map_shared_rank(local, c) : 0.0f;
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kMlpStepMaxBlocks; ++c)
    if (c < C) sum += v[c];
  return sum;
}

// Where one row's results go.
struct RowOut {
  float* dz;      // (K) the logits' gradient
  double* loss;   // the row's loss
  float* right;   // 1 where its prediction is right
};

// One row (a warp, a lane a class) from its logits z (K): the softmax cross-entropy (loss_math.cuh's pieces; the
// sums over the classes as a butterfly), dz, the row's loss and whether its prediction is right. N: the batch.
__device__ void rowLoss(const MlpStepArgs& a, const float* zRow, RowOut out, int32_t label, int N) {
  const int lane = threadIdx.x & 31, K = a.classes;
  const bool live = lane < K;
  const float z = live ? zRow[lane] : -INFINITY;
  // the row's max and first argmax (predictRow's), the sums of exp(z - max) and of z
  double m = live ? double(z) : -INFINITY;
  float best = z;
  int bestAt = live ? lane : 32;
  for (int o = 16; o > 0; o >>= 1) {
    m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float ob = __shfl_xor_sync(0xffffffffu, best, o);
    const int oa = __shfl_xor_sync(0xffffffffu, bestAt, o);
    if (ob > best || (ob == best && oa < bestAt)) {
      best = ob;
      bestAt = oa;
    }
  }
  double term = live ? softmaxTerm(z, m) : 0.0, zSum = live ? double(z) : 0.0;
  for (int o = 16; o > 0; o >>= 1) {
    term += __shfl_xor_sync(0xffffffffu, term, o);
    zSum += __shfl_xor_sync(0xffffffffu, zSum, o);
  }
  const double lse = m + log(term);
  const float zLabel = __shfl_sync(0xffffffffu, z, label);
  if (live) out.dz[lane] = softmaxGradient(z, lse, lane == label, 1.0 / N, a.smoothing, K);
  if (lane == 0) {
    *out.loss = softmaxLoss(lse, zLabel, zSum, a.smoothing, K);
    *out.right = bestAt == label ? 1.0f : 0.0f;
  }
}

// Thread 0: the block's loss partial (its R rows' loss sum and right count, in row order) for bookStepLoss.
__device__ __forceinline__ void blockLossPart(const double* rowLosses, const float* rowRight, int R, double* lossPart) {
  if (threadIdx.x != 0) return;
  double total = 0, right = 0;
  for (int r = 0; r < R; ++r) {
    total += rowLosses[r];
    right += rowRight[r];
  }
  lossPart[0] = total;
  lossPart[1] = right;
}

// The step's loss from the blocks' partials (2 doubles each: the loss sum and the right count), summed by one
// warp as one tree, the same in every block; in block 0 its lane 0 books it into `booked`. Returns (in every
// lane) whether the step is skipped: the run diverged before, or this step's loss is not finite.
__device__ __forceinline__ bool bookStepLoss(cg::cluster_group& cluster, const double* lossPart, int C, int rank, int N,
                                             StepState& booked, bool diverged) {
  const int lane = threadIdx.x & 31;
  double total = 0, right = 0;
  if (lane < C) {
    const double* other = cluster.map_shared_rank(lossPart, lane);
    total = other[0];
    right = other[1];
  }
  for (int o = 16; o > 0; o >>= 1) {
    total += __shfl_xor_sync(0xffffffffu, total, o);
    right += __shfl_xor_sync(0xffffffffu, right, o);
  }
  if (lane == 0 && rank == 0) {
    recordBatchLoss(&booked, total, (long long)right, N, double(N));
    booked.globalStep += 1;
    booked.epochStep += 1;
  }
  return diverged || !isfinite(total / N);
}
#endif

}  // namespace nnstudio::cuda::mlp
