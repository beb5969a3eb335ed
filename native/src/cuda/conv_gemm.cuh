// conv2d's forward and input-gradient passes as implicit GEMMs: the arguments both kernels take, the SIMT
// one (conv2d.cu) and the tensor-core one (conv2d_tc.cu), built once from the layer's geometry.
//   forward  out (F, N*OH*OW) = W (F, K) . col (K, N*OH*OW),   K = C*kh*kw; epilogue + bias, activation
//   dIn      dIn (C, N*H*W) = W' (C, F*kh*kw) . dOut gathered at (iy + padTop - ky, ix + padLeft - kx)
//            (stride > 1: only the taps that land on an output position); epilogue * inAct'(in)
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda/kernels.h"

namespace nnstudio::cuda {

// n / d for 0 <= n < 2^31 by a multiply-high and a shift (Granlund-Montgomery, as CUTLASS's FastDivmod):
// with p = 31 + ceil(log2 d) and mul = ceil(2^p / d), n / d = (n * mul) >> p exactly.
struct FastDiv {
  int d = 1;
  unsigned mul = 0, shr = 0;
  FastDiv() = default;
  explicit FastDiv(int divisor) : d(std::max(divisor, 1)) {
    if (d > 1) {
      unsigned l = 0;
      while ((1u << l) < unsigned(d)) ++l;
      const unsigned p = 31 + l;
      mul = unsigned(((uint64_t(1) << p) + unsigned(d) - 1) / unsigned(d));
      shr = p - 32;
    }
  }
  __device__ __forceinline__ int div(int n) const { return d == 1 ? n : int(__umulhi(unsigned(n), mul) >> shr); }
};

enum ConvGemmMode : int {
  kForward = 0,      // rows = filters, columns = (n, oy, ox), reduction = (c, ky, kx) over the input
  kInput = 1,        // rows = channels, columns = (n, iy, ix), reduction = (f, ky, kx) over dOut, stride 1
  kInputStrided = 2, // the same, stride > 1: a tap counts only where it lands on an output position
  kInputPhase = 3    // stride > 1, one phase: the input positions whose taps land on outputs in the same
                     // pattern, a stride-1 correlation with those taps (convInputPhaseGemm)
};

struct ConvGemmArgs {
  const float* weight;  // (F, C, kh, kw)
  const float* src;     // gathered: forward the input (N, C, H, W); input gradient dOut (N, F, OH, OW)
  const float* bias;    // forward (F)
  const float* gate;    // input gradient: `in` for inAct', or null
  float* dst;           // (N, M, plane)
  int M, K, J;          // GEMM rows, reduction length, columns (N * plane)
  int plane, planeW;    // the output's plane size and width (forward OH*OW, OW; input gradient H*W, W)
  int srcC, srcH, srcW; // the gathered tensor's sample shape
  int C;                // the weight's channel count (input gradient: A's addressing)
  int kh, kw, stride, padTop, padLeft;
  ActivationFn act;     // forward: the activation; input gradient: the gate's activation
  float alpha;
  bool vec;             // plane % V == 0 and dst (and gate) aligned to V floats: the epilogue stores V at a
                        // time (V: the kernel's choice, 4 for the SIMT kernel, 2 for the tensor cores)
  FastDiv divKhkw, divKw, divPlane, divPlaneW, divStride;
  // kInputPhase: kh x kw are the phase's taps (ky = phaseY + jy * stride of the layer's tapKh x tapKw
  // kernel, the same for x); the columns are the phase's input positions (plane, planeW), written at
  // row qy * stride + dstY0, column qx * stride + dstX0 of the input's dstPlane (width dstW)
  int tapKw, tapKhkw, phaseY, phaseX;
  int dstPlane, dstW, dstY0, dstX0;
};

namespace detail {

inline bool alignedFloats(const void* p, int floats) {
  return (reinterpret_cast<uintptr_t>(p) & uintptr_t(4 * floats - 1)) == 0;
}

// the geometry's fields, `vec` and the divisors, once the pass's own fields are set
inline void finishConvGemm(ConvGemmArgs& a, const ConvGeometry& g, int vecFloats) {
  a.C = g.C;
  a.kh = g.kh;
  a.kw = g.kw;
  a.stride = g.stride;
  a.padTop = g.padTop;
  a.padLeft = g.padLeft;
  a.vec = a.plane % vecFloats == 0 && alignedFloats(a.dst, vecFloats) &&
          (!a.gate || alignedFloats(a.gate, vecFloats));
  a.divKhkw = FastDiv(a.kh * a.kw);
  a.divKw = FastDiv(a.kw);
  a.divPlane = FastDiv(a.plane);
  a.divPlaneW = FastDiv(a.planeW);
  a.divStride = FastDiv(a.stride);
}

}  // namespace detail

// forward: rows the filters, the input gathered; `vecFloats` the epilogue's store width
inline ConvGemmArgs convForwardGemm(float* out, const float* in, const float* weight, const float* bias, int N,
                                    const ConvGeometry& g, ActivationFn act, float alpha, int vecFloats) {
  ConvGemmArgs a{};
  a.weight = weight;
  a.src = in;
  a.bias = bias;
  a.gate = nullptr;
  a.dst = out;
  a.M = g.F;
  a.K = int(g.colRows());
  a.J = N * g.OH * g.OW;
  a.plane = g.OH * g.OW;
  a.planeW = g.OW;
  a.srcC = g.C;
  a.srcH = g.H;
  a.srcW = g.W;
  a.act = act;
  a.alpha = alpha;
  detail::finishConvGemm(a, g, vecFloats);
  return a;
}

// input gradient: rows the channels, dOut gathered, gated by inAct'(in) unless Linear
inline ConvGemmArgs convInputGemm(float* dIn, const float* dOut, const float* weight, const float* in, int N,
                                  const ConvGeometry& g, ActivationFn inAct, float inAlpha, int vecFloats) {
  ConvGemmArgs a{};
  a.weight = weight;
  a.src = dOut;
  a.bias = nullptr;
  a.gate = inAct == ActivationFn::Linear ? nullptr : in;
  a.dst = dIn;
  a.M = g.C;
  a.K = g.F * g.kh * g.kw;
  a.J = N * g.H * g.W;
  a.plane = g.H * g.W;
  a.planeW = g.W;
  a.srcC = g.F;
  a.srcH = g.OH;
  a.srcW = g.OW;
  a.act = inAct;
  a.alpha = inAlpha;
  detail::finishConvGemm(a, g, vecFloats);
  return a;
}

// The weight gradient, dW (F, K) and dBias (F) = dOut (F, P) . [col; 1] (P, K + 1), P = N*OH*OW pixels split
// into chunks of `chunk` (blockIdx.z): with more than one chunk each writes its partial sums to `partial`
// (S, F, K + 1), which conv2d.cu's reduction adds in chunk order. The SIMT kernel (conv2d.cu) and the
// tensor-core one (conv2d_tc_wgrad.cu) take the same arguments.
struct ConvWgradArgs {
  const float* dOut;  // (N, F, OH, OW)
  const float* in;    // (N, C, H, W)
  float* partial;     // (S, F, K+1)
  float* dWeight;     // (F, K)
  float* dBias;       // (F)
  int F, K, Kp;       // Kp = K + 1
  int C, H, W, OH, OW, kh, kw, stride, padTop, padLeft;
  int P, chunk;       // N*OH*OW, pixels per chunk
  FastDiv divOHW, divOW;
};

inline ConvWgradArgs convWgradArgs(float* dWeight, float* dBias, const float* dOut, const float* in, float* partial,
                                   int N, const ConvGeometry& g, int chunk) {
  ConvWgradArgs a{};
  a.dOut = dOut;
  a.in = in;
  a.partial = partial;
  a.dWeight = dWeight;
  a.dBias = dBias;
  a.F = g.F;
  a.K = int(g.colRows());
  a.Kp = a.K + 1;
  a.C = g.C;
  a.H = g.H;
  a.W = g.W;
  a.OH = g.OH;
  a.OW = g.OW;
  a.kh = g.kh;
  a.kw = g.kw;
  a.stride = g.stride;
  a.padTop = g.padTop;
  a.padLeft = g.padLeft;
  a.P = std::max(N, 0) * g.OH * g.OW;
  a.chunk = chunk;
  a.divOHW = FastDiv(g.OH * g.OW);
  a.divOW = FastDiv(g.OW);
  return a;
}

namespace detail {
inline int ceilDivSigned(int a, int b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
inline int floorDivSigned(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace detail

// The strided input gradient split by phase (ry, rx) in [0, stride)^2: input row iy takes the taps
// ky = ry + jy * stride, where ry = (iy + padTop) mod stride, from output row qy - jy, qy = (iy + padTop -
// ry) / stride; so the rows of one phase form a stride-1 correlation of dOut with ceil((kh - ry) / stride)
// taps, and no tap is gathered only to be dropped (3x3, stride 2: 2.25 taps a position instead of 9).
// Returns false when the phase has no input positions; `taps` says whether it has any taps (a phase with
// positions but no taps leaves their gradient to a zero fill).
inline bool convInputPhaseGemm(ConvGemmArgs& a, const ConvGemmArgs& whole, const ConvGeometry& g, int N, int ry,
                               int rx, bool& taps) {
  const int s = g.stride;
  const int ty = ry < g.kh ? (g.kh - 1 - ry) / s + 1 : 0, tx = rx < g.kw ? (g.kw - 1 - rx) / s + 1 : 0;
  const int qy0 = detail::ceilDivSigned(g.padTop - ry, s), qx0 = detail::ceilDivSigned(g.padLeft - rx, s);
  const int qy1 = detail::floorDivSigned(g.H - 1 + g.padTop - ry, s), qx1 = detail::floorDivSigned(g.W - 1 + g.padLeft - rx, s);
  const int rows = qy1 - qy0 + 1, cols = qx1 - qx0 + 1;
  taps = ty > 0 && tx > 0;
  if (rows <= 0 || cols <= 0) return false;
  a = whole;
  a.kh = ty;
  a.kw = tx;
  a.K = g.F * ty * tx;
  a.plane = rows * cols;
  a.planeW = cols;
  a.J = N * a.plane;
  a.padTop = qy0;  // the gather's "same" offset: output row = q + qy0 - jy for phase row q
  a.padLeft = qx0;
  a.tapKw = g.kw;
  a.tapKhkw = g.kh * g.kw;
  a.phaseY = ry;
  a.phaseX = rx;
  a.dstPlane = g.H * g.W;
  a.dstW = g.W;
  a.dstY0 = qy0 * s + ry - g.padTop;
  a.dstX0 = qx0 * s + rx - g.padLeft;
  a.vec = false;  // the phase's columns are strided in the input
  a.divKhkw = FastDiv(std::max(ty * tx, 1));
  a.divKw = FastDiv(std::max(tx, 1));
  a.divPlane = FastDiv(a.plane);
  a.divPlaneW = FastDiv(a.planeW);
  return true;
}

}  // namespace nnstudio::cuda
