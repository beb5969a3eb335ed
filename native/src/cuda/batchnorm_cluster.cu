// The batchnorm in one launch each way: grid (K, C), a cluster of the K blocks along x per channel c.
// Block r takes slice r of the channel's N*S values and reduces it exactly as the two-pass kernels reduce a
// slice (batchnorm_math.cuh); the cluster then waits once, and warp 0 of every block combines the K slices
// read from the blocks' shared memory (distributed shared memory), in rank order, in double: every block
// gets the same statistics, block 0 stores them. Each block then normalises (or writes dx for) the slice it
// has just read, from L1 or L2. Against statistics, combine and normalise apart (three launches, the
// tensor read twice from memory) this saves two launches and a pass each way; it is what made the ResNet
// presets' batchnorms cheaper (docs/BENCHMARKS.md). Only machine code for sm_90+ holds the body: the host
// launches it only where the probe (batchnormClusterLimit, at DeviceCaps time) found clusters co-scheduled.
#include <cooperative_groups.h>

#include <cstdint>
#include <initializer_list>

#include "cuda/batchnorm_cluster.h"
#include "cuda/batchnorm_math.cuh"
#include "cuda/check.h"
#include "cuda/cluster_probes.h"
#include "cuda/device_caps.h"
#include "cuda/kernel_choice.h"
#include "cuda/launch.cuh"

// The passes before sm_90 compile the cluster kernels empty, leaving their device helpers unreferenced there:
// expected, not worth a warning.
#pragma nv_diag_suppress 177

