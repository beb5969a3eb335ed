// conv2d's weight gradient on the tensor cores: mma.sync m16n8k8 TF32 (sm_80+) with conv2d_tc.cu's 3xTF32
// split, so FP32-level accuracy, or the plan's plain TF32 or BF16 / FP16 (m16n8k16) products (TcMath); FP16
// also on Turing (sm_75, tc_mma.cuh).
//   dW (F, K) = dOut (F, P) . col (P, K),   P = N*OH*OW pixels, K = C*kh*kw taps; dBias (F) = dOut . 1
// The GEMM's rows are the filters, its columns the taps and its reduction the pixels, split into chunks
// (blockIdx.z) as the SIMT kernel's (conv2d.cu, the same arguments and the same chunk reduction).
//
// Block tile BM (32 or 64) filters x BN (WN * 32) taps, BK (16 or 32) pixels a step; warps WM x WN, each a
// 32 x 32 tile of 2 x 4 m16n8 fragments, as conv2d_tc.cu. Both operands are stored pixel-minor, A as
// [filter][pixel] and B as [tap][pixel] (rows of BK + 4 floats: the fragment loads hit 32 distinct banks),
// so that a thread copies one pixel of several rows and a warp's copies read consecutive pixels of dOut and
// of an input row. A thread's pixel is fixed for a step: its sample, its origin in the input and a bit per
// tap that lands inside the input (kh * kw <= 32) are found once a step; a tap then costs a table read, an
// AND and a cp.async (4 bytes, zero-filled where the tap is outside, so the padding costs no branch).
// 3 stages, one __syncthreads per step. The blocks of the first tap tile also sum their dOut tiles per
// filter, in FP32, for the bias.
// The reduction order is fixed for a plan (pixels in steps of 8, BF16 and FP16 16, through the mma, chunks added in order by
// conv2d.cu's reduction; the bias's order follows the tile's threads): deterministic. The chooser's plan
// depends on the shape alone, not on the GPU.
#include <cstdint>

#include "cuda/check.h"
#include "cuda/conv2d_tc.h"
#include "cuda/conv_gemm.cuh"
#include "cuda/launch.cuh"
#include "cuda/tc_mma.cuh"

#pragma nv_diag_suppress 177  // the sm_75 pass of a fat build compiles the TF32 and BF16 kernels empty

