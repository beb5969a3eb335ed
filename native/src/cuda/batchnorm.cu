// Batch normalisation over channels and the global average pool, as cpu/batchnorm.cpp and cpu/pool.cpp:
// x (N, C, S), S = H*W (1 for a flat input). The batch statistics are reduced in two steps, so that many
// blocks share a channel: each block (p, c) folds a slice of channel c's N*S values into (count, mean,
// M2) with Welford's update in fp32, then one thread per channel combines the P slices in double (Chan's
// formula): no cancellation when the mean is large against the spread, and deterministic (no atomics).
// The backward pass reduces sum(dy) and sum(dy * xhat) the same way, then one elementwise pass writes dx.
#include <algorithm>
#include <cmath>

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

// value m of channel c (m in [0, N*S))
__device__ __forceinline__ int64_t indexOf(int64_t m, int c, int C, int S) {
  const int64_t n = m / S, s = m - n * S;
  return (n * C + c) * S + s;
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

// block (p, c): Welford over its slice of channel c; partial (count, mean, M2) at partials[(c * P + p) * 3]
__global__ void statsPartials(float* partials, const float* x, int N, int C, int S, int P) {
  startAfterPreviousKernel();
  const int c = blockIdx.y, p = blockIdx.x;
  const int64_t M = int64_t(N) * S, per = (M + P - 1) / P;
  const int64_t begin = p * per < M ? p * per : M, end = begin + per < M ? begin + per : M;
  float count = 0, mean = 0, m2 = 0;
  for (int64_t m = begin + threadIdx.x; m < end; m += blockDim.x) {
    const float v = x[indexOf(m, c, C, S)];
    count += 1.0f;
    const float d = v - mean;
    mean += d / count;
    m2 += d * (v - mean);
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

// one thread per channel: combine the slices, keep (mean, 1/sqrt(var + eps)), move the running statistics
__global__ void statsFinish(float* saved, float* runMean, float* runVar, const float* partials, int C, int P,
                            float eps, float momentum) {
  startAfterPreviousKernel();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  double count = 0, mean = 0, m2 = 0;
  for (int p = 0; p < P; ++p) {
    const float* q = partials + (int64_t(c) * P + p) * 3;
    const double countB = q[0];
    if (countB == 0) continue;
    const double total = count + countB, delta = double(q[1]) - mean;
    mean += delta * countB / total;
    m2 += double(q[2]) + delta * delta * count * countB / total;
    count = total;
  }
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

// y = (x - mean) * invStd * gamma + beta
__global__ void normalise(float* y, const float* x, const float* saved, const float* gamma, const float* beta,
                          int64_t total, int C, int S) {
  startAfterPreviousKernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int((i / S) % C);
    const float scale = (gamma ? gamma[c] : 1.0f) * saved[C + c];
    y[i] = (x[i] - saved[c]) * scale + (beta ? beta[c] : 0.0f);
  }
}

// block (p, c): sum(dy) and sum(dy * xhat) over its slice -> partials[(c * P + p) * 2]
__global__ void gradPartials(float* partials, const float* dy, const float* x, const float* saved, int N, int C, int S,
                             int P) {
  startAfterPreviousKernel();
  const int c = blockIdx.y, p = blockIdx.x;
  const int64_t M = int64_t(N) * S, per = (M + P - 1) / P;
  const int64_t begin = p * per < M ? p * per : M, end = begin + per < M ? begin + per : M;
  const float mean = saved[c], invStd = saved[C + c];
  float sumDy = 0, sumDyXhat = 0;
  for (int64_t m = begin + threadIdx.x; m < end; m += blockDim.x) {
    const int64_t i = indexOf(m, c, C, S);
    const float g = dy[i];
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

// one thread per channel: dGamma, dBeta and the means dx needs (means[c], means[C + c]; 0 in evaluation)
__global__ void gradFinish(float* dGamma, float* dBeta, float* means, const float* partials, int C, int P, int64_t M,
                           bool training) {
  startAfterPreviousKernel();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  double sumDy = 0, sumDyXhat = 0;
  for (int p = 0; p < P; ++p) {
    sumDy += partials[(int64_t(c) * P + p) * 2];
    sumDyXhat += partials[(int64_t(c) * P + p) * 2 + 1];
  }
  if (dGamma) dGamma[c] = float(sumDyXhat);
  if (dBeta) dBeta[c] = float(sumDy);
  means[c] = training ? float(sumDy / double(M)) : 0.0f;
  means[C + c] = training ? float(sumDyXhat / double(M)) : 0.0f;
}

// dx = gamma invStd (dy - mean(dy) - xhat mean(dy xhat))
__global__ void gradInput(float* dx, const float* dy, const float* x, const float* saved, const float* gamma,
                          const float* means, int64_t total, int C, int S) {
  startAfterPreviousKernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int((i / S) % C);
    const float invStd = saved[C + c];
    const float xhat = (x[i] - saved[c]) * invStd;
    dx[i] = (gamma ? gamma[c] : 1.0f) * invStd * (dy[i] - means[c] - xhat * means[C + c]);
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

}  // namespace

size_t batchnorm_workspace(int maxN, int C, int S) {
  return size_t(C) * size_t(slicesFor(maxN, C, S)) * 3 + 2 * size_t(C);
}

void batchnorm_forward_train(cudaStream_t stream, float* y, const float* x, float* saved, float* runMean, float* runVar,
                             const BatchNormArgs& a, int maxN, float* workspace) {
  if (a.N <= 0) return;
  const int P = slicesFor(maxN, a.C, a.S);
  launchKernel("batchnorm statistics", statsPartials, dim3(unsigned(P), unsigned(a.C)), kThreads, 0, stream, workspace,
               x, a.N, a.C, a.S, P);
  launchKernel("batchnorm statistics (combine)", statsFinish, blocksFor(a.C, kThreads), kThreads, 0, stream, saved,
               runMean, runVar, static_cast<const float*>(workspace), a.C, P, a.eps, a.momentum);
  const int64_t total = int64_t(a.N) * a.C * a.S;
  launchKernel("batchnorm forward", normalise, gridFor(total), kThreads, 0, stream, y, x,
               static_cast<const float*>(saved), a.gamma, a.beta, total, a.C, a.S);
}

void batchnorm_forward_eval(cudaStream_t stream, float* y, const float* x, float* saved, const float* runMean,
                            const float* runVar, const BatchNormArgs& a) {
  if (a.N <= 0) return;
  launchKernel("batchnorm running statistics", statsFromRunning, blocksFor(a.C, kThreads), kThreads, 0, stream, saved,
               runMean, runVar, a.C, a.eps);
  const int64_t total = int64_t(a.N) * a.C * a.S;
  launchKernel("batchnorm forward (evaluation)", normalise, gridFor(total), kThreads, 0, stream, y, x,
               static_cast<const float*>(saved), a.gamma, a.beta, total, a.C, a.S);
}

void batchnorm_backward(cudaStream_t stream, float* dx, float* dGamma, float* dBeta, const float* dy, const float* x,
                        const float* saved, const BatchNormArgs& a, bool training, int maxN, float* workspace) {
  if (a.N <= 0) return;
  const int P = slicesFor(maxN, a.C, a.S);
  float* means = workspace + size_t(a.C) * size_t(P) * 3;  // after the largest partials (batchnorm_workspace)
  launchKernel("batchnorm backward (sums)", gradPartials, dim3(unsigned(P), unsigned(a.C)), kThreads, 0, stream,
               workspace, dy, x, saved, a.N, a.C, a.S, P);
  launchKernel("batchnorm backward (combine)", gradFinish, blocksFor(a.C, kThreads), kThreads, 0, stream, dGamma, dBeta,
               means, static_cast<const float*>(workspace), a.C, P, int64_t(a.N) * a.S, training);
  if (!dx) return;
  const int64_t total = int64_t(a.N) * a.C * a.S;
  launchKernel("batchnorm backward (input)", gradInput, gridFor(total), kThreads, 0, stream, dx, dy, x, saved, a.gamma,
               static_cast<const float*>(means), total, a.C, a.S);
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