namespace nnstudio::cuda {

namespace {

using namespace bn;
constexpr int kThreads = kBatchnormClusterThreads;
constexpr int kMaxBlocks = 16;  // a cluster (more than 8: non-portable, where the GPU schedules it)

// f(normalised x) over the block's pool windows of channel c (its share of them; two a thread with pairs)
template <typename Index>
__device__ __forceinline__ void poolSlice(const BatchNormPool& pool, const float* x, int N, int C, int c, int K,
                                          int rank, bool pairs, float mean, float scale, float shift, ActivationFn fn,
                                          float alpha) {
  const PoolGeometry& g = pool.geometry;
  const Index planeWindows = Index(g.OH * g.OW);
  const int step = pairs ? 2 : 1;  // OW is even with pairs: a pair never leaves its row
  const Slice<Index> mine = sliceOf(Index(N) * planeWindows, K, rank, step);
  for (Index u = mine.begin + step * Index(threadIdx.x); u < mine.end; u += step * kThreads) {
    const Index n = u / planeWindows;
    const Index w = (n * Index(C) + Index(c)) * planeWindows + (u - n * planeWindows);
    if (pairs)
      poolWindowPair(pool, x, w, C, mean, scale, shift, fn, alpha);
    else
      poolWindow(pool, x, w, C, mean, scale, shift, fn, alpha);
  }
}

// f(normalised x) over the block's slice of channel c
template <typename Index>
__device__ __forceinline__ void normaliseSlice(float* y, const float* x, Slice<Index> mine, int C, int S, int c,
                                               bool quads, float mean, float scale, float shift, ActivationFn fn,
                                               float alpha) {
  const auto value = [&](float v) { return normalisedValue(v, mean, scale, shift, fn, alpha); };
  if (quads) {
    for (Index m = mine.begin + 4 * Index(threadIdx.x); m < mine.end; m += 4 * kThreads) {
      const Index i = indexOf(m, c, C, S);
      const float4 v = load4(x + i);
      *reinterpret_cast<float4*>(y + i) = make_float4(value(v.x), value(v.y), value(v.z), value(v.w));
    }
    return;
  }
  for (Index m = mine.begin + threadIdx.x; m < mine.end; m += kThreads) {
    const Index i = indexOf(m, c, C, S);
    y[i] = value(x[i]);
  }
}

// What dx needs of the channel: its statistics, gamma and the two gradient means
struct DxTerms {
  float mean, invStd, gamma, meanG, meanGXhat;
};

// The gradient's inputs of a backward: dy or the fused pool's, the activation's output, and the loads' shape
struct GradSource {
  const float* dy;
  const float* gate;
  BatchNormPool pool;
  ActivationFn fn;
  float alpha;
  bool quads, pairs;
};

// dx of the quad at value m (flat element i) of channel c
template <bool Pooled, typename Index>
__device__ __forceinline__ float4 quadInputGradient(const GradSource& src, const float* x, Index m, Index i, int C,
                                                    int S, int c, const DxTerms& t) {
  const float4 g = gradientQuad<Pooled>(src.dy, src.gate, src.pool, i, m / Index(S), c, C, S, src.fn, src.alpha,
                                        src.pairs);
  const float4 v = load4(x + i);
  const auto of = [&](float gk, float vk) { return inputGradientOf(gk, vk, t.mean, t.invStd, t.gamma, t.meanG, t.meanGXhat); };
  return make_float4(of(g.x, v.x), of(g.y, v.y), of(g.z, v.z), of(g.w, v.w));
}

// dx over the block's slice of channel c
template <bool Pooled, typename Index>
__device__ __forceinline__ void inputGradientSlice(float* dx, const GradSource& src, const float* x, Slice<Index> mine,
                                                   int C, int S, int c, const DxTerms& t) {
  if (src.quads) {
    for (Index m = mine.begin + 4 * Index(threadIdx.x); m < mine.end; m += 4 * kThreads) {
      const Index i = indexOf(m, c, C, S);
      *reinterpret_cast<float4*>(dx + i) = quadInputGradient<Pooled>(src, x, m, i, C, S, c, t);
    }
    return;
  }
  for (Index m = mine.begin + threadIdx.x; m < mine.end; m += kThreads) {
    const Index i = indexOf(m, c, C, S);
    dx[i] = inputGradient<Pooled>(src.dy, x, t.mean, t.invStd, t.gamma, t.meanG, t.meanGXhat, i, m / Index(S), c, C, S,
                                  src.gate, src.fn, src.alpha, src.pool);
  }
}

// ---- the conv before's weight gradient (BatchNormConvWgrad: one input channel, 3x3, stride 1) ----

constexpr int kConvTaps = 9;
constexpr int kConvSums = kConvTaps + 1;  // the taps' sums, then the bias's

// This thread's share of the conv's weight and bias gradient over the block's slice of channel c: dx of each
// quad (never stored) times the image values under each tap. The quads lie in one output row (OW % 4 == 0).
template <bool Pooled, typename Index>
__device__ __forceinline__ void convWgradSlice(float (&sums)[kConvSums], const GradSource& src, const float* x,
                                               Slice<Index> mine, int C, int S, int c, const DxTerms& t,
                                               const BatchNormConvWgrad& conv) {
  const int OW = conv.OW;
  for (Index m = mine.begin + 4 * Index(threadIdx.x); m < mine.end; m += 4 * kThreads) {
    const Index i = indexOf(m, c, C, S);
    const float4 d = quadInputGradient<Pooled>(src, x, m, i, C, S, c, t);
    const Index n = m / Index(S);
    const int s = int(m - n * Index(S)), oy = s / OW, ox = s - oy * OW;
    const float* image = conv.image + n * Index(conv.H) * Index(conv.W);
    const int left = ox - conv.padLeft;  // the image column under tap kx = 0 of the quad's first output
#pragma unroll
    for (int ky = 0; ky < 3; ++ky) {
      const int iy = oy - conv.padTop + ky;
      if (iy < 0 || iy >= conv.H) continue;  // a padding row: its taps add nothing
      float v[6];
#pragma unroll
      for (int j = 0; j < 6; ++j) v[j] = left + j >= 0 && left + j < conv.W ? image[iy * conv.W + left + j] : 0.0f;
#pragma unroll
      for (int kx = 0; kx < 3; ++kx) {
        float& sum = sums[ky * 3 + kx];
        sum = fmaf(d.x, v[kx], sum);
        sum = fmaf(d.y, v[kx + 1], sum);
        sum = fmaf(d.z, v[kx + 2], sum);
        sum = fmaf(d.w, v[kx + 3], sum);
      }
    }
    sums[kConvTaps] += (d.x + d.y) + (d.z + d.w);
  }
}

// The block's kConvSums sums into `block` (shared): each warp's by a fixed shuffle tree, then the warps' in order
__device__ __forceinline__ void blockConvSums(float* block, const float (&sums)[kConvSums]) {
  __shared__ float perWarp[kThreads / 32][kConvSums];
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
#pragma unroll
  for (int k = 0; k < kConvSums; ++k) {
    float v = sums[k];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) perWarp[warp][k] = v;
  }
  __syncthreads();
  if (threadIdx.x < kConvSums) {
    float total = 0;
    for (int w = 0; w < kThreads / 32; ++w) total += perWarp[w][threadIdx.x];
    block[threadIdx.x] = total;
  }
}

template <bool Pooled, typename Index>
__global__ void __launch_bounds__(kThreads)
    clusterForward(float* y, BatchNormPool pool, const float* x, float* saved, float* runMean, float* runVar,
                   const float* gamma, const float* beta, int N, int C, int S, float eps, float momentum,
                   ActivationFn fn, float alpha, bool quads, bool pairs) {
  startAfterPreviousKernel();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int K = int(gridDim.x), rank = int(cluster.block_rank()), c = int(blockIdx.y);
  __shared__ float triple[3];  // this block's slice, read by every block of the cluster
  __shared__ float stats[2];   // the channel's mean and inverse std
  const Slice<Index> mine = sliceOf(Index(N) * Index(S), K, rank, quads ? 4 : 1);
  sliceStats<kThreads>(triple, x, C, S, c, mine, quads);
  cluster.sync();
  if (threadIdx.x < 32) {
    double count = 0, mean = 0, m2 = 0;
    if (int(threadIdx.x) < K) addSlice(count, mean, m2, cluster.map_shared_rank(triple, threadIdx.x));
    warpCombine(count, mean, m2);
    if (threadIdx.x == 0) {
      const float2 ms = meanInvStd(count, mean, m2, eps);
      stats[0] = ms.x;
      stats[1] = ms.y;
      if (rank == 0) {
        saved[c] = ms.x;
        saved[C + c] = ms.y;
        if (runMean && runVar) moveRunning(runMean, runVar, c, count, mean, m2, momentum);
      }
    }
  }
  cluster.sync();  // the statistics are in `stats`, and no block leaves while another still reads its triple
  const float scale = (gamma ? gamma[c] : 1.0f) * stats[1], shift = beta ? beta[c] : 0.0f;
  if (Pooled)
    poolSlice<Index>(pool, x, N, C, c, K, rank, pairs, stats[0], scale, shift, fn, alpha);
  else
    normaliseSlice(y, x, mine, C, S, c, quads, stats[0], scale, shift, fn, alpha);
#else
  __trap();  // never launched: the host uses clusters only where they exist
#endif
}

template <bool Pooled, typename Index, bool ConvWgrad>
__global__ void __launch_bounds__(kThreads)
    clusterBackward(float* dx, float* dGamma, float* dBeta, const float* dy, const float* x, const float* saved,
                    const float* gamma, int N, int C, int S, bool training, const float* gate, ActivationFn fn,
                    float alpha, BatchNormPool pool, bool quads, bool pairs, BatchNormConvWgrad conv) {
  startAfterPreviousKernel();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int K = int(gridDim.x), rank = int(cluster.block_rank()), c = int(blockIdx.y);
  const float mean = saved[c], invStd = saved[C + c];
  const Slice<Index> mine = sliceOf(Index(N) * Index(S), K, rank, quads ? 4 : 1);
  __shared__ float sums[2];   // this block's sum(g) and sum(g xhat), read by every block of the cluster
  __shared__ float means[2];  // the channel's mean(g) and mean(g xhat) (0 in evaluation)
  sliceGradSums<kThreads, Pooled>(sums, dy, x, mean, invStd, C, S, c, mine, gate, fn, alpha, pool, quads, pairs);
  cluster.sync();
  if (threadIdx.x < 32) {
    double sumDy = 0, sumDyXhat = 0;
    if (int(threadIdx.x) < K) {
      const float* other = cluster.map_shared_rank(sums, threadIdx.x);
      sumDy = other[0];
      sumDyXhat = other[1];
    }
    sumDy = warpSum(sumDy);
    sumDyXhat = warpSum(sumDyXhat);
    if (threadIdx.x == 0) {  // block 0 stores dGamma and dBeta
      const float2 gradMeans = finishGradSums(sumDy, sumDyXhat, double(N) * double(S), training,
                                              rank == 0 ? dGamma : nullptr, rank == 0 ? dBeta : nullptr, c);
      means[0] = gradMeans.x;
      means[1] = gradMeans.y;
    }
  }
  cluster.sync();  // the means are in `means`, and no block leaves while another still reads its sums
  const GradSource src{dy, gate, pool, fn, alpha, quads, pairs};
  const DxTerms terms{mean, invStd, gamma ? gamma[c] : 1.0f, means[0], means[1]};
  if (ConvWgrad) {  // dx only feeds the conv's weight gradient: summed here, never stored
    float convSums[kConvSums] = {};
    convWgradSlice<Pooled, Index>(convSums, src, x, mine, C, S, c, terms, conv);
    __shared__ float blockSums[kConvSums];  // read by block 0 of the cluster
    blockConvSums(blockSums, convSums);
    cluster.sync();
    if (rank == 0 && threadIdx.x < kConvSums) {
      double total = 0;  // the slices in rank order
      for (int r = 0; r < K; ++r) total += cluster.map_shared_rank(blockSums, r)[threadIdx.x];
      if (threadIdx.x < kConvTaps) conv.dWeight[c * kConvTaps + int(threadIdx.x)] = float(total);
      else if (conv.dBias) conv.dBias[c] = float(total);
    }
    cluster.sync();  // no block leaves while block 0 still reads its sums
  } else if (dx) {
    inputGradientSlice<Pooled, Index>(dx, src, x, mine, C, S, c, terms);
  }
#else
  __trap();  // never launched: the host uses clusters only where they exist
#endif
}

using ForwardFn = void (*)(float*, BatchNormPool, const float*, float*, float*, float*, const float*, const float*, int,
                           int, int, float, float, ActivationFn, float, bool, bool);
using BackwardFn = void (*)(float*, float*, float*, const float*, const float*, const float*, const float*, int, int,
                            int, bool, const float*, ActivationFn, float, BatchNormPool, bool, bool,
                            BatchNormConvWgrad);

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }
bool aligned16(const void* p) { return aligned(p, 16); }

