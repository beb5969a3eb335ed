// Batch normalisation over channels and the global average pool, as cpu/batchnorm.cpp and cpu/pool.cpp:
// x (N, C, S), S = H*W (1 for a flat input). The batch statistics are reduced in two steps, so that many
// blocks share a channel: each thread sums its values of a slice of channel c's N*S values shifted by
// the channel's first value (few values a thread: the shift keeps the sums from cancelling), turns them
// into (count, mean, M2), and block (p, c) combines its threads' triples with Chan's formula; then one
// warp per channel combines the P slices in double, in a fixed order: no cancellation when the mean is
// large against the spread, and deterministic (no atomics). The backward pass reduces sum(dy) and
// sum(dy * xhat) the same way, then one elementwise pass writes dx. Index arithmetic is 32-bit where the
// tensor allows (the elementwise passes and the slices are bound by memory, not by 64-bit divisions).
// A max pool with stride == size may follow the fused activation (BatchNormActivation::pool): the forward
// then writes the pool's output and argmax, never the activation's full tensor, and the backward reads the
// pool's output gradient where the activation's would be (its windows' values at their argmax, 0
// elsewhere), gated from the pooled output, which equals the activation's output there: the same values
// as the three layers' own kernels, with two passes over the full tensor fewer each way.
// Where the chooser gives a channel a cluster of blocks (chooseBatchnormCluster: Hopper and newer, enough
// values a channel), batchnorm_cluster.cu does each direction in one launch instead; the slices' arithmetic
// is shared (batchnorm_math.cuh).
#include <algorithm>
#include <cmath>

#include "cuda/batchnorm_cluster.h"
#include "cuda/batchnorm_math.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernel_choice.h"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

namespace {

using namespace bn;

constexpr int kThreads = 256;
constexpr int kTargetBlocks = 1024;   // the statistics' grid: enough blocks to fill an H100 a few times
constexpr int64_t kMinPerBlock = 2048;  // values per block below which more blocks do not pay

// Slices per channel: a function of the largest batch only, so a captured graph and the workspace agree.
int slicesFor(int maxN, int C, int S) {
  const int64_t M = int64_t(std::max(maxN, 1)) * S;
  const int64_t bySize = (M + kMinPerBlock - 1) / kMinPerBlock;
  const int64_t byGrid = std::max<int64_t>(1, kTargetBlocks / std::max(C, 1));
  return int(std::max<int64_t>(1, std::min<int64_t>({bySize, byGrid, 65535})));
}

// block (p, c): the triple of its slice of channel c at partials[(c * P + p) * 3]
template <typename Index>
__global__ void statsPartials(float* partials, const float* x, int N, int C, int S, int P) {
  startAfterPreviousKernel();
  const int c = blockIdx.y, p = blockIdx.x;
  sliceStats<kThreads>(partials + (int64_t(c) * P + p) * 3, x, C, S, c, sliceOf(Index(N) * Index(S), P, p));
}

// one warp per channel: combine the slices, keep (mean, 1/sqrt(var + eps)), move the running statistics
__global__ void statsFinish(float* saved, float* runMean, float* runVar, const float* partials, int C, int P,
                            float eps, float momentum) {
  startAfterPreviousKernel();
  const int c = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (c >= C) return;
  double count = 0, mean = 0, m2 = 0;
  for (int p = lane; p < P; p += 32) addSlice(count, mean, m2, partials + (int64_t(c) * P + p) * 3);
  warpCombine(count, mean, m2);
  if (lane != 0) return;
  const float2 stats = meanInvStd(count, mean, m2, eps);
  saved[c] = stats.x;
  saved[C + c] = stats.y;
  if (runMean && runVar) moveRunning(runMean, runVar, c, count, mean, m2, momentum);
}

// evaluation: the running statistics as (mean, inverse std)
__global__ void statsFromRunning(float* saved, const float* runMean, const float* runVar, int C, float eps) {
  startAfterPreviousKernel();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  saved[c] = runMean[c];
  saved[C + c] = float(1.0 / sqrt(double(runVar[c]) + double(eps)));
}

// y = f((x - mean) * invStd * gamma + beta), f a fused activation or the identity
template <typename Index>
__global__ void normalise(float* y, const float* x, const float* saved, const float* gamma, const float* beta,
                          Index total, int C, int S, ActivationFn fn, float alpha) {
  startAfterPreviousKernel();
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < total; i += Index(gridDim.x) * blockDim.x) {
    const int c = channelOf(i, C, S);
    const float scale = (gamma ? gamma[c] : 1.0f) * saved[C + c];
    y[i] = normalisedValue(x[i], saved[c], scale, beta ? beta[c] : 0.0f, fn, alpha);
  }
}

// normalise + f + the max pool after them, a thread per pool window (stride == size)
template <typename Index>
__global__ void normalisePool(BatchNormPool pool, const float* x, const float* saved, const float* gamma,
                              const float* beta, Index windows, int C, ActivationFn fn, float alpha) {
  startAfterPreviousKernel();
  const PoolGeometry& g = pool.geometry;
  for (Index w = blockIdx.x * Index(blockDim.x) + threadIdx.x; w < windows; w += Index(gridDim.x) * blockDim.x) {
    const int c = int(w / Index(g.OH * g.OW) % Index(C));
    const float scale = (gamma ? gamma[c] : 1.0f) * saved[C + c];
    poolWindow(pool, x, w, C, saved[c], scale, beta ? beta[c] : 0.0f, fn, alpha);
  }
}

