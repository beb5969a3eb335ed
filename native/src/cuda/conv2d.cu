// 2-D convolution (cross-correlation, as PyTorch) on the GPU, NCHW, weight (F, C, kh, kw), any stride
// and leading pads. Every pass is an implicit GEMM: the operand that im2col would build is gathered
// straight from the tensor while the shared-memory tiles load, so no column buffer exists.
//   forward  out (F, N*OH*OW) = W (F, K) . col (K, N*OH*OW),   K = C*kh*kw; epilogue + bias, activation
//   dIn      dIn (C, N*H*W) = W' (C, F*kh*kw) . dOut gathered at (iy + padTop - ky, ix + padLeft - kx)
//            (for stride > 1 only the taps that land on an output position count); epilogue * inAct'(in)
//   dW       (F, K + 1) = dOut (F, P) . [col; ones]^T,   P = N*OH*OW split into chunks: every chunk writes
//            its partial sums to the workspace, then one kernel adds them in chunk order (deterministic,
//            no atomics); the row of ones yields the bias gradient in the same pass.
// Tiles: the GEMM's row count (F or C) picks a thin tile for the small layers (4, 8, 16, 32 rows) so
// little work is wasted, and each thread owns a TM x TN register micro-tile. Double-buffered shared
// memory, one __syncthreads per K step. Launchers only enqueue kernels (CUDA-graph safe).
// The forward and input-gradient launchers run the variant the chooser picks (kernel_choice.h): a direct
// convolution for few channels (conv2d_direct.cu), a 3xTF32 tensor-core implicit GEMM for many
// (conv2d_tc.cu), else this file's SIMT implicit GEMM; the tile shapes and the weight gradient's split
// are the chooser's too.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/conv2d_direct.h"
#include "cuda/conv2d_tc.h"
#include "cuda/conv_gemm.cuh"
#include "cuda/kernel_choice.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

