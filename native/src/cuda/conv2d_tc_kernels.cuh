// conv2d's forward and input-gradient implicit GEMMs on the tensor cores: mma.sync m16n8k8 TF32 (sm_80+)
// with 3xTF32 error compensation, so the result has FP32-level accuracy; or, for a run's TF32 or mixed
// precision, one m16n8k8 TF32 or m16n8k16 BF16 / FP16 product per multiply (MATH: kernel_choice.h TcMath).
// FP16 also runs on Turing (sm_75: plain copies for cp.async, two k8 mma per k16 step; tc_mma.cuh).
//   forward  out (F, N*OH*OW) = W (F, K) . col (K, N*OH*OW),   K = C*kh*kw; epilogue + bias, activation
//   dIn      dIn (C, N*H*W) = W' (C, F*kh*kw) . dOut gathered at (iy + padTop - ky, ix + padLeft - kx);
//            epilogue * inAct'(in). Stride > 1: one launch per phase (conv_gemm.cuh convInputPhaseGemm), each
//            a stride-1 correlation with the taps that land on outputs, its columns written strided.
// The same GEMMs as conv2d.cu's convGemmKernel (same im2col gather, same epilogues); only the inner
// product differs.
//
// 3xTF32: each operand x = big + small, big = tf32(x) (round to nearest), small = x - big (the tensor
// core truncates it to TF32); then a.b ~ a_big.b_big + a_big.b_small + a_small.b_big. TF32 products are
// exact in the FP32 accumulator; what is dropped (a_small.b_small, small's truncation) is < 2^-20
// relative per product: FP32-like. The split is integer add + mask + FADD (cvt.rna.tf32.f32 costs
// several instructions on sm_90, and instruction issue bounds this kernel as much as the mma does).
//
// Block tile BM (32 or 64) x BN (WN * 32) x BK (16 or 32); warps WM x WN, each a 32 x 32 tile of 2 x 4
// m16n8 fragments, times KS warp groups that share the K tiles (splitK; below). Tiles reach shared memory
// by cp.async (4 bytes, zero-filled where the gather is out of bounds, so the im2col padding costs no
// branch; which taps of a column are in bounds is a 32-bit mask made once per column), 3 stages, one
// __syncthreads per K step. Layouts: A as [m][k] (row pad
// 4) and B as [k][n] (row pad 8), so the fragment loads hit 32 distinct banks. The split into
// big/small happens on the fragments in registers.
// The reduction order is fixed (no atomics) and the same for every tile shape of one KS: deterministic.
// Launchers only enqueue.
// H100, keras conv2 at batch 128 (us, in a CUDA graph): forward 111 (SIMT) -> 82, input gradient
// 168 -> 102; 1xTF32 would give 60 / 80 but misses the parity tolerance (keras conv2: max |err| 4.4e-4
// forward, 6.6e-4 input gradient against 3.1e-4 = 1e-4 (1 + max |ref|)). What is left (ncu): stalls on fixed
// latencies and the tensor pipe (mma.sync TF32 runs at half of Hopper's wgmma rate), at 25 % occupancy.
//
// This header holds the kernel and its launch templates; each arithmetic's instances compile in a file of
// their own (conv2d_tc_3xtf32.cu, conv2d_tc_tf32.cu, conv2d_tc_bf16.cu, conv2d_tc_fp16.cu), so that a build
// compiles them in parallel (one file took 2.5 of the GPU check's 5 minutes of build); conv2d_tc.cu dispatches.
#pragma once

#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/conv2d_tc.h"
#include "cuda/conv_gemm.cuh"
#include "cuda/launch.cuh"
#include "cuda/tc_mma.cuh"