// quads (batchnorm_math.cuh) where the planes and every buffer read or written a value at a time allow them:
// the buffers come from cudaMalloc (256-byte aligned) in a network, so in practice wherever S % 4 == 0
bool useQuads(int S, std::initializer_list<const void*> buffers) {
  if (kernelOverrides().batchnormQuads == Switch::Off || S % 4 != 0) return false;
  for (const void* p : buffers)
    if (p && !aligned16(p)) return false;
  return true;
}

// window pairs (batchnorm_math.cuh) where the fused pool's geometry and buffers allow them, with quads
bool usePairs(bool quads, const BatchNormPool* pool) {
  return quads && pool && kernelOverrides().batchnormPairs != Switch::Off && poolPairsFit(pool->geometry) &&
         aligned(pool->pooled, 8) && aligned(pool->argmax, 8) && aligned(pool->dPooled, 8);
}

ForwardFn forwardFor(bool pooled, bool narrowIndex) {
  if (pooled) return narrowIndex ? clusterForward<true, uint32_t> : clusterForward<true, int64_t>;
  return narrowIndex ? clusterForward<false, uint32_t> : clusterForward<false, int64_t>;
}

template <bool ConvWgrad>
BackwardFn backwardFor(bool pooled, bool narrowIndex) {
  if (pooled)
    return narrowIndex ? clusterBackward<true, uint32_t, ConvWgrad> : clusterBackward<true, int64_t, ConvWgrad>;
  return narrowIndex ? clusterBackward<false, uint32_t, ConvWgrad> : clusterBackward<false, int64_t, ConvWgrad>;
}

