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
#include <algorithm>
#include <cmath>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

namespace {

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

// value m of channel c (m in [0, N*S)); Index: uint32_t when N*C*S < 2^32, else int64_t
template <typename Index>
__device__ __forceinline__ Index indexOf(Index m, int c, int C, int S) {
  const Index n = m / Index(S), s = m - n * Index(S);
  return (n * Index(C) + Index(c)) * Index(S) + s;
}

// the channel of flat element i of an (N, C, S) tensor
template <typename Index>
__device__ __forceinline__ int channelOf(Index i, int C, int S) {
  return int((i / Index(S)) % Index(C));
}

// A warp's lanes hold parts (count, mean, M2) in double; lane 0 ends with the whole (a fixed tree: deterministic).
__device__ __forceinline__ void warpCombine(double& count, double& mean, double& m2) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const double countB = __shfl_down_sync(0xffffffffu, count, offset);
    const double meanB = __shfl_down_sync(0xffffffffu, mean, offset);
    const double m2B = __shfl_down_sync(0xffffffffu, m2, offset);
    const double total = count + countB;
    if (total > 0) {
      const double delta = meanB - mean;
      mean += delta * countB / total;
      m2 += m2B + delta * delta * count * countB / total;
      count = total;
    }
  }
}

__device__ __forceinline__ double warpSum(double value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

// (count, mean, M2) of two parts
__device__ __forceinline__ void combine(float& count, float& mean, float& m2, float countB, float meanB, float m2B) {
  const float total = count + countB;
  if (total == 0.0f) return;
  const float delta = meanB - mean;
  const float wB = countB / total;
  mean += delta * wB;
  m2 += m2B + delta * delta * count * wB;
  count = total;
}

// f((x - mean) * scale + shift), the product and the sum each rounded, as the CPU computes them (left to
// itself the compiler contracts them into an fma in some kernels and not in others): one function for
// every kernel that normalises, so that the pooled forward gives normalise's values bit for bit
__device__ __forceinline__ float normalisedValue(float x, float mean, float scale, float shift, ActivationFn fn,
                                                 float alpha) {
  return activate(__fadd_rn(__fmul_rn(x - mean, scale), shift), fn, alpha);
}

// The gradient at the activation's output, element s (= y * W + x) of plane (n, c) (flat index i), and
// the activation's output there: read as such, or, with a max pool fused after it, from the pool's
// window holding s (its gradient at its argmax, 0 elsewhere; the pooled output is the activation's output
// at the argmax). Pixels past the last window (H or W not a multiple of the size) get 0, as the pool's
// backward writes.
struct GradientAt {
  float dy, y;
};
template <bool Pooled, typename Index>
__device__ __forceinline__ GradientAt gradientAt(const float* dy, const float* gate, const BatchNormPool& pool, Index i,
                                                 Index n, int c, int C, int S) {
  if (!Pooled) return {dy[i], gate ? gate[i] : 0.0f};
  const PoolGeometry& g = pool.geometry;
  const int s = int(i - (n * Index(C) + Index(c)) * Index(S)), iy = s / g.W, ix = s - iy * g.W;
  const int oy = iy / g.size, ox = ix / g.size;
  if (oy >= g.OH || ox >= g.OW) return {0.0f, 0.0f};
  const Index w = ((n * Index(C) + Index(c)) * Index(g.OH) + Index(oy)) * Index(g.OW) + Index(ox);
  if (pool.argmax[w] != c * S + s) return {0.0f, 0.0f};
  return {pool.dPooled[w], pool.pooled[w]};
}

// block (p, c): the triple of its slice of channel c at partials[(c * P + p) * 3]
template <typename Index>
__global__ void statsPartials(float* partials, const float* x, int N, int C, int S, int P) {
  startAfterPreviousKernel();
  const int c = blockIdx.y, p = blockIdx.x;
  const Index M = Index(N) * Index(S), per = (M + Index(P) - 1) / Index(P);
  const Index begin = Index(p) * per < M ? Index(p) * per : M, end = begin + per < M ? begin + per : M;
  const float shift = x[indexOf<Index>(0, c, C, S)];
  float n = 0, sum = 0, squares = 0;  // of the shifted values
  for (Index m = begin + threadIdx.x; m < end; m += blockDim.x) {
    const float d = x[indexOf(m, c, C, S)] - shift;
    n += 1.0f;
    sum += d;
    squares = fmaf(d, d, squares);
  }
  float count = n, mean = 0, m2 = 0;
  if (n > 0) {
    mean = shift + sum / n;
    m2 = fmaxf(squares - sum * (sum / n), 0.0f);
  }
  __shared__ float sc[kThreads], sm[kThreads], s2[kThreads];
  sc[threadIdx.x] = count;
  sm[threadIdx.x] = mean;
  s2[threadIdx.x] = m2;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      float a = sc[threadIdx.x], b = sm[threadIdx.x], q = s2[threadIdx.x];
      combine(a, b, q, sc[threadIdx.x + half], sm[threadIdx.x + half], s2[threadIdx.x + half]);
      sc[threadIdx.x] = a;
      sm[threadIdx.x] = b;
      s2[threadIdx.x] = q;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float* out = partials + (int64_t(c) * P + p) * 3;
    out[0] = sc[0];
    out[1] = sm[0];
    out[2] = s2[0];
  }
}