namespace nnstudio::cuda::conv_tc {

// ---- the kernel ----

// the arguments and modes are conv2d.cu's (conv_gemm.cuh); `vec`: float2 stores in the epilogue
using tc::cpAsync4;
using tc::cpAsyncCommit;
using tc::cpAsyncWait;

// shared memory of one block: STAGES x (A [BM][BK + 4], B [BK][WN * 32 + 8]); with KS > 1 at least the
// warps' 32 x 32 tiles, for the sum of the groups after the loop
template <int BM, int WN, int BK, int STAGES, int KS>
constexpr size_t tcSmemBytes() {
  return convTcSharedBytes(ConvTcTile{BM, WN, BK, STAGES, 1, KS});  // kernel_choice.h: the chooser checks it fits
}

// KS warp groups share each K tile: group z takes the tile's k steps (8 wide, BF16 16) z, z + KS, ... for its 32 x 32 output
// tile, and group 0 adds the others' sums before the epilogue. The block has KS times the warps, so each
// thread gathers 1/KS of the tile and each warp runs 1/KS of the products: a shorter chain per warp (the
// small layers' launches are bound by it, not by the SMs' issue slots).
template <int MODE, int BM, int WN, TcMath MATH, int BK, int STAGES, int KS>
__device__ __forceinline__ void convTcBlock(const ConvGemmArgs& a) {
  constexpr int WM = BM / 32;             // warps along M
  constexpr int TILE_WARPS = WM * WN;     // the warps of one group, a 32 x 32 output tile each
  constexpr int WARPS = TILE_WARPS * KS;
  constexpr int THREADS = WARPS * 32;
  constexpr int BN = WN * 32;             // block columns
  constexpr int AS = BK + 4;              // A row [m][k]: fragment rows 20 floats apart, distinct banks
  constexpr int BS = BN + 8;              // B row [k][n]: fragment rows 8 banks apart
  constexpr int AITER = BM * BK / THREADS;
  constexpr int AROWS = THREADS / BK;     // A rows covered by one pass of the block
  constexpr int BROWS = BK / WARPS;       // B-tile rows per warp
  constexpr int BCOLS = BN / 32;          // B-tile columns per lane
  static_assert(BM * BK % THREADS == 0 && THREADS % BK == 0 && BK % WARPS == 0 && (BM == 32 || BM == 64) &&
                    BK % (tc::kStep<MATH> * KS) == 0 && (KS == 1 || KS == 2),
                "tile shape (the sums' buffer, convTcSharedBytes, holds one other group)");

  extern __shared__ __align__(16) float smem[];
  auto As = reinterpret_cast<float(*)[BM][AS]>(smem);                    // [STAGES][BM][AS]
  auto Bs = reinterpret_cast<float(*)[BK][BS]>(smem + STAGES * BM * AS);  // [STAGES][BK][BS]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int m0 = blockIdx.y * BM;
  const int j0 = blockIdx.x * BN;
  const int khkw = a.kh * a.kw;
  const int srcHW = a.srcH * a.srcW;

  // The columns this lane gathers for the B tile, fixed for the whole reduction: the offset of the
  // column's origin in the source and a bit per tap (ky, kx) that lands inside the source (kh * kw <= 32),
  // so a tap costs one AND instead of four compares; a column past J has no taps.
  int colOff[BCOLS];
  uint32_t colTaps[BCOLS];
#pragma unroll
  for (int r = 0; r < BCOLS; ++r) {
    const int j = j0 + lane + 32 * r;
    colOff[r] = 0;
    colTaps[r] = 0;
    if (j < a.J) {
      const int n = a.divPlane.div(j), pix = j - n * a.plane;
      const int oy = a.divPlaneW.div(pix), ox = pix - oy * a.planeW;
      // forward: tap at (y + ky, x + kx); input gradient: at (y - ky, x - kx)
      const int y = MODE == kForward ? oy * a.stride - a.padTop : oy + a.padTop;
      const int x = MODE == kForward ? ox * a.stride - a.padLeft : ox + a.padLeft;
      colOff[r] = n * a.srcC * srcHW + y * a.srcW + x;
      // the taps inside form a range of ky and one of kx: forward 0 <= x + kx < W, so kx in
      // [-x, W - x); input gradient 0 <= x - kx < W, so kx in [x - W + 1, x + 1); the same for ky
      const int xlo = max(0, MODE == kForward ? -x : x - a.srcW + 1);
      const int xhi = min(a.kw, MODE == kForward ? a.srcW - x : x + 1);
      const int ylo = max(0, MODE == kForward ? -y : y - a.srcH + 1);
      const int yhi = min(a.kh, MODE == kForward ? a.srcH - y : y + 1);
      const uint32_t xs = xhi > xlo ? (xhi >= 32 ? 0u : 1u << xhi) - (1u << xlo) : 0u;  // bits [xlo, xhi)
      uint32_t taps = 0;
      for (int ky = ylo; ky < yhi; ++ky) taps |= xs << (ky * a.kw);
      colTaps[r] = taps;
    }
  }

  // A: this thread's k within the tile is fixed (tid % BK); its rows are tid / BK + AROWS * i, whose
  // offsets in the weight (forward weight[m][k]: m * K; input gradient weight[f][m][tap]: m * the layer's
  // kh * kw, which a phase's taps are a subset of) and bounds are fixed too.
  const int wKhkw = MODE == kInputPhase ? a.tapKhkw : khkw;
  const int aK = tid % BK, aM = tid / BK;
  int aRowOff[AITER];
  uint32_t aRowOk = 0;
#pragma unroll
  for (int i = 0; i < AITER; ++i) {
    const int m = m0 + aM + AROWS * i;
    aRowOff[i] = m * (MODE == kForward ? a.K : wKhkw);
    if (m < a.M) aRowOk |= 1u << i;
  }

  // shared-memory addresses of this thread's copies (stage 0); a stage adds A_STAGE / B_STAGE bytes
  constexpr uint32_t A_STAGE = BM * AS * 4, B_STAGE = BK * BS * 4;
  const uint32_t smemBase = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t aDst0 = smemBase + uint32_t(aM * AS + aK) * 4;
  const uint32_t bDst0 = smemBase + STAGES * A_STAGE + uint32_t(warp * BS + lane) * 4;

  // enqueue the copies of K tile kt into stage s (zero-filled outside the matrices). An ignored copy's
  // source address is never read, so it is not clamped.
  auto loadTile = [&](int kt, int s) {
    {
      const int k = kt * BK + aK;
      int base;
      if (MODE == kForward) {
        base = k;
      } else {
        const int f = a.divKhkw.div(k);
        int tap = k - f * khkw;
        if (MODE == kInputPhase) {  // the phase's tap (jy, jx) is the layer's (phaseY + jy s, phaseX + jx s)
          const int jy = a.divKw.div(tap), jx = tap - jy * a.kw;
          tap = (a.phaseY + jy * a.stride) * a.tapKw + a.phaseX + jx * a.stride;
        }
        base = f * a.C * wKhkw + tap;
      }
      const uint32_t ok = k < a.K ? aRowOk : 0u;
      const uint32_t dst = aDst0 + s * A_STAGE;
#pragma unroll
      for (int i = 0; i < AITER; ++i)
        cpAsync4(dst + i * AROWS * AS * 4, a.weight + (base + aRowOff[i]), ok & (1u << i));
    }
    const uint32_t dst = bDst0 + s * B_STAGE;
#pragma unroll
    for (int i = 0; i < BROWS; ++i) {
      const int kk = warp + WARPS * i;
      const int k = kt * BK + kk;
      const bool kValid = k < a.K;
      int koff = 0, ky = 0, kx = 0;
      uint32_t tapBit = 0;  // past K: no tap
      if (kValid) {
        const int q = a.divKhkw.div(k), tap = k - q * khkw;
        ky = a.divKw.div(tap);
        kx = tap - ky * a.kw;
        tapBit = 1u << tap;
        if (MODE == kForward) koff = q * srcHW + ky * a.srcW + kx;
        else koff = q * srcHW - ky * a.srcW - kx;
      }
#pragma unroll
      for (int r = 0; r < BCOLS; ++r) {
        const uint32_t d = dst + uint32_t(WARPS * i * BS + 32 * r) * 4;
        cpAsync4(d, a.src + (colOff[r] + koff), colTaps[r] & tapBit);
      }
    }
  };

  const int g = lane >> 2, t = lane & 3;  // the fragments' group and thread-in-group
  const int tileWarp = warp % TILE_WARPS, kz = warp / TILE_WARPS;
  const int wm = tileWarp / WN, wn = tileWarp % WN;
  float acc[2][4][4];
  tc::clearWarpTile(acc);

  const int tiles = (a.K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) loadTile(s, s);
    cpAsyncCommit();
  }
  int s = 0, sLoad = STAGES - 1;  // the stage read now, the stage loaded now
  for (int kt = 0; kt < tiles; ++kt) {
    cpAsyncWait<STAGES - 2>();  // this thread's copies of tile kt have landed
    __syncthreads();             // everyone's have; and everyone is done with tile kt - 1's stage
    if (kt + STAGES - 1 < tiles) loadTile(kt + STAGES - 1, sLoad);
    cpAsyncCommit();
    sLoad = sLoad + 1 == STAGES ? 0 : sLoad + 1;
    auto aAt = [&](int r, int k) { return As[s][wm * 32 + r][k]; };
    auto bAt = [&](int k, int c) { return Bs[s][k][wn * 32 + c]; };
    constexpr int STEP = tc::kStep<MATH>;
#pragma unroll
    for (int k = STEP * kz; k < BK; k += STEP * KS) tc::mmaWarpTile<MATH>(acc, k, g, t, aAt, bAt);
    s = s + 1 == STAGES ? 0 : s + 1;
  }
  cpAsyncWait<0>();  // no copy may be in flight when the block exits
  if constexpr (KS > 1) {  // group 0 adds the other groups' sums (in group order), then writes alone
    __syncthreads();       // every warp is done with the stages
    float* sums = smem;    // [group - 1][element][tile warp][lane]: a warp's stores hit 32 banks
    float* flat = &acc[0][0][0];
    if (kz > 0)
#pragma unroll
      for (int e = 0; e < 32; ++e) sums[((kz - 1) * 32 + e) * TILE_WARPS * 32 + tileWarp * 32 + lane] = flat[e];
    __syncthreads();
    if (kz > 0) return;
    for (int z = 1; z < KS; ++z)
#pragma unroll
      for (int e = 0; e < 32; ++e) flat[e] += sums[((z - 1) * 32 + e) * TILE_WARPS * 32 + tileWarp * 32 + lane];
  }

