// The per-element and per-slice arithmetic of the batchnorm kernels, shared by the two-pass kernels
// (batchnorm.cu: slices reduced by one launch, combined by a second) and the cluster kernels
// (batchnorm_cluster.cu: a channel's slices in one thread-block cluster, combined through distributed
// shared memory). Both call the same functions in the same order, so a slice's sums, and the combine of a
// given set of slices, are the same floats either way.
#pragma once

#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/kernels.h"
#include "cuda/max_pool_order.cuh"

namespace nnstudio::cuda::bn {

// value m of channel c (m in [0, N*S)); Index: uint32_t when N*C*S < 2^31, else int64_t
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

// slice p of P of a channel's M values: [begin, end), the last slices possibly empty; with `align` 4 the
// bounds are multiples of 4 (quads below)
template <typename Index>
struct Slice {
  Index begin, end;
};
template <typename Index>
__device__ __forceinline__ Slice<Index> sliceOf(Index M, int P, int p, int align = 1) {
  const Index per = ((M + Index(P) - 1) / Index(P) + Index(align) - 1) / Index(align) * Index(align);
  const Index begin = Index(p) * per < M ? Index(p) * per : M;
  return {begin, begin + per < M ? begin + per : M};
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

// a lane's running (count, mean, M2) in double, plus one slice's float triple (skipped when empty)
__device__ __forceinline__ void addSlice(double& count, double& mean, double& m2, const float* triple) {
  const double countB = triple[0];
  if (countB == 0) return;
  const double total = count + countB, delta = double(triple[1]) - mean;
  mean += delta * countB / total;
  m2 += double(triple[2]) + delta * delta * count * countB / total;
  count = total;
}

// (count, mean, M2) of two parts, in float (a block's threads)
__device__ __forceinline__ void combine(float& count, float& mean, float& m2, float countB, float meanB, float m2B) {
  const float total = count + countB;
  if (total == 0.0f) return;
  const float delta = meanB - mean;
  const float wB = countB / total;
  mean += delta * wB;
  m2 += m2B + delta * delta * count * wB;
  count = total;
}

// Quads: a thread takes 4 consecutive values of a plane at a time (S a multiple of 4, slices aligned to 4,
// buffers to 16 bytes), loaded as one float4: 4 times the bytes in flight a load. Which thread sums which
// values, in which order, then depends only on `quads`, not on how a value is loaded (the pooled
// backward gathers its 4 one by one, in the same order, and gets the same sums).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// The triple (count, mean, M2) of slice [begin, end) of channel c, into triple[0..2] (thread 0 writes it):
// each thread sums its values shifted by the channel's first value (few values a thread: the shift keeps
// the sums from cancelling), then the block combines its threads' triples in a fixed tree.
template <int Threads, typename Index>
__device__ __forceinline__ void sliceStats(float* triple, const float* x, int C, int S, int c, Slice<Index> slice,
                                           bool quads = false) {
  const float shift = x[indexOf<Index>(0, c, C, S)];
  float n = 0, sum = 0, squares = 0;  // of the shifted values
  const auto add = [&](float value) {
    const float d = value - shift;
    n += 1.0f;
    sum += d;
    squares = fmaf(d, d, squares);
  };
  if (quads) {
#pragma unroll 2
    for (Index m = slice.begin + 4 * Index(threadIdx.x); m < slice.end; m += 4 * Threads) {
      const float4 v = load4(x + indexOf(m, c, C, S));
      add(v.x), add(v.y), add(v.z), add(v.w);
    }
  } else {
#pragma unroll 4
    for (Index m = slice.begin + threadIdx.x; m < slice.end; m += Threads) add(x[indexOf(m, c, C, S)]);
  }
  float count = n, mean = 0, m2 = 0;
  if (n > 0) {
    mean = shift + sum / n;
    m2 = fmaxf(squares - sum * (sum / n), 0.0f);
  }
  __shared__ float sc[Threads], sm[Threads], s2[Threads];
  sc[threadIdx.x] = count;
  sm[threadIdx.x] = mean;
  s2[threadIdx.x] = m2;
  __syncthreads();
  for (int half = Threads / 2; half > 0; half /= 2) {
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
    triple[0] = sc[0];
    triple[1] = sm[0];
    triple[2] = s2[0];
  }
}

// (mean, 1/sqrt(var + eps)) of a channel's combined triple
__device__ __forceinline__ float2 meanInvStd(double count, double mean, double m2, float eps) {
  const double var = count > 0 ? m2 / count : 0.0;
  return make_float2(float(mean), float(1.0 / sqrt(var + double(eps))));
}

// the running statistics move toward the batch's (the variance unbiased)
__device__ __forceinline__ void moveRunning(float* runMean, float* runVar, int c, double count, double mean, double m2,
                                            float momentum) {
  const double var = count > 0 ? m2 / count : 0.0;
  const double unbiased = count > 1 ? m2 / (count - 1) : var;
  runMean[c] = (1.0f - momentum) * runMean[c] + momentum * float(mean);
  runVar[c] = (1.0f - momentum) * runVar[c] + momentum * float(unbiased);
}

// f((x - mean) * scale + shift), the product and the sum each rounded, as the CPU computes them (left to
// itself the compiler contracts them into an fma in some kernels and not in others): one function for
// every kernel that normalises, so that the pooled forward gives normalise's values bit for bit
__device__ __forceinline__ float normalisedValue(float x, float mean, float scale, float shift, ActivationFn fn,
                                                 float alpha) {
  return activate(__fadd_rn(__fmul_rn(x - mean, scale), shift), fn, alpha);
}

// Pool window w (flat over (N, C, OH, OW)): its plane (n * C + c) and its row and column among the plane's windows
template <typename Index>
struct WindowAt {
  Index plane;
  int oy, ox;
};
template <typename Index>
__device__ __forceinline__ WindowAt<Index> windowAt(const PoolGeometry& g, Index w) {
  const Index plane = w / Index(g.OH * g.OW);
  const int within = int(w - plane * Index(g.OH * g.OW)), oy = within / g.OW;
  return {plane, oy, within - oy * g.OW};
}

// Pool window w (flat over (N, C, OH, OW)) of the normalised, activated x: its values as normalisedValue
// computes them, scanned as maxpoolForward scans (row-major, strict '>', a NaN wins); writes the pooled
// value and the argmax (counted from the sample's start, as maxpoolForward's)
template <typename Index>
__device__ __forceinline__ void poolWindow(const BatchNormPool& pool, const float* x, Index w, int C, float mean,
                                           float scale, float shift, ActivationFn fn, float alpha) {
  const PoolGeometry& g = pool.geometry;
  const WindowAt<Index> at = windowAt(g, w);
  const int c = int(at.plane % Index(C));
  const float* in = x + at.plane * Index(g.H * g.W);
  const int y0 = at.oy * g.size, x0 = at.ox * g.size;
  int32_t bestIndex = y0 * g.W + x0;
  float best = normalisedValue(in[bestIndex], mean, scale, shift, fn, alpha);
  for (int ky = 0; ky < g.size; ++ky)
    for (int kx = 0; kx < g.size; ++kx) {
      const int32_t idx = (y0 + ky) * g.W + x0 + kx;
      const float v = normalisedValue(in[idx], mean, scale, shift, fn, alpha);
      if ((ky | kx) != 0 && replacesMax(v, best)) {
        best = v;
        bestIndex = idx;
      }
    }
  pool.pooled[w] = best;
  pool.argmax[w] = c * g.H * g.W + bestIndex;
}

// Window pairs: where the pool is 2x2 (stride 2) over planes of even height whose width is a multiple of 4
// (the ResNet presets' stems at 28x28), two neighbouring windows cover one float4 of each of their two
// rows, 16-byte aligned, and their pooled values, argmaxes and gradients are float2 / int2 pairs (8-byte
// aligned). The fused pool's forward then takes two windows a thread with two loads instead of eight, and
// the backward reads a quad's two windows once instead of once a value. Values, scan order and argmax are
// poolWindow's and gradientAt's, bit for bit.
__host__ __device__ inline bool poolPairsFit(const PoolGeometry& g) {
  return g.size == 2 && g.stride == 2 && g.W % 4 == 0 && g.H % 2 == 0;
}

// a 2x2 window's max in poolWindow's scan order (row-major, strict '>', a NaN wins) and its index
__device__ __forceinline__ void maxOfWindow(float v00, float v01, float v10, float v11, int32_t first, int W,
                                            float& best, int32_t& at) {
  best = v00;
  at = first;
  const auto consider = [&](float v, int32_t index) {
    if (replacesMax(v, best)) {
      best = v;
      at = index;
    }
  };
  consider(v01, first + 1);
  consider(v10, first + W);
  consider(v11, first + W + 1);
}

// poolWindow of windows w and w + 1 (w even; poolPairsFit)
template <typename Index>
__device__ __forceinline__ void poolWindowPair(const BatchNormPool& pool, const float* x, Index w, int C, float mean,
                                               float scale, float shift, ActivationFn fn, float alpha) {
  const PoolGeometry& g = pool.geometry;
  const WindowAt<Index> at = windowAt(g, w);
  const int32_t first = 2 * at.oy * g.W + 2 * at.ox;  // the left window's top left, within the plane
  const float* in = x + at.plane * Index(g.H * g.W) + first;
  const float4 top = load4(in), bottom = load4(in + g.W);
  const auto value = [&](float v) { return normalisedValue(v, mean, scale, shift, fn, alpha); };
  float left, right;
  int32_t leftAt, rightAt;
  maxOfWindow(value(top.x), value(top.y), value(bottom.x), value(bottom.y), first, g.W, left, leftAt);
  maxOfWindow(value(top.z), value(top.w), value(bottom.z), value(bottom.w), first + 2, g.W, right, rightAt);
  const int32_t planeStart = int32_t(at.plane % Index(C)) * g.H * g.W;  // argmax counts from the sample's start
  *reinterpret_cast<float2*>(pool.pooled + w) = make_float2(left, right);
  *reinterpret_cast<int2*>(pool.argmax + w) = make_int2(planeStart + leftAt, planeStart + rightAt);
}

// The gradient at the activation's input: element s (= y * W + x) of plane (n, c) (flat index i) from the
// gradient at the activation's output, read as such, or, with a max pool fused after it, from the pool's
// window holding s (its gradient at its argmax, 0 elsewhere; the pooled output is the activation's output
// at the argmax). Pixels past the last window (H or W not a multiple of the size) get 0, as the pool's
// backward writes.
template <bool Pooled, typename Index>
__device__ __forceinline__ float gradientAt(const float* dy, const float* gate, const BatchNormPool& pool, Index i,
                                            Index n, int c, int C, int S, ActivationFn fn, float alpha) {
  if (!Pooled) return gate ? gateGradient(dy[i], gate[i], fn, alpha) : dy[i];
  const PoolGeometry& g = pool.geometry;
  const int s = int(i - (n * Index(C) + Index(c)) * Index(S)), iy = s / g.W, ix = s - iy * g.W;
  const int oy = iy / g.size, ox = ix / g.size;
  if (oy >= g.OH || ox >= g.OW) return gateGradient(0.0f, 0.0f, fn, alpha);
  const Index w = ((n * Index(C) + Index(c)) * Index(g.OH) + Index(oy)) * Index(g.OW) + Index(ox);
  if (pool.argmax[w] != c * S + s) return gateGradient(0.0f, 0.0f, fn, alpha);
  return gateGradient(pool.dPooled[w], pool.pooled[w], fn, alpha);
}

// gradientAt of the quad at flat element i of plane (n, c) (i a multiple of 4) where window pairs fit: the
// quad lies in one row and in windows w and w + 1
template <typename Index>
__device__ __forceinline__ float4 gradientQuadOfPair(const BatchNormPool& pool, Index i, Index n, int c, int C, int S,
                                                     ActivationFn fn, float alpha) {
  const PoolGeometry& g = pool.geometry;
  const Index plane = n * Index(C) + Index(c);
  const int s = int(i - plane * Index(S)), iy = s / g.W, ix = s - iy * g.W;
  const Index w = (plane * Index(g.OH) + Index(iy / 2)) * Index(g.OW) + Index(ix / 2);
  const int2 at = *reinterpret_cast<const int2*>(pool.argmax + w);
  const float2 d = *reinterpret_cast<const float2*>(pool.dPooled + w);
  const float2 y = *reinterpret_cast<const float2*>(pool.pooled + w);
  const int32_t e = c * S + s;
  const float none = gateGradient(0.0f, 0.0f, fn, alpha);
  const float left = gateGradient(d.x, y.x, fn, alpha), right = gateGradient(d.y, y.y, fn, alpha);
  return make_float4(at.x == e ? left : none, at.x == e + 1 ? left : none, at.y == e + 2 ? right : none,
                     at.y == e + 3 ? right : none);
}

// gradientAt of the quad at flat element i (of plane (n, c); i a multiple of 4); `pairs`: poolPairsFit
template <bool Pooled, typename Index>
__device__ __forceinline__ float4 gradientQuad(const float* dy, const float* gate, const BatchNormPool& pool, Index i,
                                               Index n, int c, int C, int S, ActivationFn fn, float alpha,
                                               bool pairs = false) {
  if (Pooled && pairs) return gradientQuadOfPair(pool, i, n, c, C, S, fn, alpha);
  if (Pooled)
    return make_float4(gradientAt<true>(dy, gate, pool, i, n, c, C, S, fn, alpha),
                       gradientAt<true>(dy, gate, pool, i + 1, n, c, C, S, fn, alpha),
                       gradientAt<true>(dy, gate, pool, i + 2, n, c, C, S, fn, alpha),
                       gradientAt<true>(dy, gate, pool, i + 3, n, c, C, S, fn, alpha));
  const float4 d = load4(dy + i);
  if (!gate) return d;
  const float4 y = load4(gate + i);
  return make_float4(gateGradient(d.x, y.x, fn, alpha), gateGradient(d.y, y.y, fn, alpha),
                     gateGradient(d.z, y.z, fn, alpha), gateGradient(d.w, y.w, fn, alpha));
}

// sum(g) and sum(g * xhat) over slice [begin, end) of channel c (g: gradientAt), into sums[0..1] (thread 0
// writes them): each thread's sums, then the block's in a fixed tree
template <int Threads, bool Pooled, typename Index>
__device__ __forceinline__ void sliceGradSums(float* sums, const float* dy, const float* x, float mean, float invStd,
                                              int C, int S, int c, Slice<Index> slice, const float* gate,
                                              ActivationFn fn, float alpha, const BatchNormPool& pool,
                                              bool quads = false, bool pairs = false) {
  float sumDy = 0, sumDyXhat = 0;
  const auto add = [&](float g, float value) {
    sumDy += g;
    sumDyXhat += g * (value - mean) * invStd;
  };
  if (quads) {
#pragma unroll 2
    for (Index m = slice.begin + 4 * Index(threadIdx.x); m < slice.end; m += 4 * Threads) {
      const Index i = indexOf(m, c, C, S);
      const float4 g = gradientQuad<Pooled>(dy, gate, pool, i, m / Index(S), c, C, S, fn, alpha, pairs);
      const float4 v = load4(x + i);
      add(g.x, v.x), add(g.y, v.y), add(g.z, v.z), add(g.w, v.w);
    }
  } else {
#pragma unroll 4
    for (Index m = slice.begin + threadIdx.x; m < slice.end; m += Threads) {
      const Index i = indexOf(m, c, C, S);
      add(gradientAt<Pooled>(dy, gate, pool, i, m / Index(S), c, C, S, fn, alpha), x[i]);
    }
  }
  __shared__ float sa[Threads], sb[Threads];
  sa[threadIdx.x] = sumDy;
  sb[threadIdx.x] = sumDyXhat;
  __syncthreads();
  for (int half = Threads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      sa[threadIdx.x] += sa[threadIdx.x + half];
      sb[threadIdx.x] += sb[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    sums[0] = sa[0];
    sums[1] = sb[0];
  }
}

// A channel's combined sum(g) and sum(g xhat) over its M values: dGamma[c] and dBeta[c] (each when not null),
// and the (mean(g), mean(g xhat)) that dx needs (0 in evaluation)
__device__ __forceinline__ float2 finishGradSums(double sumDy, double sumDyXhat, double M, bool training, float* dGamma,
                                                 float* dBeta, int c) {
  if (dGamma) dGamma[c] = float(sumDyXhat);
  if (dBeta) dBeta[c] = float(sumDy);
  return training ? make_float2(float(sumDy / M), float(sumDyXhat / M)) : make_float2(0.0f, 0.0f);
}

// dx of one value x with gradient g: gamma invStd (g - mean(g) - xhat mean(g xhat))
__device__ __forceinline__ float inputGradientOf(float g, float x, float mean, float invStd, float gamma, float meanG,
                                                 float meanGXhat) {
  const float xhat = (x - mean) * invStd;
  return gamma * invStd * (g - meanG - xhat * meanGXhat);
}

// dx at flat element i of plane (n, c)
template <bool Pooled, typename Index>
__device__ __forceinline__ float inputGradient(const float* dy, const float* x, float mean, float invStd, float gamma,
                                               float meanG, float meanGXhat, Index i, Index n, int c, int C, int S,
                                               const float* gate, ActivationFn fn, float alpha,
                                               const BatchNormPool& pool) {
  const float g = gradientAt<Pooled>(dy, gate, pool, i, n, c, C, S, fn, alpha);
  return inputGradientOf(g, x[i], mean, invStd, gamma, meanG, meanGXhat);
}

}  // namespace nnstudio::cuda::bn