// block (p, c): sum(dy) and sum(dy * xhat) over its slice -> partials[(c * P + p) * 2]
template <bool Pooled, typename Index>
__global__ void gradPartials(float* partials, const float* dy, const float* x, const float* saved, int N, int C, int S,
                             int P, const float* gate, ActivationFn fn, float alpha, BatchNormPool pool) {
  startAfterPreviousKernel();
  const int c = blockIdx.y, p = blockIdx.x;
  sliceGradSums<kThreads, Pooled>(partials + (int64_t(c) * P + p) * 2, dy, x, saved[c], saved[C + c], C, S, c,
                                  sliceOf(Index(N) * Index(S), P, p), gate, fn, alpha, pool);
}

// one warp per channel: dGamma, dBeta and the means dx needs (means[c], means[C + c]; 0 in evaluation)
__global__ void gradFinish(float* dGamma, float* dBeta, float* means, const float* partials, int C, int P, int64_t M,
                           bool training) {
  startAfterPreviousKernel();
  const int c = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (c >= C) return;
  double sumDy = 0, sumDyXhat = 0;
  for (int p = lane; p < P; p += 32) {
    sumDy += partials[(int64_t(c) * P + p) * 2];
    sumDyXhat += partials[(int64_t(c) * P + p) * 2 + 1];
  }
  sumDy = warpSum(sumDy);
  sumDyXhat = warpSum(sumDyXhat);
  if (lane != 0) return;
  const float2 gradMeans = finishGradSums(sumDy, sumDyXhat, double(M), training, dGamma, dBeta, c);
  means[c] = gradMeans.x;
  means[C + c] = gradMeans.y;
}

// dx = gamma invStd (dy - mean(dy) - xhat mean(dy xhat))
template <bool Pooled, typename Index>
__global__ void gradInput(float* dx, const float* dy, const float* x, const float* saved, const float* gamma,
                          const float* means, Index total, int C, int S, const float* gate, ActivationFn fn, float alpha,
                          BatchNormPool pool) {
  startAfterPreviousKernel();
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < total; i += Index(gridDim.x) * blockDim.x) {
    const int c = channelOf(i, C, S);
    dx[i] = inputGradient<Pooled>(dy, x, saved[c], saved[C + c], gamma ? gamma[c] : 1.0f, means[c], means[C + c], i,
                                  i / Index(S) / Index(C), c, C, S, gate, fn, alpha, pool);
  }
}

// one warp per (sample, channel) row of S values
__global__ void globalAvgForward(float* out, const float* in, int64_t rows, int S) {
  startAfterPreviousKernel();
  const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* x = in + row * S;
  float sum = 0;
  for (int s = lane; s < S; s += 32) sum += x[s];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) out[row] = sum / float(S);
}

__global__ void globalAvgBackward(float* dIn, const float* dOut, int64_t total, int S) {
  startAfterPreviousKernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    dIn[i] = dOut[i / S] / float(S);
}

unsigned gridFor(int64_t n) { return unsigned(std::min<int64_t>(blocksFor(n, kThreads), 65535)); }
unsigned warpsGridFor(int channels) { return unsigned(blocksFor(channels, kThreads / 32)); }

// a channel's blocks in one cluster (batchnorm_cluster.cu), or 1: the two-pass kernels
int clusterBlocks(const BatchNormArgs& a, int maxN) {
  return chooseBatchnormCluster(currentDeviceCaps(), kernelOverrides(), maxN, a.C, a.S);
}

template <typename Index>
void launchNormalise(const char* what, cudaStream_t stream, float* y, const float* x, const float* saved,
                     const BatchNormArgs& a, const BatchNormActivation& act) {
  if (act.pool) {
    const PoolGeometry& g = act.pool->geometry;
    const int64_t windows = int64_t(a.N) * a.C * g.OH * g.OW;
    launchKernel(what, normalisePool<Index>, gridFor(windows), kThreads, 0, stream, *act.pool, x, saved, a.gamma, a.beta,
                 Index(windows), a.C, act.fn, act.alpha);
    return;
  }
  const int64_t total = int64_t(a.N) * a.C * a.S;
  launchKernel(what, normalise<Index>, gridFor(total), kThreads, 0, stream, y, x, saved, a.gamma, a.beta, Index(total),
               a.C, a.S, act.fn, act.alpha);
}

void normaliseAny(const char* what, cudaStream_t stream, float* y, const float* x, const float* saved,
                  const BatchNormArgs& a, const BatchNormActivation& act) {
  if (batchnormNarrowIndex(a)) launchNormalise<uint32_t>(what, stream, y, x, saved, a, act);
  else launchNormalise<int64_t>(what, stream, y, x, saved, a, act);
}