// one warp per channel: combine the slices, keep (mean, 1/sqrt(var + eps)), move the running statistics
__global__ void statsFinish(float* saved, float* runMean, float* runVar, const float* partials, int C, int P,
                            float eps, float momentum) {
  startAfterPreviousKernel();
  const int c = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (c >= C) return;
  double count = 0, mean = 0, m2 = 0;
  for (int p = lane; p < P; p += 32) {
    const float* q = partials + (int64_t(c) * P + p) * 3;
    const double countB = q[0];
    if (countB == 0) continue;
    const double total = count + countB, delta = double(q[1]) - mean;
    mean += delta * countB / total;
    m2 += double(q[2]) + delta * delta * count * countB / total;
    count = total;
  }
  warpCombine(count, mean, m2);
  if (lane != 0) return;
  const double var = count > 0 ? m2 / count : 0.0;
  saved[c] = float(mean);
  saved[C + c] = float(1.0 / sqrt(var + double(eps)));
  if (runMean && runVar) {
    const double unbiased = count > 1 ? m2 / (count - 1) : var;
    runMean[c] = (1.0f - momentum) * runMean[c] + momentum * float(mean);
    runVar[c] = (1.0f - momentum) * runVar[c] + momentum * float(unbiased);
  }
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

// normalise + f + the max pool after them, a thread per pool window (stride == size): the window's
// values as normalise computes them, scanned as maxpoolForward scans (row-major, strict '>', a NaN wins)
template <typename Index>
__global__ void normalisePool(BatchNormPool pool, const float* x, const float* saved, const float* gamma,
                              const float* beta, Index windows, int C, ActivationFn fn, float alpha) {
  startAfterPreviousKernel();
  const PoolGeometry& g = pool.geometry;
  for (Index w = blockIdx.x * Index(blockDim.x) + threadIdx.x; w < windows; w += Index(gridDim.x) * blockDim.x) {
    const Index plane = w / Index(g.OH * g.OW);  // n * C + c
    const int within = int(w - plane * Index(g.OH * g.OW)), oy = within / g.OW, ox = within - oy * g.OW;
    const int c = int(plane % Index(C));
    const float mean = saved[c], scale = (gamma ? gamma[c] : 1.0f) * saved[C + c], shift = beta ? beta[c] : 0.0f;
    const float* in = x + plane * Index(g.H * g.W);
    const int y0 = oy * g.size, x0 = ox * g.size;
    int32_t bestIndex = y0 * g.W + x0;
    float best = normalisedValue(in[bestIndex], mean, scale, shift, fn, alpha);
    for (int ky = 0; ky < g.size; ++ky)
      for (int kx = 0; kx < g.size; ++kx) {
        const int32_t idx = (y0 + ky) * g.W + x0 + kx;
        const float v = normalisedValue(in[idx], mean, scale, shift, fn, alpha);
        if ((ky | kx) != 0 && (v > best || v != v)) {
          best = v;
          bestIndex = idx;
        }
      }
    pool.pooled[w] = best;
    pool.argmax[w] = c * g.H * g.W + bestIndex;  // counted from the sample's start, as maxpoolForward's
  }
}

// block (p, c): sum(dy) and sum(dy * xhat) over its slice -> partials[(c * P + p) * 2]
template <bool Pooled, typename Index>
__global__ void gradPartials(float* partials, const float* dy, const float* x, const float* saved, int N, int C, int S,
                             int P, const float* gate, ActivationFn fn, float alpha, BatchNormPool pool) {
  startAfterPreviousKernel();
  const int c = blockIdx.y, p = blockIdx.x;
  const Index M = Index(N) * Index(S), per = (M + Index(P) - 1) / Index(P);
  const Index begin = Index(p) * per < M ? Index(p) * per : M, end = begin + per < M ? begin + per : M;
  const float mean = saved[c], invStd = saved[C + c];
  float sumDy = 0, sumDyXhat = 0;
  for (Index m = begin + threadIdx.x; m < end; m += blockDim.x) {
    const Index i = indexOf(m, c, C, S);
    const GradientAt at = gradientAt<Pooled>(dy, gate, pool, i, m / Index(S), c, C, S);
    const float g = gate || Pooled ? gateGradient(at.dy, at.y, fn, alpha) : at.dy;
    sumDy += g;
    sumDyXhat += g * (x[i] - mean) * invStd;
  }
  __shared__ float sa[kThreads], sb[kThreads];
  sa[threadIdx.x] = sumDy;
  sb[threadIdx.x] = sumDyXhat;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      sa[threadIdx.x] += sa[threadIdx.x + half];
      sb[threadIdx.x] += sb[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[(int64_t(c) * P + p) * 2] = sa[0];
    partials[(int64_t(c) * P + p) * 2 + 1] = sb[0];
  }
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
  if (dGamma) dGamma[c] = float(sumDyXhat);
  if (dBeta) dBeta[c] = float(sumDy);
  means[c] = training ? float(sumDy / double(M)) : 0.0f;
  means[C + c] = training ? float(sumDyXhat / double(M)) : 0.0f;
}

// dx = gamma invStd (dy - mean(dy) - xhat mean(dy xhat))
template <bool Pooled, typename Index>
__global__ void gradInput(float* dx, const float* dy, const float* x, const float* saved, const float* gamma,
                          const float* means, Index total, int C, int S, const float* gate, ActivationFn fn, float alpha,
                          BatchNormPool pool) {
  startAfterPreviousKernel();
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < total; i += Index(gridDim.x) * blockDim.x) {
    const int c = channelOf(i, C, S);
    const float invStd = saved[C + c];
    const float xhat = (x[i] - saved[c]) * invStd;
    const GradientAt at = gradientAt<Pooled>(dy, gate, pool, i, i / Index(S) / Index(C), c, C, S);
    const float g = gate || Pooled ? gateGradient(at.dy, at.y, fn, alpha) : at.dy;
    dx[i] = (gamma ? gamma[c] : 1.0f) * invStd * (g - means[c] - xhat * means[C + c]);
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

// 32-bit indices where every index and every loop's step past the end fits
bool narrow(const BatchNormArgs& a) { return int64_t(a.N) * a.C * a.S < (int64_t(1) << 31); }

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
  if (narrow(a)) launchNormalise<uint32_t>(what, stream, y, x, saved, a, act);
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
  const int P = slicesFor(maxN, a.C, a.S);
  launchKernel("batchnorm statistics", narrow(a) ? statsPartials<uint32_t> : statsPartials<int64_t>,
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
  const int P = slicesFor(maxN, a.C, a.S);
  float* means = workspace + size_t(a.C) * size_t(P) * 3;  // after the largest partials (batchnorm_workspace)
  if (narrow(a)) launchGradPartials<uint32_t>(stream, workspace, dy, x, saved, a, P, act);
  else launchGradPartials<int64_t>(stream, workspace, dy, x, saved, a, P, act);
  launchKernel("batchnorm backward (combine)", gradFinish, warpsGridFor(a.C), kThreads, 0, stream, dGamma, dBeta, means,
               static_cast<const float*>(workspace), a.C, P, int64_t(a.N) * a.S, training);
  if (!dx) return;
  if (narrow(a)) launchGradInput<uint32_t>(stream, dx, dy, x, saved, means, a, act);
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
