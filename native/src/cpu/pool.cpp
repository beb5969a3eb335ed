// Max and average pooling over size x size windows, floor mode (windows that do not fit are dropped,
// as PyTorch's default); stride may be smaller than size (overlapping windows). Max-pool keeps the
// index of the first maximum so backward routes the gradient there; a NaN in a window wins, so it
// propagates as in PyTorch. Per-sample functions (also fused into conv2d, see conv2d.cpp) and batched
// ones, parallel over samples.
#include <algorithm>

#include "cpu/layers.h"

namespace nnstudio::cpu {

namespace {

constexpr int kChunk = 16;     // output columns per vector step
constexpr int kMaxWindow = 8;  // larger windows take the scalar path

// Max over the taps of up to kChunk output columns: taps[t][j] is tap t (row-major in the window) of
// column j, tapIndex[t] its input index for column 0 (columns step by `stride`). Fixed trip counts and
// selects instead of branches: the compiler vectorises it. Scanning the taps in row-major order with a
// strict '>' keeps the first maximum; a NaN wins (as PyTorch's max pool).
void maxOverTaps(float* __restrict best, int32_t* __restrict idx, const float (*__restrict taps)[kChunk],
                 const int32_t* tapIndex, int count, int stride) {
  for (int j = 0; j < kChunk; ++j) {
    best[j] = taps[0][j];
    idx[j] = tapIndex[0] + j * stride;
  }
  for (int t = 1; t < count; ++t) {
    const int32_t base = tapIndex[t];
    for (int j = 0; j < kChunk; ++j) {
      const float v = taps[t][j], b = best[j];
      const bool take = (v > b) | (v != v);
      best[j] = take ? v : b;
      idx[j] = take ? base + j * stride : idx[j];
    }
  }
}

// The same reading straight from the image when a whole chunk of columns is inside the sample: tap t
// of column j is plane[tapIndex[t] + j*S]. Columns past the row belong to the next row (or channel)
// and are dropped; S a compile-time stride so the strided loads vectorise.
template <int S>
void maxOverTapsDirect(float* __restrict best, int32_t* __restrict idx, const float* __restrict in,
                       const int32_t* tapIndex, int count) {
  const float* __restrict t0 = in + tapIndex[0];
  for (int j = 0; j < kChunk; ++j) {
    best[j] = t0[j * S];
    idx[j] = tapIndex[0] + j * S;
  }
  for (int t = 1; t < count; ++t) {
    const int32_t base = tapIndex[t];
    const float* __restrict tap = in + base;
    for (int j = 0; j < kChunk; ++j) {
      const float v = tap[j * S], b = best[j];
      const bool take = (v > b) | (v != v);
      best[j] = take ? v : b;
      idx[j] = take ? base + j * S : idx[j];
    }
  }
}

}  // namespace

// ---- max pool ----

void maxpool_forward_sample(float* out, int32_t* argmax, const float* in, const PoolGeometry& g) {
  // geometry in locals: stores through int32_t* could otherwise alias g's fields
  const int C = g.C, H = g.H, W = g.W, OH = g.OH, OW = g.OW, size = g.size, stride = g.stride;
  const bool vectorised = size <= kMaxWindow;
  const int64_t sampleSize = int64_t(C) * H * W;
  float taps[kMaxWindow * kMaxWindow][kChunk];  // each tap's values for a chunk of columns, contiguous
  int32_t tapIndex[kMaxWindow * kMaxWindow];
  float best[kChunk];
  int32_t idx[kChunk];
  for (int c = 0; c < C; ++c) {
    const int32_t planeStart = int32_t(int64_t(c) * H * W);
    for (int oy = 0; oy < OH; ++oy) {
      const int y0 = oy * stride;
      for (int ox0 = 0; ox0 < OW; ox0 += kChunk) {
        const int n = std::min(kChunk, OW - ox0);
        const int x0 = ox0 * stride;
        float* dst = out + (int64_t(c) * OH + oy) * OW + ox0;
        int32_t* dstIdx = argmax + (int64_t(c) * OH + oy) * OW + ox0;
        if (!vectorised) {
          for (int j = 0; j < n; ++j) {
            int32_t bi = planeStart + y0 * W + x0 + j * stride;
            float bv = in[bi];
            for (int ky = 0; ky < size; ++ky)
              for (int kx = 0; kx < size; ++kx) {
                const int32_t i = planeStart + (y0 + ky) * W + x0 + j * stride + kx;
                if (in[i] > bv || in[i] != in[i]) { bv = in[i]; bi = i; }
              }
            dst[j] = bv;
            dstIdx[j] = bi;
          }
          continue;
        }
        int t = 0;
        for (int ky = 0; ky < size; ++ky)
          for (int kx = 0; kx < size; ++kx, ++t) tapIndex[t] = planeStart + (y0 + ky) * W + x0 + kx;
        // the last tap's last column of a whole chunk: inside the sample, read in place
        const int64_t lastRead = int64_t(tapIndex[t - 1]) + int64_t(kChunk - 1) * stride;
        if (lastRead < sampleSize && (stride == 1 || stride == 2)) {
          if (stride == 1) maxOverTapsDirect<1>(best, idx, in, tapIndex, t);
          else maxOverTapsDirect<2>(best, idx, in, tapIndex, t);
        } else {
          // gather the taps (strided reads, contiguous writes); columns past the chunk's n stay stale
          for (int k = 0; k < t; ++k) {
            const float* src = in + tapIndex[k];
            for (int j = 0; j < n; ++j) taps[k][j] = src[j * stride];
          }
          maxOverTaps(best, idx, taps, tapIndex, t, stride);
        }
        for (int j = 0; j < n; ++j) {
          dst[j] = best[j];
          dstIdx[j] = idx[j];
        }
      }
    }
  }
}

void maxpool_backward_sample(float* dIn, const float* dOut, const int32_t* argmax, const PoolGeometry& g) {
  const int64_t inSize = int64_t(g.C) * g.H * g.W, outSize = int64_t(g.C) * g.OH * g.OW;
  std::fill(dIn, dIn + inSize, 0.0f);
  for (int64_t o = 0; o < outSize; ++o) dIn[argmax[o]] += dOut[o];  // += : overlapping windows share pixels
}

void maxpool_forward(ThreadPool& pool, float* out, int32_t* argmax, const float* in, int N, const PoolGeometry& g) {
  const int64_t inSize = int64_t(g.C) * g.H * g.W, outSize = int64_t(g.C) * g.OH * g.OW;
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int) {
    for (int64_t n = n0; n < n1; ++n) maxpool_forward_sample(out + n * outSize, argmax + n * outSize, in + n * inSize, g);
  });
}