namespace {

// v * f'(x) with f' taken from the activation's output y, as cpu::activation_backward. Not
// activation_math.cuh's gateGradient: its sigmoid multiplies in another order (other bits).
__device__ __forceinline__ float gateBy(float v, float y, ActivationFn act, float alpha) {
  switch (act) {
    case ActivationFn::ReLU: return y > 0.0f ? v : 0.0f;
    case ActivationFn::LeakyReLU: return y > 0.0f ? v : alpha * v;
    case ActivationFn::Sigmoid: return v * y * (1.0f - y);
    case ActivationFn::Tanh: return v * (1.0f - y * y);
    case ActivationFn::Softplus: return v * -expm1f(-y);
    default: return v;
  }
}

// T consecutive floats from shared memory (16- or 8-byte aligned by construction)
template <int T>
__device__ __forceinline__ void loadFragment(float (&f)[T], const float* p) {
  if constexpr (T % 4 == 0) {
#pragma unroll
    for (int i = 0; i < T; i += 4) {
      const float4 v = *reinterpret_cast<const float4*>(p + i);
      f[i] = v.x;
      f[i + 1] = v.y;
      f[i + 2] = v.z;
      f[i + 3] = v.w;
    }
  } else if constexpr (T == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    f[0] = v.x;
    f[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < T; ++i) f[i] = p[i];
  }
}

// ---- forward and input gradient: one implicit-GEMM kernel (conv_gemm.cuh: its arguments) ----

// Block tile BM rows x BN columns, K step BK; THREADS threads as (BM/TM) x (THREADS*TM/BM) micro-tiles of
// TM x TN; a warp covers 4 thread-rows x 8 thread-columns (few distinct shared-memory reads per step).
template <int MODE, int BM, int TM, int TN, int THREADS, int BK>
__global__ void __launch_bounds__(THREADS) convGemmKernel(const ConvGemmArgs a) {
  startAfterPreviousKernel();
  constexpr int RG = BM / TM;          // thread rows
  constexpr int CG = THREADS / RG;     // thread columns
  constexpr int BN = CG * TN;          // block columns
  constexpr int WARPS = THREADS / 32;
  constexpr int BROWS = BK / WARPS;    // B-tile rows per warp
  constexpr int BCOLS = BN / 32;       // B-tile columns per lane
  constexpr int AITER = (BM * BK + THREADS - 1) / THREADS;
  constexpr int AS = BM + 4;           // padded A row: conflict-free transposed stores, 16-byte rows
  static_assert(RG % 4 == 0 && CG % 8 == 0 && BN % 32 == 0 && BK % WARPS == 0 && BK <= 32, "tile shape");

  __shared__ __align__(16) float As[2][BK][AS];
  __shared__ __align__(16) float Bs[2][BK][BN];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int m0 = blockIdx.y * BM;
  const int j0 = blockIdx.x * BN;
  const int khkw = a.kh * a.kw;
  const int srcHW = a.srcH * a.srcW;

  // The columns this lane gathers for the B tile (fixed for the whole reduction): a pointer to the
  // column's origin in the source and its (y, x) there; a tap adds (dy, dx) and an offset.
  const float* colPtr[BCOLS];
  int colY[BCOLS], colX[BCOLS];
#pragma unroll
  for (int r = 0; r < BCOLS; ++r) {
    const int j = j0 + lane + 32 * r;
    colPtr[r] = a.src;
    colY[r] = -(1 << 30);  // a column past J: every bound check fails
    colX[r] = 0;
    if (j < a.J) {
      const int n = a.divPlane.div(j), pix = j - n * a.plane;
      const int oy = a.divPlaneW.div(pix), ox = pix - oy * a.planeW;
      int y, x;
      if (MODE == kForward) {
        y = oy * a.stride - a.padTop;
        x = ox * a.stride - a.padLeft;
      } else {
        y = oy + a.padTop;
        x = ox + a.padLeft;
      }
      colY[r] = y;
      colX[r] = x;
      colPtr[r] = a.src + int64_t(n) * a.srcC * srcHW + (MODE == kInputStrided ? 0 : int64_t(y) * a.srcW + x);
    }
  }

  float aReg[AITER];
  float bReg[BROWS][BCOLS];

  auto loadA = [&](int kt) {
#pragma unroll
    for (int i = 0; i < AITER; ++i) {
      const int e = tid + i * THREADS;
      float v = 0.0f;
      if (e < BM * BK) {
        const int m = m0 + e / BK, k = kt * BK + e % BK;
        if (m < a.M && k < a.K) {
          if (MODE == kForward) {
            v = __ldg(a.weight + int64_t(m) * a.K + k);
          } else {
            const int f = a.divKhkw.div(k);
            v = __ldg(a.weight + (int64_t(f) * a.C + m) * khkw + (k - f * khkw));
          }
        }
      }
      aReg[i] = v;
    }
  };
  auto storeA = [&](int buf) {
#pragma unroll
    for (int i = 0; i < AITER; ++i) {
      const int e = tid + i * THREADS;
      if (e < BM * BK) As[buf][e % BK][e / BK] = aReg[i];
    }
  };
  auto loadB = [&](int kt) {
#pragma unroll
    for (int i = 0; i < BROWS; ++i) {
      const int k = kt * BK + warp + WARPS * i;
      int koff = 0, dy = 1 << 29, dx = 0;  // past K: every bound check fails
      const bool kValid = k < a.K;
      if (kValid) {
        const int q = a.divKhkw.div(k), rr = k - q * khkw;
        const int ky = a.divKw.div(rr), kx = rr - ky * a.kw;
        if (MODE == kForward) {
          koff = q * srcHW + ky * a.srcW + kx;
          dy = ky;
          dx = kx;
        } else if (MODE == kInput) {
          koff = q * srcHW - ky * a.srcW - kx;
          dy = -ky;
          dx = -kx;
        } else {
          koff = q * srcHW;
          dy = ky;
          dx = kx;
        }
      }
#pragma unroll
      for (int r = 0; r < BCOLS; ++r) {
        float v = 0.0f;
        if (MODE != kInputStrided) {
          const int yy = colY[r] + dy, xx = colX[r] + dx;
          if (unsigned(yy) < unsigned(a.srcH) && unsigned(xx) < unsigned(a.srcW)) v = __ldg(colPtr[r] + koff);
        } else {
          const int ty = colY[r] - dy, tx = colX[r] - dx;
          if (kValid && ty >= 0 && tx >= 0) {
            const int oy = a.divStride.div(ty), ox = a.divStride.div(tx);
            if (oy * a.stride == ty && ox * a.stride == tx && oy < a.srcH && ox < a.srcW)
              v = __ldg(colPtr[r] + koff + oy * a.srcW + ox);
          }
        }
        bReg[i][r] = v;
      }
    }
  };
  auto storeB = [&](int buf) {
#pragma unroll
    for (int i = 0; i < BROWS; ++i)
#pragma unroll
      for (int r = 0; r < BCOLS; ++r) Bs[buf][warp + WARPS * i][lane + 32 * r] = bReg[i][r];
  };

  // this thread's micro-tile
  constexpr int WARP_COLS = CG / 8;
  const int rg = (warp / WARP_COLS) * 4 + (lane >> 3);
  const int cg = (warp % WARP_COLS) * 8 + (lane & 7);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int t = 0; t < TN; ++t) acc[i][t] = 0.0f;