namespace nnstudio::cuda {

namespace {

template <int BM, int WN, TcMath MATH, int BK, int STAGES>
__device__ __forceinline__ void convTcWgradBlock(const ConvWgradArgs& a) {
  constexpr int WARPS = BM / 32 * WN;
  constexpr int THREADS = WARPS * 32;
  constexpr int BN = WN * 32;
  constexpr int RS = BK + 4;              // a row of A or B in shared memory
  constexpr int ROWS = THREADS / BK;      // rows a pass of the block copies (one pixel a thread)
  constexpr int AITER = BM / ROWS, BITER = BN / ROWS;
  constexpr int BIAS_PARTS = THREADS / BM;  // threads summing one filter's bias, adjacent lanes
  static_assert(THREADS % BK == 0 && BM % ROWS == 0 && BN % ROWS == 0, "tile shape");
  static_assert(BIAS_PARTS >= 1 && BIAS_PARTS <= 32 && BK % BIAS_PARTS == 0, "bias parts");

  extern __shared__ __align__(16) float smem[];
  auto As = reinterpret_cast<float(*)[BM][RS]>(smem);                    // [STAGES][BM][RS]
  auto Bs = reinterpret_cast<float(*)[BN][RS]>(smem + STAGES * BM * RS);  // [STAGES][BN][RS]
  __shared__ int tapOff[BN];         // the tap's offset from the pixel's origin in the input sample
  __shared__ uint32_t tapBit[BN];    // its bit in a pixel's mask; 0 for a column past K

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int k0 = blockIdx.x * BN, f0 = blockIdx.y * BM;
  const int pBegin = blockIdx.z * a.chunk, pEnd = min(a.P, pBegin + a.chunk);
  const int HW = a.H * a.W, OHW = a.OH * a.OW, khkw = a.kh * a.kw;
  const bool biasBlock = blockIdx.x == 0;

  for (int t = tid; t < BN; t += THREADS) {
    const int k = k0 + t;
    int off = 0;
    uint32_t bit = 0;
    if (k < a.K) {
      const int c = k / khkw, r = k - c * khkw;
      const int ky = r / a.kw, kx = r - ky * a.kw;
      off = c * HW + ky * a.W + kx;
      bit = 1u << r;
    }
    tapOff[t] = off;
    tapBit[t] = bit;
  }
  __syncthreads();

  // this thread's copies: pixel `pix` of rows row0 + ROWS * i
  const int pix = tid % BK, row0 = tid / BK;
  int aRowOff[AITER];
  uint32_t aRowOk = 0;
#pragma unroll
  for (int i = 0; i < AITER; ++i) {
    const int f = f0 + row0 + ROWS * i;
    aRowOff[i] = f * OHW;
    if (f < a.F) aRowOk |= 1u << i;
  }
  constexpr uint32_t A_STAGE = BM * RS * 4, B_STAGE = BN * RS * 4;
  const uint32_t smemBase = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t aDst0 = smemBase + uint32_t(row0 * RS + pix) * 4;
  const uint32_t bDst0 = smemBase + STAGES * A_STAGE + uint32_t(row0 * RS + pix) * 4;

  // enqueue the copies of pixel step kt into stage s (zeros past the chunk, past F and for taps outside)
  auto loadTile = [&](int kt, int s) {
    const int p = pBegin + kt * BK + pix;
    int aBase = 0, bBase = 0;
    uint32_t taps = 0, rowsOk = 0;
    if (p < pEnd) {
      const int n = a.divOHW.div(p), op = p - n * OHW;
      const int oy = a.divOW.div(op), ox = op - oy * a.OW;
      const int y = oy * a.stride - a.padTop, x = ox * a.stride - a.padLeft;
      aBase = n * a.F * OHW + op;
      bBase = n * a.C * HW + y * a.W + x;
      // the taps inside: 0 <= x + kx < W, so kx in [-x, W - x); the same for ky
      const int xlo = max(0, -x), xhi = min(a.kw, a.W - x), ylo = max(0, -y), yhi = min(a.kh, a.H - y);
      const uint32_t xs = xhi > xlo ? (xhi >= 32 ? 0u : 1u << xhi) - (1u << xlo) : 0u;
      for (int ky = ylo; ky < yhi; ++ky) taps |= xs << (ky * a.kw);
      rowsOk = aRowOk;
    }
    const uint32_t aDst = aDst0 + s * A_STAGE, bDst = bDst0 + s * B_STAGE;
#pragma unroll
    for (int i = 0; i < AITER; ++i)
      tc::cpAsync4(aDst + i * ROWS * RS * 4, a.dOut + (aBase + aRowOff[i]), rowsOk & (1u << i));
#pragma unroll
    for (int i = 0; i < BITER; ++i) {
      const int t = row0 + ROWS * i;
      tc::cpAsync4(bDst + i * ROWS * RS * 4, a.in + (bBase + tapOff[t]), taps & tapBit[t]);
    }
  };

  const int g = lane >> 2, t = lane & 3;  // the fragments' group and thread-in-group
  const int wm = warp / WN, wn = warp % WN;
  float acc[2][4][4];
  tc::clearWarpTile(acc);
  // the bias: this thread sums filter biasRow's pixels biasPart, biasPart + BIAS_PARTS, ... of each step
  const int biasRow = tid / BIAS_PARTS, biasPart = tid % BIAS_PARTS;
  float biasSum = 0.0f;

  const int tiles = pEnd > pBegin ? (pEnd - pBegin + BK - 1) / BK : 0;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles) loadTile(s, s);
    tc::cpAsyncCommit();
  }
  int s = 0, sLoad = STAGES - 1;
  for (int kt = 0; kt < tiles; ++kt) {
    tc::cpAsyncWait<STAGES - 2>();
    __syncthreads();
    if (kt + STAGES - 1 < tiles) loadTile(kt + STAGES - 1, sLoad);
    tc::cpAsyncCommit();
    sLoad = sLoad + 1 == STAGES ? 0 : sLoad + 1;
    if (biasBlock) {
#pragma unroll
      for (int j = biasPart; j < BK; j += BIAS_PARTS) biasSum += As[s][biasRow][j];
    }
    auto aAt = [&](int r, int k) { return As[s][wm * 32 + r][k]; };
    auto bAt = [&](int k, int c) { return Bs[s][wn * 32 + c][k]; };  // B is stored [tap][pixel]
#pragma unroll
    for (int k = 0; k < BK; k += tc::kStep<MATH>) tc::mmaWarpTile<MATH>(acc, k, g, t, aAt, bAt);
    s = s + 1 == STAGES ? 0 : s + 1;
  }
  tc::cpAsyncWait<0>();