  // epilogue: fragment element c holds row g (+8 for c >= 2), column 2t (+1 for odd c)
  // where column pix of sample n, row m goes: a phase's columns are strided in the input
  auto dstIndex = [&](int n, int m, int pix) -> int64_t {
    if constexpr (MODE == kInputPhase) {
      const int qy = a.divPlaneW.div(pix), qx = pix - qy * a.planeW;
      return (int64_t(n) * a.M + m) * a.dstPlane + int64_t(qy * a.stride + a.dstY0) * a.dstW + qx * a.stride +
             a.dstX0;
    }
    return (int64_t(n) * a.M + m) * a.plane + pix;
  };
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int j = j0 + wn * 32 + nt * 8 + 2 * t;
    if (j >= a.J) continue;
    const int n0 = a.divPlane.div(j), pix0 = j - n0 * a.plane;
    const bool second = j + 1 < a.J;
    int n1 = n0, pix1 = pix0 + 1;
    if (pix1 == a.plane) {
      ++n1;
      pix1 = 0;
    }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + wm * 32 + mt * 16 + g + 8 * h;
        if (m >= a.M) continue;
        float v0 = acc[mt][nt][2 * h], v1 = acc[mt][nt][2 * h + 1];
        const int64_t i0 = dstIndex(n0, m, pix0);
        const int64_t i1 = dstIndex(n1, m, pix1);
        if (MODE == kForward) {
          const float b = __ldg(a.bias + m);
          v0 = activate(v0 + b, a.act, a.alpha);
          v1 = activate(v1 + b, a.act, a.alpha);
        }
        if (a.vec && second) {  // j even, plane even: both in one plane, 8-byte aligned
          if (MODE != kForward && a.gate) {
            const float2 y = __ldg(reinterpret_cast<const float2*>(a.gate + i0));
            v0 = gateGradient(v0, y.x, a.act, a.alpha);
            v1 = gateGradient(v1, y.y, a.act, a.alpha);
          }
          *reinterpret_cast<float2*>(a.dst + i0) = make_float2(v0, v1);
        } else {
          if (MODE != kForward && a.gate) v0 = gateGradient(v0, __ldg(a.gate + i0), a.act, a.alpha);
          a.dst[i0] = v0;
          if (second) {
            if (MODE != kForward && a.gate) v1 = gateGradient(v1, __ldg(a.gate + i1), a.act, a.alpha);
            a.dst[i1] = v1;
          }
        }
      }
  }
}