  const int tiles = (a.K + BK - 1) / BK;
  loadA(0);
  loadB(0);
  storeA(0);
  storeB(0);
  __syncthreads();
  for (int kt = 0; kt < tiles; ++kt) {
    const int buf = kt & 1;
    const bool more = kt + 1 < tiles;
    if (more) {
      loadA(kt + 1);
      loadB(kt + 1);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float af[TM], bf[TN];
      loadFragment<TM>(af, &As[buf][k][rg * TM]);
      loadFragment<TN>(bf, &Bs[buf][k][cg * TN]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int t = 0; t < TN; ++t) acc[i][t] = fmaf(af[i], bf[t], acc[i][t]);
    }
    if (more) {
      storeA(buf ^ 1);
      storeB(buf ^ 1);
    }
    __syncthreads();
  }

  // epilogue: (n, pix) of this thread's columns, then bias + activation or the gate
  const int jt = j0 + cg * TN;
  int colN[TN], colPix[TN];
#pragma unroll
  for (int t = 0; t < TN; ++t) {
    const int n = a.divPlane.div(jt + t);
    colN[t] = n;
    colPix[t] = jt + t - n * a.plane;
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + rg * TM + i;
    if (m >= a.M) break;
    const float b = MODE == kForward ? __ldg(a.bias + m) : 0.0f;
    if constexpr (TN == 4) {
      if (a.vec && jt + TN <= a.J) {
        const int64_t idx = (int64_t(colN[0]) * a.M + m) * a.plane + colPix[0];
        float v[4] = {acc[i][0], acc[i][1], acc[i][2], acc[i][3]};
        if (MODE == kForward) {
#pragma unroll
          for (int t = 0; t < 4; ++t) v[t] = activate(v[t] + b, a.act, a.alpha);
        } else if (a.gate) {
          const float4 g = __ldg(reinterpret_cast<const float4*>(a.gate + idx));
          v[0] = gateBy(v[0], g.x, a.act, a.alpha);
          v[1] = gateBy(v[1], g.y, a.act, a.alpha);
          v[2] = gateBy(v[2], g.z, a.act, a.alpha);
          v[3] = gateBy(v[3], g.w, a.act, a.alpha);
        }
        *reinterpret_cast<float4*>(a.dst + idx) = make_float4(v[0], v[1], v[2], v[3]);
        continue;
      }
    }
#pragma unroll
    for (int t = 0; t < TN; ++t) {
      if (jt + t >= a.J) break;
      const int64_t idx = (int64_t(colN[t]) * a.M + m) * a.plane + colPix[t];
      float v = acc[i][t];
      if (MODE == kForward) v = activate(v + b, a.act, a.alpha);
      else if (a.gate) v = gateBy(v, __ldg(a.gate + idx), a.act, a.alpha);
      a.dst[idx] = v;
    }
  }
}

