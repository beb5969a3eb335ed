// The conv2d variants: for the forward and input-gradient passes a direct convolution for few channels
// (conv2d_direct.cu), the 3xTF32 tensor-core implicit GEMM for many (conv2d_tc.cu), else the SIMT
// implicit GEMM (conv2d.cu), each with its tile shape; and the weight gradient's tiles and split.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "cuda/kernel_choice.h"

namespace nnstudio::cuda {

namespace {

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

// The pass as a correlation: S source channels -> M outputs on an OH x OW plane. The forward reads the
// input (C -> F); the input gradient reads dOut with the weights turned (F -> C) onto the input's plane.
struct Correlation {
  int S, M, OH, OW;
};
Correlation correlationOf(ConvPass pass, const ConvGeometry& g) {
  return pass == ConvPass::Forward ? Correlation{g.C, g.F, g.OH, g.OW} : Correlation{g.F, g.C, g.H, g.W};
}

// ---- direct convolution (conv2d_direct.cu) ----

// Thresholds (H100, test_cuda_conv2d_direct --bench): the direct kernel takes a pass when its output
// channels M <= kMaxOut, its reduction S*kh*kw <= kMaxTaps, all weights fit kMaxWeights floats and it
// has at least kMinMacs multiply-adds. Below that the implicit GEMM already runs at its launch floor
// (~2.8 us in a graph) while the direct kernel's staging round trip costs ~3.3 us: seed000's 2x2 layers
// (0.4M-1.6M MACs) stay on the GEMM (2.8-3.0 vs 3.2-4.3 us), seed002's first conv (3.7M) is a tie
// (3.9 vs 4.0 us), LeNet's first conv (7.5M) gains (5.6 -> 4.8 us). Wider layers (keras' 32 and 64
// filters) stay on the GEMM: its tiles fill there and the direct kernel ties at best (13.0 vs 13.6 us).
constexpr int kDirectMaxOut = 16;
constexpr int kDirectMaxTaps = 400;
constexpr int kDirectMaxWeights = 4096;
constexpr int64_t kDirectMinMacs = int64_t(4) << 20;
// Launch shape: split rows until the grid has a block per SM; split channels until the grid has
// kDirectTargetThreads threads (16 warps per SM of an H100; a constant: the splits order the sums).
constexpr int kDirectTargetThreads = 65536;
constexpr int kDirectMaxSplits = 8;
constexpr int kDirectDefaultFT = 4, kDirectDefaultPX = 2;
constexpr size_t kDirectMaxShared = 48 * 1024;  // no opt-in needed

// the pass's shape, before any plan: small enough for the direct kernel to pay (measured)
bool directPays(int N, const Correlation& c, const ConvGeometry& g) {
  const int64_t taps = int64_t(c.S) * g.kh * g.kw;
  return c.M <= kDirectMaxOut && taps <= kDirectMaxTaps && int64_t(g.F) * g.colRows() <= kDirectMaxWeights &&
         int64_t(N) * c.M * c.OH * c.OW * taps >= kDirectMinMacs;
}

// The launch shape (false: the kernel cannot take it). `shape` fields that are 0 take the planner's choice.
bool planDirect(ConvDirectPlan& p, const DeviceCaps& caps, int N, const Correlation& c, int kh, int kw,
                const ConvDirectShape& shape) {
  if (kh != kw || (kw != 2 && kw != 3 && kw != 5)) return false;  // square kernels of 2, 3, 5
  const int S = c.S, M = c.M, OH = c.OH, OW = c.OW;
  p.kw = kw;
  p.ft = shape.ft ? shape.ft : kDirectDefaultFT;
  p.px = shape.px ? shape.px : kDirectDefaultPX;
  // thread tiles 4x1, 4x2, 4x4, 8x1, 8x2 (8x4 spills under the 64-register bound)
  if ((p.ft != 4 && p.ft != 8) || (p.px != 1 && p.px != 2 && p.px != 4) || p.ft * p.px > 16) return false;
  p.groups = ceilDiv(M, p.ft);
  p.Mpad = p.groups * p.ft;
  p.colGroups = ceilDiv(OW, p.px);
  p.stagedW = (p.colGroups * p.px + kw - 1 + 3) / 4 * 4;
  const int perRow = p.groups * p.colGroups;
  // channel splits: enough threads in all to hide latency (the layers are small)
  if (shape.splits) {
    p.splits = std::min(shape.splits, S);
  } else {
    const int64_t items = int64_t(N) * OH * perRow;
    p.splits = 1;
    while (p.splits * 2 <= std::min(S, kDirectMaxSplits) && items * p.splits < kDirectTargetThreads) p.splits *= 2;
  }
  if (p.splits < 1 || int64_t(perRow) * p.splits > kConvDirectMaxThreads) return false;
  const int64_t T = int64_t(S) * kh * kw;
  auto shared = [&](int rows) {
    const int64_t staged = (int64_t(S) * (rows + kh - 1) * p.stagedW + 3) / 4 * 4;
    const int64_t partial = p.splits > 1 ? int64_t(p.splits) * perRow * rows * p.ft * p.px : 0;
    return sizeof(float) * size_t(T * p.Mpad + staged + partial);
  };
  const int perRowThreads = perRow * p.splits;
  int rows;
  if (shape.rows) {
    rows = std::min(shape.rows, OH);
    if (int64_t(perRowThreads) * rows > kConvDirectMaxThreads) return false;
  } else {
    const int target = shape.blocks ? shape.blocks : caps.sms;  // a block per SM
    rows = std::min(OH, kConvDirectMaxThreads / perRowThreads);
    while (rows > 1 && int64_t(N) * ceilDiv(OH, rows) < target) --rows;
    while (rows > 1 && shared(rows) > kDirectMaxShared) --rows;
    rows = ceilDiv(OH, ceilDiv(OH, rows));  // even tiles
  }
  if (shared(rows) > kDirectMaxShared) return false;
  p.rows = rows;
  p.rowTiles = ceilDiv(OH, rows);
  p.stagedRows = rows + kh - 1;
  p.threads = (perRowThreads * rows + 31) / 32 * 32;
  p.shared = shared(rows);
  return int64_t(N) * p.rowTiles < (int64_t(1) << 31);
}

// ---- tensor cores (conv2d_tc.cu) ----

// Where the tensor cores pay (H100, test_cuda_conv2d_tc --bench): 16+ GEMM rows (a 32-row tile half
// used still beats the SIMT kernel: fast_mnist conv2's input gradient, 32 -> 24 channels) and a reduction
// long enough that the products, not the output's stores, bound the time. The direct kernel is asked
// first and keeps the few-channel passes.
bool tcPays(int M, int K, int64_t J) { return M >= 16 && K >= 64 && J >= 4096; }

// The tensor-core kernel (3xTF32, plain TF32, BF16 or FP16) to run this GEMM with; ImplicitGemm when off (kernels
// of more than 32 taps: the tap masks are 32 bits) or where the device lacks the arithmetic (tcMathRuns). FP16
// takes the thresholds measured for BF16 on the H100 (the same tiles and k16 steps); on Turing, where it
// runs alone, they are not measured.
ConvKernel tcKernel(const DeviceCaps& caps, ConvTcMode mode, int M, int K, int64_t J, const ConvGeometry& g) {
  if (mode == ConvTcMode::Off || g.kh * g.kw > 32 || !tcMathRuns(caps, tcMathFor(mode)))
    return ConvKernel::ImplicitGemm;
  if (mode != ConvTcMode::On && !tcPays(M, K, J)) return ConvKernel::ImplicitGemm;
  switch (tcMathFor(mode)) {
    case TcMath::Bf16: return ConvKernel::TensorCoreBf16;
    case TcMath::Fp16: return ConvKernel::TensorCoreFp16;
    case TcMath::Tf32: return ConvKernel::TensorCoreTf32;
    default: return ConvKernel::TensorCore3xTf32;
  }
}

// the tiles a test may force: variant 1..6, for GEMMs of <= 32 rows and for more
ConvTcTile tcVariant(int M, int variant) {
  static const ConvTcTile thin[kConvTcVariants] = {{32, 4, 16, 3, 1}, {32, 2, 16, 3, 1}, {32, 4, 32, 3, 1},
                                                   {32, 4, 16, 4, 1}, {32, 8, 16, 3, 1}, {32, 4, 16, 3, 6}};
  static const ConvTcTile wide[kConvTcVariants] = {{64, 4, 16, 3, 1}, {64, 2, 16, 3, 1}, {64, 4, 32, 3, 1},
                                                   {64, 4, 16, 4, 1}, {64, 2, 32, 4, 1}, {64, 4, 16, 3, 3}};
  return (M <= 32 ? thin : wide)[variant - 1];
}

// Tile by row count and width (H100, test_cuda_conv2d_tc --bench, keras conv2 at batch 128): M <= 32
// (input gradient, 64 -> 32 channels) 32 x 256 with BK 32: 104 us, against 113 for 32 x 128 and 134 for
// 32 x 64; M > 32 (forward, 32 -> 64 filters) 64 x 128 with BK 32: 81 us, 83 with BK 16; 64 x 64 where
// 64 x 128 tiles would not fill two blocks per SM (C64 F64 14x14: 52 against 61 us).
// Every tile shape adds the same products in the same order: the bits do not depend on the tile (they do
// on the K split, tcSplitK).
// One product per multiply (TF32, BF16) needs fewer registers than 3xTF32 and gains from occupancy instead:
// on the grids of at least two blocks per SM it takes BK 16 tiles bounded to 3 (64 rows) or 6 (32 rows)
// blocks per SM. H100, keras_cnn s/epoch (a temporary switch, 2026-11-26, twice each; results/
// issue16-h100-tc-occupancy-tiles.jsonl):
// mixed 0.191 -> 0.183, tf32 0.1995 -> 0.188, but fp32 (3xTF32) 0.224 -> 0.226, so 3xTF32 keeps its tiles;
// the presets without such grids (fast_mnist, the ResNets, lenet5, seed001_256, seed002) unchanged.
// The default tiles must fit the shared memory a block may opt into (227 KiB on an H100, 99 KiB on the
// RTX 30, 40 and 50 series).
ConvTcTile tcTile(const DeviceCaps& caps, TcMath math, int M, int64_t J, int variant) {
  if (variant >= 1 && variant <= kConvTcVariants) return tcVariant(M, variant);
  auto fits = [&](const ConvTcTile& t) { return convTcSharedBytes(t) <= caps.sharedOptin; };
  if (M <= 32) {
    // 32 x 256 needs 112.5 KiB: GPUs with 99 KiB take 32 x 128 (64.5 KiB), else BK 16 (33 KiB). Small
    // GEMMs would leave SMs idle with 32 x 256 tiles: below two blocks per SM, 32 x 128 with BK 32
    // (fast_mnist conv2 at batch 256, J = 16384: 36 against 43 us; its input gradient at batch 128,
    // J = 18432: 52 against 67 us; 32 x 64 was slower on both).
    const ConvTcTile wide{32, 8, 32, 3, 1}, medium{32, 4, 32, 3, 1}, small{32, 4, 16, 3, 1};
    const bool wideFills = (J + 255) / 256 >= 2 * int64_t(caps.sms);
    const ConvTcTile occupied{32, 4, 16, 3, 6};  // one product per multiply (above)
    if (wideFills && math != TcMath::Tf32x3) return occupied;
    if (wideFills && fits(wide)) return wide;
    return fits(medium) ? medium : small;
  }
  const ConvTcTile large{64, 4, 32, 3, 1}, narrow{64, 2, 16, 3, 1};  // 64 x 128 (78 KiB), 64 x 64
  const ConvTcTile occupied{64, 4, 16, 3, 3};                          // one product per multiply (above)
  const ConvTcTile narrowDeep{64, 2, 32, 3, 1};                        // 64 x 64, BK 32 (54 KiB)
  const int64_t rowTiles = (M + 63) / 64;
  const bool largeFills = (J + 127) / 128 * rowTiles >= 2 * int64_t(caps.sms);
  if (largeFills && math != TcMath::Tf32x3) return occupied;
  if (largeFills && fits(large)) return large;
  // BF16 steps are k16: a K tile of 16 cannot be shared by two warp groups (tcSplitK), one of 32 can. Where
  // even 64 x 64 tiles leave the grid under two blocks per SM (resnet_mnist's 96-channel 7x7 layers, 196
  // blocks), the chain of K steps bounds the time: BF16 takes the BK 32 tile so that the launch splits.
  const bool narrowFills = (J + 63) / 64 * rowTiles >= 2 * int64_t(caps.sms);
  if (halfMath(math) && !narrowFills && fits(narrowDeep)) return narrowDeep;
  return narrow;
}

// The tiles conv2d_tc_kernels.cuh also instantiates with two warp groups per K tile (its launchTile table): the
// tiles by shape (tcTile) and the forced variants among them; in BF16 those of 32-wide K tiles (two k16 steps).
bool hasSplitKernel(const ConvTcTile& t, TcMath math) {
  if (halfMath(math) && t.bk % 32 != 0) return false;
  const ConvTcTile one[] = {{32, 4, 32, 3, 1}, {32, 8, 32, 3, 1}, {32, 4, 16, 3, 1},
                            {64, 2, 16, 3, 1}, {64, 2, 32, 3, 1}, {64, 4, 32, 3, 1}};
  for (ConvTcTile s : one) {
    s.splitK = t.splitK;
    if (s == t) return true;
  }
  return false;
}

// Two warp groups per K tile where the launch has fewer than two blocks per SM: there each warp's chain of K
// steps bounds the time, and halving it pays; on larger grids the SMs' other blocks hide that latency and the
// groups' sum is overhead. H200, TF32, every pass split against none: resnet_fast (all its launches 98-196
// blocks) 0.328 -> 0.313 s/epoch; keras_cnn (288-576 blocks) 0.198 -> 0.212. forced: 1 never, 2 wherever a
// split kernel exists.
int tcSplitK(const DeviceCaps& caps, const ConvTcTile& tile, TcMath math, int M, int64_t columns, int forced) {
  ConvTcTile split = tile;
  split.splitK = 2;
  if (forced == 1 || !hasSplitKernel(split, math) || convTcSharedBytes(split) > caps.sharedOptin) return 1;
  if (forced == 2) return 2;
  const int64_t blocks = (columns + tile.wn * 32 - 1) / (tile.wn * 32) * ((M + tile.bm - 1) / tile.bm);
  return blocks < 2 * int64_t(caps.sms) ? 2 : 1;
}

// ---- the SIMT implicit GEMM (conv2d.cu) ----

// Tile by row count: thin tiles for the small layers (4 filters, 6/8 channels ...); then the column
// micro-tile TN (4, 2 or 1): the widest whose grid still has NNSTUDIO_CONV_MIN_BLOCKS_PER_SM blocks per SM.
ConvGemmTile gemmTile(const DeviceCaps& caps, int M, int64_t J) {
  constexpr int SBK = NNSTUDIO_CONV_SMALL_BK;
  ConvGemmTile t = M <= 4    ? ConvGemmTile{4, 1, 0, 128, SBK}
                   : M <= 8  ? ConvGemmTile{8, 2, 0, 128, SBK}
                   : M <= 16 ? ConvGemmTile{16, 4, 0, 128, SBK}
                   : M <= 32 ? ConvGemmTile{32, 4, 0, 256, 8}
                             : ConvGemmTile{64, 8, 0, 256, 8};
  const int CG = t.threads / (t.bm / t.tm);
  const int64_t rowTiles = (M + t.bm - 1) / t.bm;
  const int64_t minBlocks = int64_t(NNSTUDIO_CONV_MIN_BLOCKS_PER_SM) * caps.sms;
  auto blocks = [&](int tn) { return rowTiles * ((J + CG * tn - 1) / (CG * tn)); };
  t.tn = blocks(4) >= minBlocks ? 4 : blocks(2) >= minBlocks ? 2 : 1;
  return t;
}

}  // namespace

TcMath tcMathFor(ConvTcMode mode) {
  switch (mode) {
    case ConvTcMode::Bf16: return TcMath::Bf16;
    case ConvTcMode::Fp16: return TcMath::Fp16;
    case ConvTcMode::Tf32: return TcMath::Tf32;
    default: return TcMath::Tf32x3;
  }
}

const char* tcMathName(TcMath math) {
  switch (math) {
    case TcMath::Bf16: return "bf16";
    case TcMath::Fp16: return "fp16";
    case TcMath::Tf32: return "tf32";
    default: return "3xtf32";
  }
}

MixedHalf mixedHalfOf(const DeviceCaps& caps, const KernelOverrides& o) {
  if (o.mixedHalf != MixedHalf::Auto) return o.mixedHalf;
  return caps.tf32TensorCores() ? MixedHalf::Bf16 : MixedHalf::Fp16;
}

ConvTcMode convTcModeFor(const DeviceCaps& caps, const KernelOverrides& o, Precision precision) {
  if (o.convTc != ConvTcMode::Auto || precision == Precision::Fp32) return o.convTc;
  if (precision == Precision::Tf32) return ConvTcMode::Tf32;
  return mixedHalfOf(caps, o) == MixedHalf::Fp16 ? ConvTcMode::Fp16 : ConvTcMode::Bf16;
}

ConvPassChoice chooseConvPass(const DeviceCaps& caps, const KernelOverrides& o, ConvPass pass, int N,
                              const ConvGeometry& g) {
  ConvPassChoice choice;
  const Correlation c = correlationOf(pass, g);
  // few channels: the direct kernel (On skips the measured thresholds, not the kernel's limits)
  if (g.stride == 1 && N > 0 && c.S > 0 && c.M > 0 && c.OH > 0 && c.OW > 0 && o.convDirect != Switch::Off &&
      (o.convDirect == Switch::On || directPays(N, c, g)) &&
      planDirect(choice.direct, caps, N, c, g.kh, g.kw, o.convDirectShape)) {
    choice.kernel = ConvKernel::Direct;
    return choice;
  }
  // many: the tensor cores; the GEMM's rows, reduction and columns
  const int M = c.M, K = c.S * g.kh * g.kw;
  const int64_t J = int64_t(N) * c.OH * c.OW;
  choice.kernel = tcKernel(caps, o.convTc, M, K, J, g);
  if (choice.kernel != ConvKernel::ImplicitGemm) {
    choice.tc = tcTile(caps, tcMathOf(choice.kernel), M, J, o.convTcVariant);
    // a forced tile splits only when forced to (the rule is measured on the tiles by shape). A strided input
    // gradient is judged by all its columns, though it launches once per phase over a share of them: that is
    // the rule as measured (judging it by one phase's launch was not measured).
    const int forced = o.convTcVariant == 0 ? o.convTcSplitK : o.convTcSplitK == 2 ? 2 : 1;
    choice.tc.splitK = tcSplitK(caps, choice.tc, tcMathOf(choice.kernel), M, J, forced);
    return choice;
  }
  choice.gemm = gemmTile(caps, M, J);
  return choice;
}

std::string ConvPassChoice::name() const {
  char text[96];
  switch (kernel) {
    case ConvKernel::Direct:
      std::snprintf(text, sizeof text, "direct ft%d px%d splits%d rows%d", direct.ft, direct.px, direct.splits,
                    direct.rows);
      break;
    case ConvKernel::TensorCore3xTf32:
    case ConvKernel::TensorCoreTf32:
    case ConvKernel::TensorCoreBf16:
    case ConvKernel::TensorCoreFp16:
      std::snprintf(text, sizeof text, "tc %s %dx%d bk%d st%d%s%s", tcMathName(tcMathOf(kernel)), tc.bm, tc.wn * 32,
                    tc.bk, tc.stages,
                    tc.minBlocks > 1 ? " minb" : "", tc.splitK > 1 ? " ks2" : "");
      break;
    default:
      std::snprintf(text, sizeof text, "gemm %dx%d tm%d tn%d bk%d", gemm.bm,
                    gemm.threads / (gemm.bm / gemm.tm) * gemm.tn, gemm.tm, gemm.tn, gemm.bk);
  }
  return text;
}

// ---- weight gradient ----

namespace {

// Tensor cores for the weight gradient where they pay for the forward and input gradient (tcPays on the
// GEMM of F rows and K columns over P pixels; not yet measured for this pass: see docs/BENCHMARKS.md,
// "Residual presets"), kernels of at most 32 taps (the pixel's tap mask is 32 bits).
bool tcWgrad(const DeviceCaps& caps, ConvTcMode mode, int64_t K, int64_t P, const ConvGeometry& g) {
  if (mode == ConvTcMode::Off || g.kh * g.kw > 32 || !tcMathRuns(caps, tcMathFor(mode)) || K >= INT32_MAX)
    return false;
  return mode == ConvTcMode::On || tcPays(g.F, int(K), P);  // Tf32, Bf16, Fp16 too only where it pays, as the other passes
}

// the tiles a test may force (variant 1..6), else 32 or 64 filters by F, 64 or 128 taps by K, 32 pixels a
// step where the shared memory allows (16 otherwise)
ConvTcTile tcWgradTile(const DeviceCaps& caps, int F, int64_t K, int variant) {
  static const ConvTcTile forced[kConvTcVariants] = {{32, 2, 16, 3, 1}, {32, 4, 16, 3, 1}, {32, 4, 32, 3, 1},
                                                     {64, 2, 16, 3, 1}, {64, 4, 16, 3, 1}, {64, 4, 32, 3, 1}};
  if (variant >= 1 && variant <= kConvTcVariants) return forced[variant - 1];
  ConvTcTile t{F <= 32 ? 32 : 64, K <= 96 ? 2 : 4, 32, 3, 1};
  if (convTcWgradSharedBytes(t) > caps.sharedOptin) t.bk = 16;
  return t;
}

// The split of P = N*OH*OW: about `target` blocks, at least kMinSteps steps of `step` pixels per chunk
// (forceSplits > 0: that many chunks, clamped to the steps there are).
void splitPixels(ConvWgradPlan& plan, int64_t P, int step, int64_t target, int forceSplits) {
  constexpr int kMinSteps = 4;
  const int64_t tiles = int64_t(plan.tilesM) * plan.tilesN;
  const int64_t steps = (P + step - 1) / step;
  int64_t S;
  if (forceSplits > 0) {
    S = std::min<int64_t>(forceSplits, std::max<int64_t>(1, steps));
  } else {
    S = std::max<int64_t>(1, (target + tiles - 1) / tiles);
    S = std::min<int64_t>(S, std::max<int64_t>(1, steps / kMinSteps));
  }
  // S chunks of whole steps: rounding the chunk up can only lower the count (S * chunk >= P), so no batch
  // up to this one needs more than this S on this kernel, while the final count is not monotone in the batch
  plan.mostS = int(S);
  const int64_t perSplit = (steps + S - 1) / S;
  plan.chunk = int(std::max<int64_t>(1, perSplit) * step);
  plan.S = int(std::max<int64_t>(1, (P + plan.chunk - 1) / plan.chunk));
}

// The SIMT kernel's tiles and split (conv2d.cu): rg thread-rows by F, tm x tn micro-tiles over (F, K + 1).
ConvWgradPlan simtWgradPlan(int64_t P, const ConvGeometry& g, int forceSplits) {
  ConvWgradPlan plan;
  const int64_t Kp = g.colRows() + 1;
  if (g.F <= 8 && Kp > 16) {
    plan.rg = 8;  // 8 thread-rows x 32 thread-columns: no idle filter rows
    plan.tn = Kp <= 32 ? 1 : Kp <= 64 ? 2 : 4;
  } else {
    plan.tm = g.F <= 16 ? 1 : g.F <= 32 ? 2 : g.F <= 64 ? 4 : 8;
    plan.tn = Kp <= 16 ? 1 : Kp <= 32 ? 2 : 4;
    if (plan.tm == 8 && plan.tn == 4) plan.tm = 4;  // shared memory
  }
  const int cgN = 256 / plan.rg;
  plan.tilesM = int((g.F + plan.rg * plan.tm - 1) / (plan.rg * plan.tm));
  plan.tilesN = int((Kp + cgN * plan.tn - 1) / (cgN * plan.tn));
  splitPixels(plan, P, kConvWgradPixelsPerStep, NNSTUDIO_CONV_WG_TARGET, forceSplits);
  return plan;
}

}  // namespace

ConvWgradPlan chooseConvWeightGrad(const DeviceCaps& caps, const KernelOverrides& o, int N, const ConvGeometry& g) {
  constexpr int kTcTarget = NNSTUDIO_CONV_WG_TC_TARGET;  // blocks to aim for (a constant: the bits)
  const int64_t K = g.colRows();
  const int64_t P = int64_t(std::max(N, 0)) * g.OH * g.OW;
  const ConvWgradPlan simt = simtWgradPlan(P, g, o.convWgradSplits);
  if (!tcWgrad(caps, o.convTc, K, P, g)) return simt;
  ConvWgradPlan plan;
  plan.tc = true;
  plan.math = tcMathFor(o.convTc);
  plan.tile = tcWgradTile(caps, g.F, K, o.convTcVariant);
  plan.tilesM = int((g.F + plan.tile.bm - 1) / plan.tile.bm);
  plan.tilesN = int((K + plan.tile.wn * 32 - 1) / (plan.tile.wn * 32));
  splitPixels(plan, P, plan.tile.bk, kTcTarget, o.convWgradSplits);
  plan.mostS = std::max(plan.mostS, simt.mostS);  // a smaller batch may fall below tcPays, to the SIMT kernel
  return plan;
}

std::string ConvWgradPlan::name() const {
  char text[96];
  if (tc)
    std::snprintf(text, sizeof text, "tc %s %dx%d bk%d tiles %dx%d splits %d", tcMathName(math), tile.bm,
                  tile.wn * 32, tile.bk, tilesM, tilesN, S);
  else
    std::snprintf(text, sizeof text, "rg%d tm%d tn%d tiles %dx%d splits %d", rg, tm, tn, tilesM, tilesN, S);
  return text;
}

size_t convWgradWorkspace(const ConvWgradPlan& plan, const ConvGeometry& g) {
  return plan.mostS > 1 ? size_t(plan.mostS) * size_t(g.F) * size_t(g.colRows() + 1) : 0;
}

}  // namespace nnstudio::cuda
