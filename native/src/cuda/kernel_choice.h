// The one place that decides which kernel variant runs, from the op's geometry, the device's caps
// (device_caps.h) and the overrides in force (kernel_overrides.h). Every threshold lives here with the
// measurement behind it (choose_conv.cpp, choose_conv_pool.cpp, choose_dense.cpp, choose_batchnorm.cpp);
// the kernel files only implement the variants and launch the plan they are given. Plain C++ (no CUDA), so
// the choices are unit-tested on the CPU with the H100's caps (tests/test_kernel_choice.cpp) and the op table
// (tests/test_cuda_ops.cpp) can ask which variants exist for a shape. The measurements name the per-kernel
// `--bench` modes they were taken with; `test_cuda_ops --bench` now times every variant the chooser
// reaches on the presets' shapes.
//
// Determinism: a choice that changes the order of a sum (the conv weight gradient's split, the direct
// kernel's channel splits, the fused conv + pool weight gradient's chunks) uses fixed block targets, so
// those bits do not depend on the GPU; choices that only place the same sums differently (rows per
// block, tile widths) follow the SM count. The GEMM's split-K and the tensor-core convolutions' split of
// their K tiles over two warp groups follow the SM count (and the batch): the same GPU model gives the same
// bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cpu/layers.h"  // ConvGeometry, PoolGeometry
#include "cuda/device_caps.h"
#include "cuda/kernel_overrides.h"

// Compile-time tuning of the implicit-GEMM convolution, chosen on an H100 from three builds (BK 8/16/16,
// MIN_BLOCKS 528/528/0, WG_TARGET 528/1056/264) with `test_cuda_conv2d --bench`:
//   NNSTUDIO_CONV_SMALL_BK      K step of the thin tiles (<= 16 rows): 16 beat 8 by 5-12 % on the 5x5 layers
//   NNSTUDIO_CONV_MIN_BLOCKS_PER_SM  forward / input gradient: narrow the tile (TN 4 -> 2 -> 1) until the
//                               grid has this many blocks per SM (small layers need warps to hide
//                               latency); 4 (528 on the H100) beat no narrowing by up to 20 %
//   NNSTUDIO_CONV_WG_TARGET     weight gradient: blocks to aim for when splitting N*OH*OW; 528 beat 264
//                               (keras conv2 dW 136 vs 200 us) and 1056. A constant, not a multiple of
//                               the SM count: the split decides the order of the sums, so the bits.
#ifndef NNSTUDIO_CONV_SMALL_BK
#define NNSTUDIO_CONV_SMALL_BK 16
#endif
#ifndef NNSTUDIO_CONV_MIN_BLOCKS_PER_SM
#define NNSTUDIO_CONV_MIN_BLOCKS_PER_SM 4
#endif
#ifndef NNSTUDIO_CONV_WG_TARGET
#define NNSTUDIO_CONV_WG_TARGET 528
#endif
//   NNSTUDIO_CONV_WG_TC_TARGET  the same for the tensor-core weight gradient (blocks of 64 to 128 filter-tap
//                               products a pixel, 2-4x the SIMT kernel's): 264, not yet measured
#ifndef NNSTUDIO_CONV_WG_TC_TARGET
#define NNSTUDIO_CONV_WG_TC_TARGET 264
#endif