template <int MODE, int BM, int TM, int TN, int THREADS, int BK>
void launchGemm(cudaStream_t stream, const ConvGemmArgs& a) {
  constexpr int BN = THREADS / (BM / TM) * TN;
  const dim3 grid(unsigned((int64_t(a.J) + BN - 1) / BN), unsigned((a.M + BM - 1) / BM));
  launchKernel("convGemmKernel", convGemmKernel<MODE, BM, TM, TN, THREADS, BK>, grid, THREADS, 0, stream, a);
  checkLaunch("conv2d implicit GEMM");
}

// the chooser's tile (kernel_choice.h, gemmTile): the row count fixes TM, the threads and BK; TN is 4, 2 or 1
template <int MODE, int BM, int TM, int THREADS, int BK>
void launchGemmTn(cudaStream_t stream, const ConvGemmArgs& a, int tn) {
  if (tn == 4) launchGemm<MODE, BM, TM, 4, THREADS, BK>(stream, a);
  else if (tn == 2) launchGemm<MODE, BM, TM, 2, THREADS, BK>(stream, a);
  else launchGemm<MODE, BM, TM, 1, THREADS, BK>(stream, a);
}

template <int MODE>
void dispatchGemm(cudaStream_t stream, const ConvGemmArgs& a, const ConvGemmTile& t) {
  constexpr int SBK = NNSTUDIO_CONV_SMALL_BK;
  switch (t.bm) {
    case 4: launchGemmTn<MODE, 4, 1, 128, SBK>(stream, a, t.tn); break;
    case 8: launchGemmTn<MODE, 8, 2, 128, SBK>(stream, a, t.tn); break;
    case 16: launchGemmTn<MODE, 16, 4, 128, SBK>(stream, a, t.tn); break;
    case 32: launchGemmTn<MODE, 32, 4, 256, 8>(stream, a, t.tn); break;
    default: launchGemmTn<MODE, 64, 8, 256, 8>(stream, a, t.tn); break;
  }
}

// ---- weight gradient: split-P GEMM + ordered reduction ----

constexpr int kWgBP = kConvWgradPixelsPerStep;  // pixels per reduction step
constexpr int kNoTap = 1 << 29;    // tap table: column past K+1 (bound checks fail)
constexpr int kOnesTap = -(1 << 29);  // tap table: the bias column (value 1)

