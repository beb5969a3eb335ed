// 2-D convolution (cross-correlation, as PyTorch), parallel over the samples of the batch; each chunk of
// samples accumulates its own weight gradient and the partial sums are added in chunk order
// (deterministic for a thread count).
//   stride 1 (every preset): GEMMs on shifted views of the (padded) image, see ShiftPlan in layers.h:
//     forward  out (F, q) = W (F, C*kh*kw) . image rows at the tap offsets
//     dW       (F, C*kh*kw) = dOut widened to the padded width (F, q) . the same rows (dot products)
//     dIn      = the same forward with the flipped weights over dOut padded by (kh-1-padTop, ...)
//   stride > 1: im2col, GEMMs, col2im.
#include <algorithm>
#include <cstring>

#include "cpu/gemm.h"
#include "cpu/layers.h"

namespace nnstudio::cpu {

// ---- plans and scratch ----

void ShiftPlan::init(int C, int H, int W, int OH, int OW, int kh, int kw, int top, int left) {
  Hp = OH + kh - 1;
  Wp = OW + kw - 1;
  N = int64_t(OH - 1) * Wp + OW;
  padTop = top;
  padLeft = left;
  padded = top != 0 || left != 0 || Hp != H || Wp != W;
  offsets.resize(size_t(C) * kh * kw);
  for (int c = 0; c < C; ++c)
    for (int ky = 0; ky < kh; ++ky)
      for (int kx = 0; kx < kw; ++kx)
        offsets[(size_t(c) * kh + ky) * kw + kx] = (int64_t(c) * Hp + ky) * Wp + kx;
}

namespace {

// sum of n floats in 16 independent lanes: vectorised without reassociating, and more accurate than
// one running sum
float sumOf(const float* __restrict x, int64_t n) {
  constexpr int L = 16;
  float lanes[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) lanes[l] += x[i + l];
  float sum = 0.0f;
  for (int l = 0; l < L; ++l) sum += lanes[l];
  for (; i < n; ++i) sum += x[i];
  return sum;
}

// per-thread work buffer layout (floats)
struct WorkLayout {
  size_t paddedIn = 0, wide = 0, paddedOut = 0, wideIn = 0, total = 0;
};

WorkLayout workLayout(const ConvGeometry& g, const ConvScratch& s, bool inputGradient) {
  WorkLayout w;
  if (g.stride == 1) {
    const size_t padIn = s.forward.padded ? size_t(g.C) * s.forward.Hp * s.forward.Wp : 0;
    const size_t wide = size_t(g.F) * size_t(s.forward.N);
    const size_t padOut = inputGradient ? size_t(g.F) * s.backward.Hp * s.backward.Wp : 0;
    const size_t wideIn = inputGradient ? size_t(g.C) * size_t(s.backward.N) : 0;
    w.paddedIn = 0;
    w.wide = padIn;
    w.paddedOut = w.wide + wide;
    w.wideIn = w.paddedOut + padOut;
    w.total = w.wideIn + wideIn;
  } else {
    w.total = size_t(g.colRows() * g.colCols());  // im2col / dCol
  }
  return w;
}

// dst (C, Hp, Wp) = src (C, H, W) placed at (top, left), zeros around
void padImage(float* dst, const float* src, int C, int H, int W, int Hp, int Wp, int top, int left) {
  std::fill(dst, dst + int64_t(C) * Hp * Wp, 0.0f);
  for (int c = 0; c < C; ++c)
    for (int y = 0; y < H; ++y) {
      const int py = y + top;
      if (py < 0 || py >= Hp) continue;
      const float* s = src + (int64_t(c) * H + y) * W;
      float* d = dst + (int64_t(c) * Hp + py) * Wp;
      for (int x = 0; x < W; ++x) {
        const int px = x + left;
        if (px >= 0 && px < Wp) d[px] = s[x];
      }
    }
}

// The image a stride-1 shift plan reads: x itself, or x padded into `scratch` (C, Hp, Wp).
const float* forwardImage(const float* x, float* scratch, const ConvGeometry& g, const ShiftPlan& sp) {
  if (!sp.padded) return x;
  padImage(scratch, x, g.C, g.H, g.W, sp.Hp, sp.Wp, sp.padTop, sp.padLeft);
  return scratch;
}


}  // namespace

void ConvScratch::reserve(const ConvGeometry& g, int threads, bool inputGradient) {
  if (g.stride == 1) {
    forward.init(g.C, g.H, g.W, g.OH, g.OW, g.kh, g.kw, g.padTop, g.padLeft);
    if (inputGradient) {
      // dIn(iy) gathers dOut(iy + padTop - ky) = dOut(iy - (kh-1-padTop) + ky') with ky' = kh-1-ky
      backward.init(g.F, g.OH, g.OW, g.H, g.W, g.kh, g.kw, g.kh - 1 - g.padTop, g.kw - 1 - g.padLeft);
      backward.padded = true;
      flipped.resize(size_t(g.F) * size_t(g.colRows()));
    }
  }
  const size_t total = workLayout(g, *this, inputGradient).total;
  work.resize(threads);
  for (auto& w : work)
    if (w.size() < total) w.resize(total);
  dWeight.resize(threads);
  const size_t wSize = size_t(g.F) * size_t(g.colRows()) + size_t(g.F);
  for (auto& w : dWeight)
    if (w.size() < wSize) w.resize(wSize);
}

// ---- im2col / col2im ----

// col (C*kh*kw, OH*OW): row (c, ky, kx) holds the input pixel each output position sees through that tap
void im2col(float* col, const float* in, const ConvGeometry& g) {
  const int C = g.C, H = g.H, W = g.W, OH = g.OH, OW = g.OW, kh = g.kh, kw = g.kw, stride = g.stride;
  const int padTop = g.padTop, padLeft = g.padLeft;
  const int64_t P = int64_t(OH) * OW;
  for (int c = 0; c < C; ++c) {
    const float* plane = in + int64_t(c) * H * W;
    for (int ky = 0; ky < kh; ++ky) {
      for (int kx = 0; kx < kw; ++kx) {
        float* __restrict row = col + ((int64_t(c) * kh + ky) * kw + kx) * P;
        const int ix0 = kx - padLeft;  // input column of output column 0
        // output columns whose input column is inside [0, W)
        const int lo = std::clamp((-ix0 + stride - 1) / stride, 0, OW);
        const int hi = std::clamp(ix0 >= W ? 0 : (W - 1 - ix0) / stride + 1, lo, OW);
        for (int oy = 0; oy < OH; ++oy) {
          const int iy = oy * stride - padTop + ky;
          float* __restrict dst = row + int64_t(oy) * OW;
          if (iy < 0 || iy >= H) {
            for (int ox = 0; ox < OW; ++ox) dst[ox] = 0.0f;
            continue;
          }
          const float* __restrict src = plane + int64_t(iy) * W + ix0;
          for (int ox = 0; ox < lo; ++ox) dst[ox] = 0.0f;
          if (stride == 1)
            for (int ox = lo; ox < hi; ++ox) dst[ox] = src[ox];
          else
            for (int ox = lo; ox < hi; ++ox) dst[ox] = src[ox * stride];
          for (int ox = hi; ox < OW; ++ox) dst[ox] = 0.0f;
        }
      }
    }
  }
}

// dIn (C, H, W) = sum of the dCol entries that read each pixel
void col2im(float* dIn, const float* dCol, const ConvGeometry& g) {
  const int64_t P = g.colCols();
  std::fill(dIn, dIn + int64_t(g.C) * g.H * g.W, 0.0f);
  for (int c = 0; c < g.C; ++c) {
    float* plane = dIn + int64_t(c) * g.H * g.W;
    for (int ky = 0; ky < g.kh; ++ky) {
      for (int kx = 0; kx < g.kw; ++kx) {
        const float* row = dCol + ((int64_t(c) * g.kh + ky) * g.kw + kx) * P;
        for (int oy = 0; oy < g.OH; ++oy) {
          const int iy = oy * g.stride - g.padTop + ky;
          if (iy < 0 || iy >= g.H) continue;
          const float* src = row + int64_t(oy) * g.OW;
          float* dst = plane + int64_t(iy) * g.W;
          const int ix0 = kx - g.padLeft;
          if (g.stride == 1) {
            const int lo = std::clamp(-ix0, 0, g.OW), hi = std::clamp(g.W - ix0, lo, g.OW);
            for (int ox = lo; ox < hi; ++ox) dst[ox + ix0] += src[ox];
          } else {
            for (int ox = 0; ox < g.OW; ++ox) {
              const int ix = ox * g.stride + ix0;
              if (ix >= 0 && ix < g.W) dst[ix] += src[ox];
            }
          }
        }
      }
    }
  }
}

// ---- forward ----

void conv2d_forward(ThreadPool& pool, ConvScratch& scratch, float* out, const float* in, const float* weight,
                    const float* bias, int N, const ConvGeometry& g, ActivationFn act, float alpha,
                    const FusedPool* fused) {
  const int64_t poolSize = fused ? int64_t(fused->geometry.C) * fused->geometry.OH * fused->geometry.OW : 0;
  const int64_t K = g.colRows(), P = g.colCols();
  const int64_t inSize = int64_t(g.C) * g.H * g.W, outSize = int64_t(g.F) * P;
  const WorkLayout layout = workLayout(g, scratch, false);
  const ShiftPlan& sp = scratch.forward;
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int t) {
    float* work = scratch.work[t].data();
    for (int64_t n = n0; n < n1; ++n) {
      const float* x = in + n * inSize;  // (C, H, W)
      float* y = out + n * outSize;      // (F, OH, OW)
      if (g.stride == 1) {
        const float* image = forwardImage(x, work + layout.paddedIn, g, sp);
        // wide (F, q) = W (F, K) . shifted rows, then keep the OW valid columns of each row, plus bias
        float* wide = work + layout.wide;
        gemmRowsB(g.F, int(sp.N), int(K), 1.0f, weight, K, 1, image, sp.offsets.data(), 0.0f, wide, sp.N, 1);
        for (int f = 0; f < g.F; ++f) {
          float* plane = y + int64_t(f) * P;  // (OH, OW), activated while it is in L1
          const float b = bias[f];
          for (int oy = 0; oy < g.OH; ++oy) {
            const float* src = wide + f * sp.N + int64_t(oy) * sp.Wp;
            float* dst = plane + int64_t(oy) * g.OW;
            for (int ox = 0; ox < g.OW; ++ox) dst[ox] = src[ox] + b;
          }
          activation_forward(plane, plane, 1, P, act, alpha);
        }
      } else {
        float* col = work;  // (K, P)
        im2col(col, x, g);
        for (int f = 0; f < g.F; ++f) std::fill(y + f * P, y + (f + 1) * P, bias[f]);
        // y (F, P) += W (F, K) . col (K, P)
        gemm(g.F, int(P), int(K), 1.0f, weight, K, 1, col, P, 1, 1.0f, y, P, 1);
        activation_forward(y, y, 1, outSize, act, alpha);
      }
      if (fused && fused->kind == LayerKind::MaxPool2D)
        maxpool_forward_sample(fused->out + n * poolSize, fused->argmax + n * poolSize, y, fused->geometry);
      else if (fused)
        avgpool_forward_sample(fused->out + n * poolSize, y, fused->geometry);
    }
  });
}