void maxpool_backward(ThreadPool& pool, float* dIn, const float* dOut, const int32_t* argmax, int N,
                      const PoolGeometry& g) {
  const int64_t inSize = int64_t(g.C) * g.H * g.W, outSize = int64_t(g.C) * g.OH * g.OW;
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int) {
    for (int64_t n = n0; n < n1; ++n)
      maxpool_backward_sample(dIn + n * inSize, dOut + n * outSize, argmax + n * outSize, g);
  });
}

// ---- average pool ----

void avgpool_forward_sample(float* out, const float* in, const PoolGeometry& g) {
  const int C = g.C, H = g.H, W = g.W, OH = g.OH, OW = g.OW, size = g.size, stride = g.stride;
  const float scale = 1.0f / float(size * size);
  for (int c = 0; c < C; ++c) {
    const float* plane = in + int64_t(c) * H * W;
    for (int oy = 0; oy < OH; ++oy) {
      float* __restrict y = out + (int64_t(c) * OH + oy) * OW;
      for (int ox = 0; ox < OW; ++ox) y[ox] = 0.0f;
      for (int ky = 0; ky < size; ++ky) {
        const float* __restrict row = plane + int64_t(oy * stride + ky) * W;
        for (int kx = 0; kx < size; ++kx)
          for (int ox = 0; ox < OW; ++ox) y[ox] += row[ox * stride + kx];
      }
      for (int ox = 0; ox < OW; ++ox) y[ox] *= scale;
    }
  }
}

void avgpool_backward_sample(float* dIn, const float* dOut, const PoolGeometry& g) {
  const int C = g.C, H = g.H, W = g.W, OH = g.OH, OW = g.OW, size = g.size, stride = g.stride;
  const float scale = 1.0f / float(size * size);
  std::fill(dIn, dIn + int64_t(C) * H * W, 0.0f);
  for (int c = 0; c < C; ++c) {
    float* plane = dIn + int64_t(c) * H * W;
    for (int oy = 0; oy < OH; ++oy) {
      const float* dy = dOut + (int64_t(c) * OH + oy) * OW;
      for (int ky = 0; ky < size; ++ky) {
        float* row = plane + int64_t(oy * stride + ky) * W;
        // ox outer: overlapping windows (stride < size) add into the same pixel
        for (int ox = 0; ox < OW; ++ox) {
          const float v = dy[ox] * scale;
          for (int kx = 0; kx < size; ++kx) row[ox * stride + kx] += v;
        }
      }
    }
  }
}

void avgpool_forward(ThreadPool& pool, float* out, const float* in, int N, const PoolGeometry& g) {
  const int64_t inSize = int64_t(g.C) * g.H * g.W, outSize = int64_t(g.C) * g.OH * g.OW;
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int) {
    for (int64_t n = n0; n < n1; ++n) avgpool_forward_sample(out + n * outSize, in + n * inSize, g);
  });
}

void avgpool_backward(ThreadPool& pool, float* dIn, const float* dOut, int N, const PoolGeometry& g) {
  const int64_t inSize = int64_t(g.C) * g.H * g.W, outSize = int64_t(g.C) * g.OH * g.OW;
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int) {
    for (int64_t n = n0; n < n1; ++n) avgpool_backward_sample(dIn + n * inSize, dOut + n * outSize, g);
  });
}

}  // namespace nnstudio::cpu

namespace nnstudio::cpu {

// ---- global average pool: the mean of each channel's S values ----

void global_avgpool_forward(ThreadPool& pool, float* out, const float* in, int N, int C, int S) {
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int) {
    for (int64_t r = n0 * C; r < n1 * C; ++r) {
      const float* x = in + r * S;
      double sum = 0;
      for (int s = 0; s < S; ++s) sum += x[s];
      out[r] = float(sum / S);
    }
  });
}

void global_avgpool_backward(ThreadPool& pool, float* dIn, const float* dOut, int N, int C, int S) {
  const float scale = 1.0f / float(S);
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int) {
    for (int64_t r = n0 * C; r < n1 * C; ++r) {
      const float v = dOut[r] * scale;
      float* d = dIn + r * S;
      for (int s = 0; s < S; ++s) d[s] = v;
    }
  });
}

}  // namespace nnstudio::cpu