// Block: BM = RG*TM filters x BN = (256/RG)*TN columns of [col; ones], 256 threads as RG thread-rows x
// 256/RG thread-columns (RG 16, or 8 for layers of <= 8 filters), over one chunk of P.
template <int RG, int TM, int TN>
__global__ void __launch_bounds__(256) convWeightGradKernel(const ConvWgradArgs a) {
  startAfterPreviousKernel();
  constexpr int THREADS = 256, CG = THREADS / RG;
  constexpr int BM = RG * TM, BN = CG * TN, BP = kWgBP;
  constexpr int AS = BM + 4, BS = BN + 4;  // row pads: the transposed stores hit 32 distinct banks
  static_assert(BM % 8 == 0 && BN % 8 == 0 && CG % 8 == 0, "tile shape");
  __shared__ __align__(16) float As[2][BP][AS];
  __shared__ __align__(16) float Bs[2][BP][BS];
  __shared__ int tabOff[BN], tabY[BN], tabX[BN];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int f0 = blockIdx.y * BM, k0 = blockIdx.x * BN;
  const int pBegin = blockIdx.z * a.chunk;
  const int pEnd = min(a.P, pBegin + a.chunk);
  const int HW = a.H * a.W, OHW = a.OH * a.OW, khkw = a.kh * a.kw;

  // the block's columns: tap offset within a sample and (ky, kx); the bias column; padding
  for (int t = tid; t < BN; t += THREADS) {
    const int k = k0 + t;
    int off = 0, y = kNoTap, x = 0;
    if (k < a.K) {
      const int c = k / khkw, r = k - c * khkw;
      const int ky = r / a.kw, kx = r - ky * a.kw;
      off = c * HW + ky * a.W + kx;
      y = ky;
      x = kx;
    } else if (k == a.K) {
      y = kOnesTap;
    }
    tabOff[t] = off;
    tabY[t] = y;
    tabX[t] = x;
  }

  // loads: a warp instruction covers 8 pixels x 4 rows (32-byte segments of consecutive pixels)
  const int psub = (warp & 3) * 8 + (lane & 7);
  const int rbase = (warp >> 2) * 4 + (lane >> 3);  // + 8i
  float aReg[BM / 8], bReg[BN / 8];

  auto load = [&](int pt) {
    const int p = pt + psub;
    const bool valid = p < pEnd;
    int n = 0, op = 0, y0 = 0, x0 = 0;
    if (valid) {
      n = a.divOHW.div(p);
      op = p - n * OHW;
      const int oy = a.divOW.div(op), ox = op - oy * a.OW;
      y0 = oy * a.stride - a.padTop;
      x0 = ox * a.stride - a.padLeft;
    }
    const float* dptr = a.dOut + int64_t(n) * a.F * OHW + op;
    const float* iptr = a.in + int64_t(n) * a.C * HW + (y0 * a.W + x0);
#pragma unroll
    for (int i = 0; i < BM / 8; ++i) {
      const int f = f0 + rbase + 8 * i;
      aReg[i] = valid && f < a.F ? __ldg(dptr + int64_t(f) * OHW) : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < BN / 8; ++i) {
      const int t = rbase + 8 * i;
      const int ty = tabY[t];
      float v;
      if (ty == kOnesTap) {
        v = valid ? 1.0f : 0.0f;
      } else {
        const int yy = y0 + ty, xx = x0 + tabX[t];
        v = valid && unsigned(yy) < unsigned(a.H) && unsigned(xx) < unsigned(a.W) ? __ldg(iptr + tabOff[t]) : 0.0f;
      }
      bReg[i] = v;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < BM / 8; ++i) As[buf][psub][rbase + 8 * i] = aReg[i];
#pragma unroll
    for (int i = 0; i < BN / 8; ++i) Bs[buf][psub][rbase + 8 * i] = bReg[i];
  };

  // micro-tile: RG x CG threads, a warp = 4 thread-rows x 8 thread-columns
  constexpr int WARP_COLS = CG / 8;
  const int rg = (warp / WARP_COLS) * 4 + (lane >> 3);
  const int cg = (warp % WARP_COLS) * 8 + (lane & 7);
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int t = 0; t < TN; ++t) acc[i][t] = 0.0f;

  const int tiles = pEnd > pBegin ? (pEnd - pBegin + BP - 1) / BP : 0;
  __syncthreads();  // the tap table
  if (tiles > 0) {
    load(pBegin);
    store(0);
  }
  __syncthreads();
  for (int pt = 0; pt < tiles; ++pt) {
    const int buf = pt & 1;
    const bool more = pt + 1 < tiles;
    if (more) load(pBegin + (pt + 1) * BP);
#pragma unroll 8
    for (int p = 0; p < BP; ++p) {
      float af[TM], bf[TN];
      loadFragment<TM>(af, &As[buf][p][rg * TM]);
      loadFragment<TN>(bf, &Bs[buf][p][cg * TN]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int t = 0; t < TN; ++t) acc[i][t] = fmaf(af[i], bf[t], acc[i][t]);
    }
    if (more) store(buf ^ 1);
    __syncthreads();
  }

  const bool direct = gridDim.z == 1;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int f = f0 + rg * TM + i;
    if (f >= a.F) break;
#pragma unroll
    for (int t = 0; t < TN; ++t) {
      const int k = k0 + cg * TN + t;
      if (k >= a.Kp) break;
      if (!direct) a.partial[(int64_t(blockIdx.z) * a.F + f) * a.Kp + k] = acc[i][t];
      else if (k < a.K) a.dWeight[int64_t(f) * a.K + k] = acc[i][t];
      else a.dBias[f] = acc[i][t];
    }
  }
}