BackwardFn backwardFor(bool pooled, bool narrowIndex, bool convWgrad) {
  return convWgrad ? backwardFor<true>(pooled, narrowIndex) : backwardFor<false>(pooled, narrowIndex);
}

// visit(kernel) for every instance of the two kernels (typed: the forward's and the backward's differ)
template <class Visit>
void forEachClusterKernel(Visit&& visit) {
  for (bool pooled : {false, true})
    for (bool narrowIndex : {false, true}) {
      visit(forwardFor(pooled, narrowIndex));
      for (bool convWgrad : {false, true}) visit(backwardFor(pooled, narrowIndex, convWgrad));
    }
}

// Can clusters of `blocks` blocks of every instance run?
bool clustersFit(int blocks) {
  bool fit = true;
  forEachClusterKernel([&](auto kernel) { fit = fit && clusterFits(kernel, kThreads, 0, blocks); });
  return fit;
}

}  // namespace

// ---- the device: the largest cluster, once per device (DeviceCaps) ----

int batchnormClusterLimit(bool clusterLaunch) {
  // the cluster code exists only in machine code for sm_90+
  if (!clusterLaunch || !runsSm90Code(forwardFor(false, true))) return 1;
  forEachClusterKernel([](auto kernel) {
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
      cudaGetLastError();  // then only portable sizes fit
  });
  for (int blocks = kMaxBlocks; blocks >= 2; blocks /= 2)
    if (clustersFit(blocks)) return blocks;
  return 1;
}