namespace nnstudio::cuda {

using cpu::ConvGeometry;
using cpu::PoolGeometry;

// ================================ conv2d forward and input gradient ================================

enum class ConvPass { Forward, InputGradient };
enum class ConvKernel { Direct, TensorCore3xTf32, TensorCoreTf32, TensorCoreBf16, TensorCoreFp16, ImplicitGemm };

// The tensor cores' arithmetic for one pass: 3xTF32 (each operand split into two TF32 halves, FP32 accuracy),
// one TF32 product (a 10-bit mantissa), one BF16 product (8 bits; m16n8k16) or one FP16 product (11 bits, but
// a range of 6e-8 to 65504: gradients need loss scaling; m16n8k16, on Turing two m16n8k8), FP32 sums in all.
enum class TcMath { Tf32x3, Tf32, Bf16, Fp16 };
inline bool isTensorCore(ConvKernel k) {
  return k == ConvKernel::TensorCore3xTf32 || k == ConvKernel::TensorCoreTf32 || k == ConvKernel::TensorCoreBf16 ||
         k == ConvKernel::TensorCoreFp16;
}
inline TcMath tcMathOf(ConvKernel k) {
  switch (k) {
    case ConvKernel::TensorCoreBf16: return TcMath::Bf16;
    case ConvKernel::TensorCoreFp16: return TcMath::Fp16;
    case ConvKernel::TensorCoreTf32: return TcMath::Tf32;
    default: return TcMath::Tf32x3;
  }
}
const char* tcMathName(TcMath math);  // "3xtf32", "tf32", "bf16", "fp16"
// 16-bit operands: k16 reduction steps (a K tile of 16 is one step and cannot split over two warp groups)
constexpr bool halfMath(TcMath math) { return math == TcMath::Bf16 || math == TcMath::Fp16; }
// the device runs this arithmetic's kernels: FP16 from Turing on, the others from Ampere on
inline bool tcMathRuns(const DeviceCaps& caps, TcMath math) {
  return caps.tensorCores >= (math == TcMath::Fp16 ? TensorCores::Fp16MmaSync : TensorCores::Tf32MmaSync);
}
// The tensor-core mode a run's precision asks of the conv kernels where no NNSTUDIO_CONV_TC override decides
// (set, the override wins): FP32 Auto (3xTF32 where it pays), TF32 Tf32, mixed the 16-bit type of
// mixedHalfOf.
ConvTcMode convTcModeFor(const DeviceCaps& caps, const KernelOverrides& o, Precision precision);
// A mixed run's 16-bit products: BF16 where the device has them (Ampere and newer), else FP16 (Turing), unless
// NNSTUDIO_CUDA_MIXED forces one.
MixedHalf mixedHalfOf(const DeviceCaps& caps, const KernelOverrides& o);
// the arithmetic a mode asks for (Auto and On: FP32 accuracy, 3xTF32)
TcMath tcMathFor(ConvTcMode mode);
// Does a run whose convolutions take this mode need loss scaling (FP16 products of the gradients)?
inline bool lossScalingFor(ConvTcMode mode) { return mode == ConvTcMode::Fp16; }

// conv2d_direct.cu: a block stages `rows` output rows of one sample (input rows and all weights in shared
// memory); a thread computes ft output channels x px pixels, `splits` threads share an output.
struct ConvDirectPlan {
  int kw = 0, ft = 0, px = 0, splits = 1, groups = 0, colGroups = 0, rows = 0, rowTiles = 0, stagedRows = 0;
  int stagedW = 0, Mpad = 0, threads = 0;
  size_t shared = 0;
};
inline constexpr int kConvDirectMaxThreads = 512;  // the kernel's __launch_bounds__

// conv2d_tc_kernels.cuh: block tile bm x (wn * 32), K step bk, `stages` cp.async stages, __launch_bounds__ minBlocks
struct ConvTcTile {
  int bm = 0, wn = 0, bk = 16, stages = 3, minBlocks = 1;
  int splitK = 1;  // warp groups that share each K tile, each taking every splitK-th k step (then summed)
  bool operator==(const ConvTcTile& o) const {
    return bm == o.bm && wn == o.wn && bk == o.bk && stages == o.stages && minBlocks == o.minBlocks &&
           splitK == o.splitK;
  }
};
constexpr size_t convTcSharedBytes(const ConvTcTile& t) {
  const size_t pipeline = sizeof(float) * size_t(t.stages) * size_t(t.bm * (t.bk + 4) + t.bk * (t.wn * 32 + 8));
  const size_t sums = t.splitK > 1 ? sizeof(float) * size_t(t.bm / 32 * t.wn) * 32 * 32 : 0;  // a warp's 32 x 32 tile
  return pipeline > sums ? pipeline : sums;
}
inline constexpr int kConvTcVariants = 6;  // the tile variants 1..6 a test may force (convTcVariant)

// conv2d.cu's SIMT implicit GEMM: block bm rows, `threads` threads of tm x tn micro-tiles, K step bk
struct ConvGemmTile {
  int bm = 0, tm = 0, tn = 0, threads = 0, bk = 0;
  bool operator==(const ConvGemmTile& o) const {
    return bm == o.bm && tm == o.tm && tn == o.tn && threads == o.threads && bk == o.bk;
  }
};

struct ConvPassChoice {
  ConvKernel kernel = ConvKernel::ImplicitGemm;
  ConvDirectPlan direct;  // kernel == Direct
  ConvTcTile tc;          // kernel == TensorCore*
  ConvGemmTile gemm;      // kernel == ImplicitGemm
  std::string name() const;  // "direct ft4 px2 splits1 rows14", "tc 3xtf32 64x128 bk32 st3", "gemm 64x128 ..."
};

// The variant of one pass (N > 0 and a non-empty output; the launcher has checked the sizes).
ConvPassChoice chooseConvPass(const DeviceCaps& caps, const KernelOverrides& o, ConvPass pass, int N,
                              const ConvGeometry& g);

// ================================ conv2d weight gradient ================================

// Two kernels, the same split of N*OH*OW into S chunks of `chunk` pixels (partial sums reduced in chunk order
// by a second kernel):
//   conv2d.cu's SIMT kernel: blocks of rg thread-rows x 256/rg thread-columns with tm x tn micro-tiles over
//     (F, K + 1), the bias as a column of ones;
//   conv2d_tc_wgrad.cu's tensor-core kernel (tc): tiles of tile.bm filters x tile.wn * 32 taps over (F, K),
//     tile.bk pixels a step, in `math` (as the other passes: TcMath); the bias summed from the
//     dOut tiles by the blocks of the first tap tile.
struct ConvWgradPlan {
  bool tc = false;
  TcMath math = TcMath::Tf32x3;  // tc
  ConvTcTile tile;    // tc
  int rg = 16, tm = 1, tn = 1, tilesM = 1, tilesN = 1, S = 1, chunk = 32;
  std::string name() const;  // "rg16 tm2 tn4 tiles 1x3 splits 176", "tc 3xtf32 32x128 bk32 tiles 1x3 splits 88"
  // the most chunks any batch from 1 to this one is split into, by either kernel: S is not monotone in the
  // batch (keras conv2 on the SIMT kernel at batch 128: 105 chunks, at 123: 106), a smaller batch may take
  // the other kernel, and a network sizes one workspace for its largest
  int mostS = 1;
};
inline constexpr int kConvWgradPixelsPerStep = 32;  // pixels per reduction step of the SIMT kernel
// the tensor-core kernel's shared memory: stages x (bm dOut rows + wn * 32 tap columns) x (bk + 4) floats
// (dynamic), and its tap table (static, two words a column)
constexpr size_t convTcWgradDynamicBytes(const ConvTcTile& t) {
  return sizeof(float) * size_t(t.stages) * size_t(t.bm + t.wn * 32) * size_t(t.bk + 4);
}
constexpr size_t convTcWgradSharedBytes(const ConvTcTile& t) {
  return convTcWgradDynamicBytes(t) + 2 * sizeof(uint32_t) * size_t(t.wn * 32);
}
// The plan for this device and the overrides in force: o.convTc decides the tensor cores as for the other
// passes (tile variant o.convTcVariant), o.convWgradSplits > 0 asks for that many chunks (tests), clamped to
// [1, reduction steps].
ConvWgradPlan chooseConvWeightGrad(const DeviceCaps& caps, const KernelOverrides& o, int N, const ConvGeometry& g);
// floats of partial sums the plan, and a plan for any smaller batch, needs (0 with one chunk)
size_t convWgradWorkspace(const ConvWgradPlan& plan, const ConvGeometry& g);

// ================================ conv2d + max pool, fused ================================

// conv2d_pool.cu's forward: a block owns one sample, TPR pooled rows and FL blocks of FPT * GY filters in turn;
// CC channels of input rows (TH x TW) and weights staged per step (one step for all FL blocks where FL > 1)
struct ConvPoolForwardPlan {
  bool ok = false;
  int taps = 0;  // 3 or 5: a square kernel of that size, stride 1, pool 2: the windows' inputs in registers
  int PS = 0, FPT = 0, GY = 0, TPR = 0, TH = 0, TW = 0, CC = 0, bx = 0;
  int FL = 1;  // filter blocks a block takes in turn
  size_t smem = 0;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[2] = {1, 1};
};
inline constexpr int kConvPoolForwardMaxThreads = 512;  // the kernel's __launch_bounds__
// a block takes more filter blocks in turn (FL, doubled) while the grid keeps this many blocks an SM
inline constexpr int kConvPoolLoopBlocksPerSm = 4;

// its weight gradient: a block owns a chunk of `per` samples, FT filters and CT channels; QS window slices
struct ConvPoolWeightsPlan {
  bool ok = false;
  bool thin = false;  // convPoolWeightsThin: a warp per filter, all C * kh * kw taps in registers
  bool prefetch = false;  // thin, unpadded, at most a float4 a thread: the next sample's input loaded early
  int Hp = 0, Wp = 0, CT = 0, FT = 0, QS = 0, chunks = 0, per = 0;
  int mostChunks = 0;  // the most chunks of any batch from 1 to this one (chunks is not monotone in the batch)
  size_t smem = 0;
  unsigned grid[3] = {1, 1, 1};
};
inline constexpr int kConvPoolWgThreads = 256;  // threads per block
inline constexpr int kConvPoolWgCols = 4;       // columns per thread unit
inline constexpr int kConvPoolWgUnits = 2;      // units per thread
inline constexpr int kConvPoolThinTaps = 32;    // the thin kernel's most taps (C * kh * kw)
// The weight gradients split the batch into chunks until the grid has about this many blocks (four per SM of an
// H100), the general kernel kConvPoolWgBlocks, the thin one kConvPoolThinBlocks. Constants: the chunks are summed
// in order, so they decide the bits, which must not depend on the GPU.
inline constexpr int kConvPoolWgBlocks = 528, kConvPoolThinBlocks = 528;

// loops > 0: FL forced (halved until the staged weights fit; 1 where the channels take several stages)
ConvPoolForwardPlan planConvPoolForward(const DeviceCaps& caps, int N, const ConvGeometry& g, const PoolGeometry& p,
                                        int loops = 0);
// thinBlocks > 0: the thin kernel's block target instead of kConvPoolThinBlocks (measurements; it changes the bits)
ConvPoolWeightsPlan planConvPoolWeights(int N, const ConvGeometry& g, const PoolGeometry& p, int thinBlocks = 0);
// A fused conv + pool whose input gradient nobody needs (a first layer): the forward writes each window's argmax as a byte (conv2d_pool.h `windows`) instead
// of an int32, for the thin weight gradient alone (with ReLU it reads neither the argmax nor pooled).
bool chooseConvPoolWindowBytes(const KernelOverrides& o, const ConvGeometry& g, const PoolGeometry& p);
// the fused kernels implement this pair (any caps: support does not depend on the GPU)
inline constexpr int kConvPoolMaxBatch = 65535;  // the forward's grid.z holds the batch
bool convPoolSupported(const ConvGeometry& g, const PoolGeometry& p);
// run a conv (activation `act`) and the max pool after it as one kernel?
// (maxN: the largest batch the network runs)
bool chooseConvPoolFusion(const KernelOverrides& o, const ConvGeometry& g, const PoolGeometry& p, ActivationFn act,
                          int maxN);

// ================================ the fused dense head ================================

// dense_head.cu's shared memory (floats) and split: `blocks` blocks of rowsPer rows; P lanes per row in
// the forward, SX the shared row stride of x, G row groups per input column in the backward
struct DenseHeadLayout {
  int KP = 0;  // units padded to the kernel's register tile (4, 8, 12, 16, 32)
  int blocks = 1, rowsPer = 0, P = 4, SX = 0, G = 1;
  size_t xs = 0, wt = 0, bs = 0, ys = 0, dz = 0, terms = 0, stats = 0, part = 0, red = 0, floats = 0;
};
inline constexpr int kDenseHeadThreads = 512;
inline constexpr int kDenseHeadMaxUnits = 32;
DenseHeadLayout denseHeadLayout(int N, int inputs, int units, int blocks);
// the cluster a launch uses: `requested` (0: the choice by shape) within what the device co-schedules
int denseHeadBlocks(const DeviceCaps& caps, int requested);
// the head's layout over `blocks` blocks fits the device's shared memory
bool denseHeadFits(const DeviceCaps& caps, int N, int inputs, int units, int blocks);
// the layout fits for every batch from 1 to N (a network decides once, for its largest batch, and runs
// smaller ones: the shared memory is not monotone in the batch)
bool denseHeadFitsUpTo(const DeviceCaps& caps, int N, int inputs, int units, int blocks);
// the fused kernel takes this head, and every smaller batch of it, on this device (its own choice of blocks)
bool denseHeadSupported(const DeviceCaps& caps, int N, int inputs, int units);
// fuse a training step's head (the last dense layer, the loss and its backward) into one launch?
bool chooseDenseHeadFusion(const DeviceCaps& caps, const KernelOverrides& o, int N, int64_t inputs, int64_t units,
                           ActivationFn act);

// ================================ batchnorm ================================

// batchnorm_cluster.cu: a cluster of K blocks per channel does the statistics, their combine and the
// normalisation in one launch (the backward's sums and dx likewise); 1: the two-pass kernels
// (batchnorm.cu). K is a function of the largest batch, the shape and the device's largest cluster, so a
// graph captured at maxN and its smaller last batch reduce in the same slices (the same GPU model gives
// the same bits, as the split-K choices). Auto doubles K from 1 while the grid stays within
// kBatchnormClusterBlocksPerSm blocks per SM (o.batchnormClusterGrid blocks when set) and each block
// keeps at least kBatchnormClusterMinValues values: every block of a launch resident at once, since a
// block waits for its cluster (3 or 4 blocks per SM measured 4-5 % slower on resnet_fast, 1 per SM 10 %);
// a channel of more than kBatchnormClusterMaxValues values loaded one at a time keeps the two-pass
// kernels. On takes the device's largest cluster (tests: empty slices too).
inline constexpr int kBatchnormClusterBlocksPerSm = 2;
inline constexpr int kBatchnormClusterMinValues = 1024;  // 2 values per thread
// Where the cluster kernels load a value at a time (S % 4 != 0, or quads off), larger channels keep the
// two-pass kernels: on the ResNet stems (100 352 values a channel at 28x28 and batch 128) their wide grids
// read faster than a cluster's few blocks a channel did (H200, 2026-11-27: clusters everywhere resnet_mnist
// 0.415 s/epoch, up to 64K values 0.402, never 0.409). With quads (4 values a load) the clusters win on the
// stems too (H100: resnet_mnist 0.383 s/epoch, 0.393 with the stems on two passes, 0.406 never;
// docs/BENCHMARKS.md), so there is no limit then.
inline constexpr int64_t kBatchnormClusterMaxValues = 65536;  // a channel's values (o.batchnormClusterValues)
int chooseBatchnormCluster(const DeviceCaps& caps, const KernelOverrides& o, int maxN, int C, int S);
// Does the backward of the batchnorm after conv g (one input channel, 3x3, stride 1, output rows a multiple
// of 4 wide: BatchNormConvWgrad) sum that conv's weight gradient? Where a cluster block's slice has at least
// kBatchnormConvWgradMinValues values. H100, one call through the CLI (2026-11-27): resnet_mnist's stem (48
// channels, 4 blocks of 25 088 values) 0.3479 -> 0.3421 s/epoch, resnet_fast's (32 channels, 8 blocks of
// 12 544) 0.2568 -> 0.2610: a block's fixed costs (a reduction of 10 sums, two more cluster barriers) outweigh
// what a short slice saves. On (NNSTUDIO_CUDA_BN_CONV_WGRAD=1): wherever the cluster kernels take it.
inline constexpr int64_t kBatchnormConvWgradMinValues = 16384;
bool chooseBatchnormConvWgrad(const DeviceCaps& caps, const KernelOverrides& o, int maxN, const ConvGeometry& g);

// ================================ GEMM (dense layers) ================================

enum class GemmTile { Large64x64, Medium32x32, Wide16x64, Small16x16 };
struct GemmTileShape {
  int BM, BN, BK, threads;
  const char* name;
};
inline constexpr GemmTileShape kGemmTiles[4] = {
    {64, 64, 16, 256, "64x64"}, {32, 32, 16, 64, "32x32"}, {16, 64, 16, 64, "16x64"}, {16, 16, 64, 64, "16x16"}};
inline constexpr int kGemmPortableCluster = 8;  // split-K over at most a portable cluster...
inline constexpr int kGemmWideCluster = 16;     // ...or 16 where the GPU co-schedules it

struct GemmPlan {
  GemmTile tile = GemmTile::Small16x16;
  int splits = 1;  // K split over a cluster of this many blocks (1: none)
  int tilesM = 1, tilesN = 1;
  std::string name() const;  // "64x64/2" (tile / K splits)
};
GemmPlan chooseGemm(const DeviceCaps& caps, const KernelOverrides& o, int M, int N, int K);
// C = A . B without transposes and K <= kGemmShallowMaxK (a layer of few units' input gradient: seed001's
// 10-unit head over 10 816 or 43 264 inputs) as one pass writing C (gemm.cu gemmShallowKernel), where no tile is
// forced; N >= kGemmShallowMinN, M within the grid's rows
inline constexpr int kGemmShallowMaxK = 16, kGemmShallowMinN = 256, kGemmShallowRows = 8;
bool chooseGemmShallow(const KernelOverrides& o, bool transA, bool transB, int M, int N, int K);
// A layer of few units over a long input (seed001_256's head: 1000 x 43 264 -> 10) streams that input once a pass
// (gemm_stream.cu): its forward C (M, N <= 16) = A . B^T as "narrow", a lane a row of A with all N sums in
// registers; its weight gradient C (M <= 16, N) = A^T . B (+ the row sums) as "fewrows", a thread 4 columns of B
// with all M sums. K (narrow) or the rows of B (fewrows) are split over a cluster as the tiles' split-K is. Auto
// takes them where clusters exist, no tile is forced and the streamed length is at least kGemmStreamMinLength.
enum class GemmStreamKind { None, Narrow, FewRows };
struct GemmStreamPlan {
  GemmStreamKind kind = GemmStreamKind::None;
  int splits = 1;             // over a cluster of this many blocks
  int tiles = 1;              // row tiles (narrow) or column tiles (fewrows)
  int rowsPerLane = 1;        // narrow: 1 (32 rows a block, K 64 a stage) or 2 (64 rows, K 32 a stage)
  std::string name() const;  // "narrow/16", "narrow2/8" (2 rows a lane), "fewrows/4"
};
inline constexpr int kGemmStreamMaxSmall = 16;     // N (narrow) or M (fewrows) at most
inline constexpr int kGemmStreamMinLength = 2048;  // the streamed inputs at least (Auto)
inline constexpr int kGemmNarrowLaneRows = 32;     // a narrow block's rows are 32 x rowsPerLane
inline constexpr int kGemmNarrowMinDepth = 128;    // a narrow split's K at least
inline constexpr int kGemmFewRowsColumns = 512;    // a fewrows block's columns
inline constexpr int kGemmFewRowsMinDepth = 16;    // a fewrows split's rows of B at least
GemmStreamPlan chooseGemmStream(const DeviceCaps& caps, const KernelOverrides& o, bool transA, bool transB, int M,
                                int N, int K);
// what gemm() runs for these transposes and sizes: "shallow", a streaming plan or the tile's name (GemmPlan::name)
std::string gemmPlanName(const DeviceCaps& caps, const KernelOverrides& o, bool transA, bool transB, int M, int N,
                         int K);

// ================================ elementwise optimizer step ================================

// blocks of `threads` for an update of n parameters
unsigned optimizerBlocks(const DeviceCaps& caps, size_t n, int threads);

}  // namespace nnstudio::cuda