// dW, dBias = the sum over the splits in a fixed order: 32 outputs per block, warp w adds splits
// w, w + 16, ..., then the 16 warp sums are added in warp order.
constexpr int kReduceWarps = 16;
__global__ void __launch_bounds__(kReduceWarps * 32) convWeightReduceKernel(const float* __restrict__ partial,
                                                              float* __restrict__ dWeight,
                                                              float* __restrict__ dBias, int S, int K, int Kp,
                                                              int total) {
  startAfterPreviousKernel();
  __shared__ float sums[kReduceWarps][33];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int e = blockIdx.x * 32 + lane;
  float s = 0.0f;
  if (e < total) {
#pragma unroll 4
    for (int z = warp; z < S; z += kReduceWarps) s += __ldg(partial + int64_t(z) * total + e);
  }
  sums[warp][lane] = s;
  __syncthreads();
  if (warp == 0 && e < total) {
    float t = sums[0][lane];
#pragma unroll
    for (int w = 1; w < kReduceWarps; ++w) t += sums[w][lane];
    const int f = e / Kp, k = e - f * Kp;
    if (k < K) dWeight[int64_t(f) * K + k] = t;
    else dBias[f] = t;
  }
}


template <int RG, int TM, int TN>
void launchWeightGrad(cudaStream_t stream, const ConvWgradPlan& plan, const ConvWgradArgs& a) {
  const dim3 grid(unsigned(plan.tilesN), unsigned(plan.tilesM), unsigned(plan.S));
  launchKernel("convWeightGradKernel", convWeightGradKernel<RG, TM, TN>, grid, 256, 0, stream, a);
  checkLaunch("conv2d weight gradient");
}

void checkSizes(int N, const ConvGeometry& g) {
  const int64_t inSize = int64_t(N) * g.C * g.H * g.W, outSize = int64_t(N) * g.F * g.OH * g.OW;
  if (inSize >= INT_MAX || outSize >= INT_MAX || int64_t(g.F) * g.colRows() >= INT_MAX)
    throw EngineError("conv2d: tensor too large for the CUDA kernels (2^31 elements); lower the batch size");
}

void checkElementwise(ActivationFn fn) {
  if (fn == ActivationFn::Softmax)
    throw EngineError("conv2d on CUDA: softmax is not an elementwise activation");
}

}  // namespace

// ---- launchers ----

// The overrides in force, with a run's TF32 or mixed precision where no NNSTUDIO_CONV_TC override decides the
// tensor cores (kernel_choice.h convTcModeFor): TF32, BF16 and FP16 take the same kernels where they pay, with
// one product per multiply. On Turing only FP16 runs on the tensor cores, so the weight gradient's plan, and
// its workspace, depend on the precision.
static KernelOverrides overridesFor(Precision precision) {
  KernelOverrides o = kernelOverrides();
  o.convTc = convTcModeFor(currentDeviceCaps(), o, precision);
  return o;
}

void conv2d_forward(cudaStream_t stream, float* out, const float* in, const float* weight, const float* bias, int N,
                    const ConvGeometry& g, ActivationFn act, float alpha, Precision precision) {
  checkElementwise(act);
  if (N <= 0 || g.F <= 0 || g.OH <= 0 || g.OW <= 0) return;
  checkSizes(N, g);
  const ConvPassChoice c = chooseConvPass(currentDeviceCaps(), overridesFor(precision), ConvPass::Forward, N, g);
  switch (c.kernel) {
    case ConvKernel::Direct:
      conv2d_direct_forward(stream, c.direct, out, in, weight, bias, N, g, act, alpha);
      break;
    case ConvKernel::TensorCore3xTf32:
    case ConvKernel::TensorCoreTf32:
    case ConvKernel::TensorCoreBf16:
    case ConvKernel::TensorCoreFp16:
      conv2d_tc_forward(stream, c.tc, tcMathOf(c.kernel), out, in, weight, bias, N, g, act, alpha);
      break;
    case ConvKernel::ImplicitGemm:
      // float4 epilogue
      dispatchGemm<kForward>(stream, convForwardGemm(out, in, weight, bias, N, g, act, alpha, 4), c.gemm);
      break;
  }
}