// The body where this compilation pass has MATH's instructions (tc::kMathCompiled), else empty: the chooser
// never launches it there.
template <int MODE, int BM, int WN, TcMath MATH, int BK, int STAGES, int MINB, int KS>
__global__ void __launch_bounds__(BM / 32 * WN * 32 * KS, MINB) convTcKernel(const ConvGemmArgs a) {
  startAfterPreviousKernel();
  if constexpr (tc::kMathCompiled<MATH>) convTcBlock<MODE, BM, WN, MATH, BK, STAGES, KS>(a);
}

template <int MODE, int BM, int WN, TcMath MATH, int BK, int STAGES, int MINB, int KS>
void launchTcKernel(cudaStream_t stream, const ConvGemmArgs& a) {
  constexpr int BN = WN * 32, THREADS = BM / 32 * WN * 32 * KS;
  constexpr size_t smem = tcSmemBytes<BM, WN, BK, STAGES, KS>();
  auto kernel = convTcKernel<MODE, BM, WN, MATH, BK, STAGES, MINB, KS>;
  if constexpr (smem > 48 * 1024) {
    static PerDevice<bool> opted;  // once per kernel and device: more than the default 48 KiB of shared memory
    oncePerDevice(opted, [&] {
      check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
            "conv2d tensor-core shared memory");
      return true;
    });
  }
  const dim3 grid(unsigned((int64_t(a.J) + BN - 1) / BN), unsigned((a.M + BM - 1) / BM));
  launchKernel("convTcKernel", kernel, grid, THREADS, smem, stream, a);
  checkLaunch("conv2d tensor-core implicit GEMM");
}