bool batchnormConvWgradFits(const ConvGeometry& g, int maxN) {
  return chooseBatchnormConvWgrad(currentDeviceCaps(), kernelOverrides(), maxN, g);
}

void batchnorm_cluster_forward(cudaStream_t stream, float* y, const float* x, float* saved, float* runMean,
                               float* runVar, const BatchNormArgs& a, int K, const BatchNormActivation& act) {
  const bool quads = useQuads(a.S, {x, act.pool ? nullptr : y});
  launchClusterKernel("batchnorm forward (cluster)", forwardFor(act.pool != nullptr, batchnormNarrowIndex(a)),
                      dim3(unsigned(K), unsigned(a.C)), kThreads, 0, stream, K, y, act.pool ? *act.pool : BatchNormPool{},
                      x, saved, runMean, runVar, a.gamma, a.beta, a.N, a.C, a.S, a.eps, a.momentum, act.fn, act.alpha,
                      quads, usePairs(quads, act.pool));
}

void batchnorm_cluster_backward(cudaStream_t stream, float* dx, float* dGamma, float* dBeta, const float* dy,
                                const float* x, const float* saved, const BatchNormArgs& a, bool training, int K,
                                const BatchNormActivation& act) {
  const bool quads = useQuads(a.S, {x, dx, act.pool ? nullptr : dy, act.pool ? nullptr : act.y});
  if (act.convWgrad && (!quads || dx || act.convWgrad->OW % 4 != 0))
    throw EngineError("batchnorm backward: the conv's weight gradient needs quads in whole rows and no dx");
  launchClusterKernel("batchnorm backward (cluster)",
                      backwardFor(act.pool != nullptr, batchnormNarrowIndex(a), act.convWgrad != nullptr),
                      dim3(unsigned(K), unsigned(a.C)), kThreads, 0, stream, K, dx, dGamma, dBeta, dy, x, saved,
                      a.gamma, a.N, a.C, a.S, training, act.y, act.fn, act.alpha,
                      act.pool ? *act.pool : BatchNormPool{}, quads, usePairs(quads, act.pool),
                      act.convWgrad ? *act.convWgrad : BatchNormConvWgrad{});
}

}  // namespace nnstudio::cuda