size_t conv2d_weights_workspace(int N, const ConvGeometry& g, Precision precision) {
  return convWgradWorkspace(chooseConvWeightGrad(currentDeviceCaps(), overridesFor(precision), N, g), g);
}

void conv2d_backward_weights(cudaStream_t stream, float* dWeight, float* dBias, const float* dOut, const float* in,
                             int N, const ConvGeometry& g, float* workspace, Precision precision) {
  if (g.F <= 0 || g.colRows() <= 0) return;
  checkSizes(std::max(N, 0), g);
  const ConvWgradPlan plan = chooseConvWeightGrad(currentDeviceCaps(), overridesFor(precision), N, g);
  const ConvWgradArgs a = convWgradArgs(dWeight, dBias, dOut, in, workspace, N, g, plan.chunk);
  if (plan.tc) {
    conv2d_tc_backward_weights(stream, plan, a);
  } else if (plan.rg == 8) {
    switch (plan.tn) {
      case 1: launchWeightGrad<8, 1, 1>(stream, plan, a); break;
      case 2: launchWeightGrad<8, 1, 2>(stream, plan, a); break;
      default: launchWeightGrad<8, 1, 4>(stream, plan, a); break;
    }
  } else {
    switch (plan.tm * 10 + plan.tn) {
      case 11: launchWeightGrad<16, 1, 1>(stream, plan, a); break;
      case 12: launchWeightGrad<16, 1, 2>(stream, plan, a); break;
      case 14: launchWeightGrad<16, 1, 4>(stream, plan, a); break;
      case 21: launchWeightGrad<16, 2, 1>(stream, plan, a); break;
      case 22: launchWeightGrad<16, 2, 2>(stream, plan, a); break;
      case 24: launchWeightGrad<16, 2, 4>(stream, plan, a); break;
      case 41: launchWeightGrad<16, 4, 1>(stream, plan, a); break;
      case 42: launchWeightGrad<16, 4, 2>(stream, plan, a); break;
      case 44: launchWeightGrad<16, 4, 4>(stream, plan, a); break;
      case 81: launchWeightGrad<16, 8, 1>(stream, plan, a); break;
      default: launchWeightGrad<16, 8, 2>(stream, plan, a); break;
    }
  }
  if (plan.S > 1) {
    const int total = a.F * a.Kp;
    launchKernel("conv2d weight gradient reduction", convWeightReduceKernel, blocksFor(total, 32), kReduceWarps * 32,
                 0, stream, workspace, dWeight, dBias, plan.S, a.K, a.Kp, total);
    checkLaunch("conv2d weight gradient reduction");
  }
}

void conv2d_backward_input(cudaStream_t stream, float* dIn, const float* dOut, const float* weight, const float* in,
                           int N, const ConvGeometry& g, ActivationFn inAct, float inAlpha, Precision precision) {
  checkElementwise(inAct);
  if (N <= 0 || g.C <= 0 || g.H <= 0 || g.W <= 0) return;
  checkSizes(N, g);
  const ConvPassChoice c = chooseConvPass(currentDeviceCaps(), overridesFor(precision), ConvPass::InputGradient, N, g);
  switch (c.kernel) {
    case ConvKernel::Direct:
      conv2d_direct_backward_input(stream, c.direct, dIn, dOut, weight, in, N, g, inAct, inAlpha);
      break;
    case ConvKernel::TensorCore3xTf32:
    case ConvKernel::TensorCoreTf32:
    case ConvKernel::TensorCoreBf16:
    case ConvKernel::TensorCoreFp16:
      conv2d_tc_backward_input(stream, c.tc, tcMathOf(c.kernel), dIn, dOut, weight, in, N, g, inAct, inAlpha);
      break;
    case ConvKernel::ImplicitGemm: {
      const ConvGemmArgs a = convInputGemm(dIn, dOut, weight, in, N, g, inAct, inAlpha, 4);
      if (g.stride == 1) dispatchGemm<kInput>(stream, a, c.gemm);
      else dispatchGemm<kInputStrided>(stream, a, c.gemm);
      break;
    }
  }
}

}  // namespace nnstudio::cuda