  // with one chunk the sums are the gradient; else this chunk's partial sums (S, F, K + 1)
  const bool direct = gridDim.z == 1;
  float* partial = a.partial + int64_t(blockIdx.z) * a.F * a.Kp;
  if (biasBlock) {
    // the parts of a filter are adjacent lanes: a butterfly in a fixed order
#pragma unroll
    for (int width = 1; width < BIAS_PARTS; width *= 2) biasSum += __shfl_xor_sync(0xffffffffu, biasSum, width);
    const int f = f0 + biasRow;
    if (biasPart == 0 && f < a.F) {
      if (direct) a.dBias[f] = biasSum;
      else partial[int64_t(f) * a.Kp + a.K] = biasSum;
    }
  }
  // fragment element c holds row g (+8 for c >= 2), column 2t (+1 for odd c)
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int f = f0 + wm * 32 + mt * 16 + g + 8 * h;
      if (f >= a.F) continue;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int k = k0 + wn * 32 + nt * 8 + 2 * t + e;
          if (k >= a.K) continue;
          const float v = acc[mt][nt][2 * h + e];
          if (direct) a.dWeight[int64_t(f) * a.K + k] = v;
          else partial[int64_t(f) * a.Kp + k] = v;
        }
    }
}

// the body where this compilation pass has MATH's instructions (tc::kMathCompiled), else empty
template <int BM, int WN, TcMath MATH, int BK, int STAGES>
__global__ void __launch_bounds__(BM / 32 * WN * 32) convTcWgradKernel(const ConvWgradArgs a) {
  startAfterPreviousKernel();
  if constexpr (tc::kMathCompiled<MATH>) convTcWgradBlock<BM, WN, MATH, BK, STAGES>(a);
}

template <int BM, int WN, TcMath MATH, int BK>
void launchWgrad(cudaStream_t stream, const ConvWgradPlan& plan, const ConvWgradArgs& a) {
  constexpr int STAGES = 3, THREADS = BM / 32 * WN * 32;
  constexpr size_t smem = convTcWgradDynamicBytes(ConvTcTile{BM, WN, BK, STAGES, 1});  // + the static tap table
  auto kernel = convTcWgradKernel<BM, WN, MATH, BK, STAGES>;
  if constexpr (convTcWgradSharedBytes(ConvTcTile{BM, WN, BK, STAGES, 1}) > 48 * 1024) {
    static PerDevice<bool> opted;  // once per kernel and device: more than the default 48 KiB of shared memory
    oncePerDevice(opted, [&] {
      check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
            "conv2d tensor-core weight gradient shared memory");
      return true;
    });
  }
  const dim3 grid(unsigned(plan.tilesN), unsigned(plan.tilesM), unsigned(plan.S));
  launchKernel("convTcWgradKernel", kernel, grid, THREADS, smem, stream, a);
  checkLaunch("conv2d tensor-core weight gradient");
}

template <TcMath MATH>
void launchWgradTile(cudaStream_t stream, const ConvWgradPlan& plan, const ConvWgradArgs& a) {
  const ConvTcTile& t = plan.tile;
  auto is = [&](int bm, int wn, int bk) { return t == ConvTcTile{bm, wn, bk, 3, 1}; };
  if (is(32, 2, 16)) launchWgrad<32, 2, MATH, 16>(stream, plan, a);
  else if (is(32, 4, 16)) launchWgrad<32, 4, MATH, 16>(stream, plan, a);
  else if (is(32, 4, 32)) launchWgrad<32, 4, MATH, 32>(stream, plan, a);
  else if (is(32, 2, 32)) launchWgrad<32, 2, MATH, 32>(stream, plan, a);
  else if (is(64, 2, 16)) launchWgrad<64, 2, MATH, 16>(stream, plan, a);
  else if (is(64, 4, 16)) launchWgrad<64, 4, MATH, 16>(stream, plan, a);
  else if (is(64, 4, 32)) launchWgrad<64, 4, MATH, 32>(stream, plan, a);
  else if (is(64, 2, 32)) launchWgrad<64, 2, MATH, 32>(stream, plan, a);
  else throw EngineError("conv2d tensor-core weight gradient: no kernel for this tile");
}

}  // namespace

void conv2d_tc_backward_weights(cudaStream_t stream, const ConvWgradPlan& plan, const ConvWgradArgs& a) {
  switch (plan.math) {
    case TcMath::Tf32x3: return launchWgradTile<TcMath::Tf32x3>(stream, plan, a);
    case TcMath::Tf32: return launchWgradTile<TcMath::Tf32>(stream, plan, a);
    case TcMath::Bf16: return launchWgradTile<TcMath::Bf16>(stream, plan, a);
    case TcMath::Fp16: return launchWgradTile<TcMath::Fp16>(stream, plan, a);
  }
}

}  // namespace nnstudio::cuda