template <typename Index>
void launchGradInput(cudaStream_t stream, float* dx, const float* dy, const float* x, const float* saved,
                     const float* means, const BatchNormArgs& a, const BatchNormActivation& act) {
  const int64_t total = int64_t(a.N) * a.C * a.S;
  launchKernel("batchnorm backward (input)", act.pool ? gradInput<true, Index> : gradInput<false, Index>, gridFor(total),
               kThreads, 0, stream, dx, dy, x, saved, a.gamma, means, Index(total), a.C, a.S, act.y, act.fn, act.alpha,
               act.pool ? *act.pool : BatchNormPool{});
}

template <typename Index>
void launchGradPartials(cudaStream_t stream, float* partials, const float* dy, const float* x, const float* saved,
                        const BatchNormArgs& a, int P, const BatchNormActivation& act) {
  launchKernel("batchnorm backward (sums)", act.pool ? gradPartials<true, Index> : gradPartials<false, Index>,
               dim3(unsigned(P), unsigned(a.C)), kThreads, 0, stream, partials, dy, x, saved, a.N, a.C, a.S, P, act.y,
               act.fn, act.alpha, act.pool ? *act.pool : BatchNormPool{});
}

}  // namespace

size_t batchnorm_workspace(int maxN, int C, int S) {
  return size_t(C) * size_t(slicesFor(maxN, C, S)) * 3 + 2 * size_t(C);
}

void batchnorm_forward_train(cudaStream_t stream, float* y, const float* x, float* saved, float* runMean, float* runVar,
                             const BatchNormArgs& a, int maxN, float* workspace, const BatchNormActivation& act) {
  if (a.N <= 0) return;
  if (const int K = clusterBlocks(a, maxN); K > 1)
    return batchnorm_cluster_forward(stream, y, x, saved, runMean, runVar, a, K, act);
  const int P = slicesFor(maxN, a.C, a.S);
  launchKernel("batchnorm statistics", batchnormNarrowIndex(a) ? statsPartials<uint32_t> : statsPartials<int64_t>,
               dim3(unsigned(P), unsigned(a.C)), kThreads, 0, stream, workspace, x, a.N, a.C, a.S, P);
  launchKernel("batchnorm statistics (combine)", statsFinish, warpsGridFor(a.C), kThreads, 0, stream, saved, runMean,
               runVar, static_cast<const float*>(workspace), a.C, P, a.eps, a.momentum);
  normaliseAny("batchnorm forward", stream, y, x, saved, a, act);
}

void batchnorm_forward_eval(cudaStream_t stream, float* y, const float* x, float* saved, const float* runMean,
                            const float* runVar, const BatchNormArgs& a, const BatchNormActivation& act) {
  if (a.N <= 0) return;
  launchKernel("batchnorm running statistics", statsFromRunning, blocksFor(a.C, kThreads), kThreads, 0, stream, saved,
               runMean, runVar, a.C, a.eps);
  normaliseAny("batchnorm forward (evaluation)", stream, y, x, saved, a, act);
}

void batchnorm_backward(cudaStream_t stream, float* dx, float* dGamma, float* dBeta, const float* dy, const float* x,
                        const float* saved, const BatchNormArgs& a, bool training, int maxN, float* workspace,
                        const BatchNormActivation& act) {
  if (a.N <= 0) return;
  if (const int K = clusterBlocks(a, maxN); K > 1)
    return batchnorm_cluster_backward(stream, dx, dGamma, dBeta, dy, x, saved, a, training, K, act);
  if (act.convWgrad) throw EngineError("batchnorm backward: a conv's weight gradient needs the cluster kernels");
  const int P = slicesFor(maxN, a.C, a.S);
  float* means = workspace + size_t(a.C) * size_t(P) * 3;  // after the largest partials (batchnorm_workspace)
  if (batchnormNarrowIndex(a)) launchGradPartials<uint32_t>(stream, workspace, dy, x, saved, a, P, act);
  else launchGradPartials<int64_t>(stream, workspace, dy, x, saved, a, P, act);
  launchKernel("batchnorm backward (combine)", gradFinish, warpsGridFor(a.C), kThreads, 0, stream, dGamma, dBeta, means,
               static_cast<const float*>(workspace), a.C, P, int64_t(a.N) * a.S, training);
  if (!dx) return;
  if (batchnormNarrowIndex(a)) launchGradInput<uint32_t>(stream, dx, dy, x, saved, means, a, act);
  else launchGradInput<int64_t>(stream, dx, dy, x, saved, means, a, act);
}

void global_avgpool_forward(cudaStream_t stream, float* out, const float* in, int N, int C, int S) {
  const int64_t rows = int64_t(N) * C;
  if (rows == 0) return;
  launchKernel("global average pool", globalAvgForward, blocksFor(rows, kThreads / 32), kThreads, 0, stream, out, in,
               rows, S);
}

void global_avgpool_backward(cudaStream_t stream, float* dIn, const float* dOut, int N, int C, int S) {
  const int64_t total = int64_t(N) * C * S;
  if (total == 0) return;
  launchKernel("global average pool backward", globalAvgBackward, gridFor(total), kThreads, 0, stream, dIn, dOut, total,
               S);
}

}  // namespace nnstudio::cuda