template <int MODE, int BM, int WN, TcMath MATH, int BK = 16, int STAGES = 3, int MINB = 1, int KS = 1>
void launchTc(cudaStream_t stream, const ConvGemmArgs& a) {
  if constexpr (BK % (tc::kStep<MATH> * KS) != 0) {  // 16-bit steps of 16 do not split a K tile of 16 (hasSplitKernel)
    throw EngineError("conv2d tensor cores: this tile's K tile does not split into 16-bit steps");
  } else {
    launchTcKernel<MODE, BM, WN, MATH, BK, STAGES, MINB, KS>(stream, a);
  }
}

// the chooser's tile (kernel_choice.h: tcTile, tcVariant)
template <int MODE, TcMath MATH>
void launchTile(cudaStream_t stream, const ConvGemmArgs& a, const ConvTcTile& t) {
  auto is = [&](int bm, int wn, int bk, int stages, int minBlocks, int splitK = 1) {
    return t == ConvTcTile{bm, wn, bk, stages, minBlocks, splitK};
  };
  // the chooser's default tiles, their K tiles split over two warp groups (choose_conv.cpp hasSplitKernel)
  if (is(32, 4, 32, 3, 1, 2)) launchTc<MODE, 32, 4, MATH, 32, 3, 1, 2>(stream, a);
  else if (is(32, 8, 32, 3, 1, 2)) launchTc<MODE, 32, 8, MATH, 32, 3, 1, 2>(stream, a);
  else if (is(32, 4, 16, 3, 1, 2)) launchTc<MODE, 32, 4, MATH, 16, 3, 1, 2>(stream, a);
  else if (is(64, 2, 16, 3, 1, 2)) launchTc<MODE, 64, 2, MATH, 16, 3, 1, 2>(stream, a);
  else if (is(64, 2, 32, 3, 1, 2)) launchTc<MODE, 64, 2, MATH, 32, 3, 1, 2>(stream, a);
  else if (is(64, 4, 32, 3, 1, 2)) launchTc<MODE, 64, 4, MATH, 32, 3, 1, 2>(stream, a);
  else if (is(32, 4, 16, 3, 1)) launchTc<MODE, 32, 4, MATH>(stream, a);
  else if (is(32, 2, 16, 3, 1)) launchTc<MODE, 32, 2, MATH>(stream, a);
  else if (is(32, 4, 32, 3, 1)) launchTc<MODE, 32, 4, MATH, 32, 3>(stream, a);
  else if (is(32, 4, 16, 4, 1)) launchTc<MODE, 32, 4, MATH, 16, 4>(stream, a);
  else if (is(32, 8, 16, 3, 1)) launchTc<MODE, 32, 8, MATH, 16, 3>(stream, a);
  else if (is(32, 4, 16, 3, 6)) launchTc<MODE, 32, 4, MATH, 16, 3, 6>(stream, a);
  else if (is(32, 8, 32, 3, 1)) launchTc<MODE, 32, 8, MATH, 32, 3>(stream, a);
  else if (is(64, 4, 16, 3, 1)) launchTc<MODE, 64, 4, MATH>(stream, a);
  else if (is(64, 2, 16, 3, 1)) launchTc<MODE, 64, 2, MATH>(stream, a);
  else if (is(64, 2, 32, 3, 1)) launchTc<MODE, 64, 2, MATH, 32, 3>(stream, a);
  else if (is(64, 4, 32, 3, 1)) launchTc<MODE, 64, 4, MATH, 32, 3>(stream, a);
  else if (is(64, 4, 16, 4, 1)) launchTc<MODE, 64, 4, MATH, 16, 4>(stream, a);
  else if (is(64, 2, 32, 4, 1)) launchTc<MODE, 64, 2, MATH, 32, 4>(stream, a);
  else if (is(64, 4, 16, 3, 3)) launchTc<MODE, 64, 4, MATH, 16, 3, 3>(stream, a);
  else throw EngineError("conv2d tensor cores: no kernel for this tile");
}

// The instances of one arithmetic's tiles for the three GEMMs: declared `extern` for every arithmetic below,
// defined (EXTERN empty) in that arithmetic's file.
#define NNSTUDIO_CONV_TC_TILES(EXTERN, MATH)                                                                    \
  EXTERN template void launchTile<kForward, MATH>(cudaStream_t, const ConvGemmArgs&, const ConvTcTile&);     \
  EXTERN template void launchTile<kInput, MATH>(cudaStream_t, const ConvGemmArgs&, const ConvTcTile&);       \
  EXTERN template void launchTile<kInputPhase, MATH>(cudaStream_t, const ConvGemmArgs&, const ConvTcTile&);

NNSTUDIO_CONV_TC_TILES(extern, TcMath::Tf32x3)
NNSTUDIO_CONV_TC_TILES(extern, TcMath::Tf32)
NNSTUDIO_CONV_TC_TILES(extern, TcMath::Bf16)
NNSTUDIO_CONV_TC_TILES(extern, TcMath::Fp16)

}  // namespace nnstudio::cuda::conv_tc