// ---- backward ----

void conv2d_backward(ThreadPool& pool, ConvScratch& scratch, float* dIn, float* dWeight, float* dBias, float* dOut,
                     const float* out, const float* in, const float* weight, int N, const ConvGeometry& g,
                     ActivationFn act, float alpha, const FusedPool* fused) {
  const int64_t poolSize = fused ? int64_t(fused->geometry.C) * fused->geometry.OH * fused->geometry.OW : 0;
  const int64_t K = g.colRows(), P = g.colCols();
  const int64_t inSize = int64_t(g.C) * g.H * g.W, outSize = int64_t(g.F) * P;
  const int64_t wSize = int64_t(g.F) * K;
  const int parts = pool.chunksFor(N);
  const WorkLayout layout = workLayout(g, scratch, dIn != nullptr);
  const ShiftPlan& sp = scratch.forward;
  const ShiftPlan& bp = scratch.backward;
  if (dIn && g.stride == 1) {
    // flipped (C, F, kh, kw): dIn is the forward correlation of dOut with the weights turned 180 degrees
    float* wf = scratch.flipped.data();
    for (int f = 0; f < g.F; ++f)
      for (int c = 0; c < g.C; ++c)
        for (int ky = 0; ky < g.kh; ++ky)
          for (int kx = 0; kx < g.kw; ++kx)
            wf[((int64_t(c) * g.F + f) * g.kh + (g.kh - 1 - ky)) * g.kw + (g.kw - 1 - kx)] =
                weight[((int64_t(f) * g.C + c) * g.kh + ky) * g.kw + kx];
  }
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int chunk, int t) {
    float* work = scratch.work[t].data();       // per thread
    float* dW = scratch.dWeight[chunk].data();  // per chunk: (F, K) then (F) bias
    float* dB = dW + wSize;
    std::fill(dW, dW + wSize + g.F, 0.0f);
    for (int64_t n = n0; n < n1; ++n) {
      const float* x = in + n * inSize;
      float* dy = dOut + n * outSize;  // (F, OH, OW)
      if (fused && fused->kind == LayerKind::MaxPool2D)
        maxpool_backward_sample(dy, fused->dOut + n * poolSize, fused->argmax + n * poolSize, fused->geometry);
      else if (fused)
        avgpool_backward_sample(dy, fused->dOut + n * poolSize, fused->geometry);
      const float* y = out + n * outSize;
      if (g.stride == 1) {
        const float* image = forwardImage(x, work + layout.paddedIn, g, sp);
        // per plane while it is in L1: through the activation, into the bias gradient, and widened to the
        // padded row width (zeros in the dropped columns); then
        // dW (F, K) += wide (F, q) . rows^T: dot products of dy with each tap's shifted image
        float* wide = work + layout.wide;
        for (int f = 0; f < g.F; ++f) {
          float* plane = dy + int64_t(f) * P;
          activation_backward(plane, plane, y + int64_t(f) * P, 1, P, act, alpha);
          dB[f] += sumOf(plane, P);
          for (int oy = 0; oy < g.OH; ++oy) {
            const float* src = plane + int64_t(oy) * g.OW;
            float* dst = wide + f * sp.N + int64_t(oy) * sp.Wp;
            const int cols = oy + 1 < g.OH ? sp.Wp : g.OW;
            for (int ox = 0; ox < g.OW; ++ox) dst[ox] = src[ox];
            for (int ox = g.OW; ox < cols; ++ox) dst[ox] = 0.0f;
          }
        }
        gemmDotColumns(g.F, int(K), int(sp.N), 1.0f, wide, sp.N, image, sp.offsets.data(), 1.0f, dW, K, 1);
        if (dIn) {
          // dIn: pad dy by (kh-1-padTop, kw-1-padLeft), correlate with the flipped weights, keep W columns
          float* padded = work + layout.paddedOut;
          float* wideIn = work + layout.wideIn;
          padImage(padded, dy, g.F, g.OH, g.OW, bp.Hp, bp.Wp, bp.padTop, bp.padLeft);
          const int64_t Kb = int64_t(g.F) * g.kh * g.kw;  // flipped is (C, F*kh*kw)
          gemmRowsB(g.C, int(bp.N), int(Kb), 1.0f, scratch.flipped.data(), Kb, 1, padded, bp.offsets.data(), 0.0f,
                    wideIn, bp.N, 1);
          float* dx = dIn + n * inSize;
          for (int c = 0; c < g.C; ++c)
            for (int iy = 0; iy < g.H; ++iy) {
              const float* src = wideIn + c * bp.N + int64_t(iy) * bp.Wp;
              float* dst = dx + (int64_t(c) * g.H + iy) * g.W;
              for (int ix = 0; ix < g.W; ++ix) dst[ix] = src[ix];
            }
        }
      } else {
        activation_backward(dy, dy, y, 1, outSize, act, alpha);
        for (int f = 0; f < g.F; ++f) dB[f] += sumOf(dy + f * P, P);
        float* col = work;  // (K, P)
        im2col(col, x, g);
        // dW (F, K) += dy (F, P) . col^T (P, K)
        gemm(g.F, int(K), int(P), 1.0f, dy, P, 1, col, 1, P, 1.0f, dW, K, 1);
        if (dIn) {
          // dCol (K, P) = W^T (K, F) . dy (F, P), then scatter back; col is free again by now
          gemm(int(K), int(P), g.F, 1.0f, weight, 1, K, dy, P, 1, 0.0f, col, P, 1);
          col2im(dIn + n * inSize, col, g);
        }
      }
    }
  });
  // reduce the per-chunk partial gradients in chunk order (deterministic for a thread count)
  std::fill(dWeight, dWeight + wSize, 0.0f);
  std::fill(dBias, dBias + g.F, 0.0f);
  for (int c = 0; c < parts; ++c) {
    const float* dW = scratch.dWeight[c].data();
    for (int64_t i = 0; i < wSize; ++i) dWeight[i] += dW[i];
    for (int f = 0; f < g.F; ++f) dBias[f] += dW[wSize + f];
  }
}

}  // namespace nnstudio::cpu
