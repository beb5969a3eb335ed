// The dense layers' variants: the GEMM's tile and K split (gemm.cu), the fused classifier head
// (dense_head.cu), and the optimizer step's grid (optim.cu).
#include <algorithm>

#include "cuda/kernel_choice.h"

namespace nnstudio::cuda {

// ---- GEMM: tile shape and K splits ----

namespace {

// A split keeps at least this much of K: on the H100, splitting K = 128 cost 1-10 us (cluster launch
// and reduction), K = 196 broke even, K >= 392 won (784: 15 -> 11 us, 10816: 92 -> 19 us, 43264:
// 341 -> 50 us at batch 128).
constexpr int kMinSplitDepth = 96;

}  // namespace

// Four tiles, 64x64 (256 threads), 32x32, 16x64 (for M <= 16, e.g. the weight gradient of a 10-unit head)
// and 16x16 with BK 64 (for N <= 16, e.g. the forward of a 10-unit head, and for small outputs with a long
// K); tiles whose rows or columns would be mostly empty are skipped, and the largest one that fills the
// GPU (a block per SM and about 6 resident warps per SM) wins. When even the smallest leaves the GPU idle,
// the K range is split over 2..8 blocks of a cluster, 16 where the GPU co-schedules clusters that large
// (seed001's head, 100 x 10 x 10816, has only 7 tiles).
GemmPlan chooseGemm(const DeviceCaps& caps, const KernelOverrides& o, int M, int N, int K) {
  GemmTile order[3];
  int count = 0;
  if (o.gemmTile != GemmTileForce::Auto) {
    order[count++] = GemmTile(int(o.gemmTile));
  } else if (N <= 16) {
    order[count++] = GemmTile::Small16x16;
  } else if (M <= 16) {
    order[count++] = GemmTile::Wide16x64;
    order[count++] = GemmTile::Small16x16;
  } else {
    order[count++] = GemmTile::Large64x64;
    order[count++] = GemmTile::Medium32x32;
    order[count++] = GemmTile::Small16x16;
  }
  const bool clusters = o.gemmSplitK && caps.gemmMaxCluster > 1;
  const int maxSplits = std::min(caps.gemmMaxCluster, o.gemmWideClusters ? kGemmWideCluster : kGemmPortableCluster);
  // enough blocks for every SM and enough resident warps to hide latency
  const int64_t sms = caps.sms, target = sms * 8;
  GemmPlan best;
  int64_t bestScore = -1;
  for (int i = 0; i < count; ++i) {
    const GemmTileShape& s = kGemmTiles[int(order[i])];
    GemmPlan p;
    p.tile = order[i];
    p.tilesM = (M + s.BM - 1) / s.BM;
    p.tilesN = (N + s.BN - 1) / s.BN;
    if (p.tilesN < 1) p.tilesN = 1;  // N == 0 with row sums: one column of tiles still sums the rows
    const int64_t tiles = int64_t(p.tilesM) * p.tilesN, warps = s.threads / 32;
    const int kTiles = (K + s.BK - 1) / s.BK;
    auto filled = [&](int splits) { return tiles * splits >= sms && tiles * splits * warps >= target; };
    if (clusters)
      while (p.splits < maxSplits && !filled(p.splits) && 2 * p.splits <= kTiles &&
             int64_t(K) >= int64_t(2 * p.splits) * kMinSplitDepth)
        p.splits *= 2;
    const int64_t blocks = tiles * p.splits;
    if (blocks >= sms && blocks * warps * 4 >= target * 3) return p;
    const int64_t score = std::min(blocks, sms) * (target + 1) + std::min(blocks * warps, target);
    if (score > bestScore) {
      best = p;
      bestScore = score;
    }
  }
  return best;
}

// The tiled kernels ran seed001_256's input gradient (1000 x 43 264 x 10) at 64 x 64 tiles in 153 us (H200, ncu),
// issue-bound on a K of 10; it is one pass writing 173 MB.
bool chooseGemmShallow(const KernelOverrides& o, bool transA, bool transB, int M, int N, int K) {
  return o.gemmTile == GemmTileForce::Auto && !transA && !transB && K >= 1 && K <= kGemmShallowMaxK &&
         N >= kGemmShallowMinN && M >= 1 && int64_t(M) <= int64_t(65535) * kGemmShallowRows;
}

// Splits double while the grid stays within four blocks (16 warps) an SM, about what a streaming pass needs to keep
// HBM busy and what fits at once (fewrows takes ~104 registers a thread: 4 blocks an SM), so no block waits for a
// second wave; each split keeps at least `minDepth` of the K it divides (narrow's K, fewrows' rows of B).
GemmStreamPlan chooseGemmStream(const DeviceCaps& caps, const KernelOverrides& o, bool transA, bool transB, int M,
                                int N, int K) {
  GemmStreamPlan p;
  if (o.gemmStream == Switch::Off || o.gemmTile != GemmTileForce::Auto || M < 1 || N < 1 || K < 1) return p;
  const bool clusters = o.gemmSplitK && caps.gemmMaxCluster > 1;
  const int minLength = o.gemmStream == Switch::On ? 1 : kGemmStreamMinLength;
  if (!clusters && o.gemmStream != Switch::On) return p;
  int minDepth = 0;  // of K, a split at least
  if (!transA && transB && N <= kGemmStreamMaxSmall && K >= minLength) {
    p.kind = GemmStreamKind::Narrow;
    p.rowsPerLane = o.gemmNarrowRowsPerLane == 2 ? 2 : 1;
    const int rows = kGemmNarrowLaneRows * p.rowsPerLane;
    p.tiles = (M + rows - 1) / rows;
    minDepth = kGemmNarrowMinDepth;
  } else if (transA && !transB && M <= kGemmStreamMaxSmall && N >= minLength) {
    p.kind = GemmStreamKind::FewRows;
    p.tiles = (N + kGemmFewRowsColumns - 1) / kGemmFewRowsColumns;
    minDepth = kGemmFewRowsMinDepth;
  } else {
    return p;
  }
  const int maxSplits =
      clusters ? std::min(caps.gemmMaxCluster, o.gemmWideClusters ? kGemmWideCluster : kGemmPortableCluster) : 1;
  const int64_t enough = int64_t(caps.sms) * 4;
  while (p.splits < maxSplits && int64_t(p.tiles) * p.splits * 2 <= enough &&
         int64_t(K) >= int64_t(2 * p.splits) * minDepth)
    p.splits *= 2;
  return p;
}

std::string GemmStreamPlan::name() const {
  const std::string kernel = kind == GemmStreamKind::FewRows ? "fewrows" : rowsPerLane == 2 ? "narrow2" : "narrow";
  return kernel + "/" + std::to_string(splits);
}

std::string gemmPlanName(const DeviceCaps& caps, const KernelOverrides& o, bool transA, bool transB, int M, int N,
                         int K) {
  const GemmStreamPlan s = chooseGemmStream(caps, o, transA, transB, M, N, K);
  if (s.kind != GemmStreamKind::None) return s.name();
  return chooseGemmShallow(o, transA, transB, M, N, K) ? std::string("shallow") : chooseGemm(caps, o, M, N, K).name();
}

std::string GemmPlan::name() const {
  std::string text = kGemmTiles[int(tile)].name;
  if (splits > 1) text += "/" + std::to_string(splits);
  return text;
}

// ---- the fused dense head ----

namespace {

int paddedUnits(int K) {
  return K <= 4 ? 4 : K <= 8 ? 8 : K <= 12 ? 12 : K <= 16 ? 16 : K <= kDenseHeadMaxUnits ? 32 : 0;
}
size_t round4(size_t n) { return (n + 3) / 4 * 4; }

// Where the fused head beats its four launches (H100, test_cuda_dense_head --bench, in graphs): MNIST's
// heads gain 5-8 us (32 x 128 -> 10: 18.2 -> 10.9 us, 128 x 128 -> 10: 20.5 -> 12.3), up to 128 x 320 -> 10
// and 64 x 512 -> 10 it still wins; wider inputs (128 x 784, 32 x 1024 without an input gradient) or 32
// units (128 x 128 -> 32: 28.7 -> 33.3 us) lose: every block of the cluster stages all of W.
bool headFusionPays(int N, int64_t inputs, int64_t units) {
  return units <= 16 && inputs <= 512 && int64_t(N) * inputs * units <= (int64_t(1) << 19);
}

// Blocks per head: on the H100 (test_cuda_dense_head --bench) a cluster of 8 was the fastest or within
// 0.5 us of it for every shape from 32 x 128 -> 10 to 256 x 512 -> 10 (16: up to 2 us faster on the
// largest, but non-portable), and one block the slowest from 64 rows on (128 x 128 -> 10: 21.5 vs 12.3 us).
constexpr int kHeadAutoBlocks = 8;

}  // namespace

bool denseHeadFits(const DeviceCaps& caps, int N, int inputs, int units, int blocks) {
  return denseHeadLayout(N, inputs, units, blocks).floats * sizeof(float) <= caps.headSharedBytes;
}

DenseHeadLayout denseHeadLayout(int N, int I, int K, int blocks) {
  DenseHeadLayout l;
  l.KP = paddedUnits(K);
  l.rowsPer = (N + blocks - 1) / blocks;
  l.blocks = (N + l.rowsPer - 1) / l.rowsPer;  // no empty block
  const int R = l.rowsPer;
  int p = 32;
  while (p > 4 && p * R > kDenseHeadThreads) p /= 2;
  l.P = p;
  l.SX = (I + 31) / 32 * 32 + p;
  l.G = I >= kDenseHeadThreads ? 1 : std::max(1, std::min(R, kDenseHeadThreads / I));
  size_t at = 0;
  auto take = [&](size_t floats) {
    const size_t start = at;
    at += round4(floats);
    return start;
  };
  l.xs = take(size_t(R) * l.SX);                       // x rows (R, SX)
  l.wt = take(size_t(I) * l.KP);                       // W^T (I, KP)
  l.bs = take(l.KP);                                   // b (KP)
  l.ys = take(size_t(R) * l.KP);                       // outputs (R, KP)
  l.dz = take(size_t(R) * l.KP);                       // dLoss/dz (R, KP)
  l.terms = take(2 * size_t(R) * l.KP);                // the loss's per-output terms, double (R, KP)
  l.stats = take(2 * size_t(R));                       // per row: softmax's lse, double (R)
  l.part = take(size_t(std::max(l.G, 1)) * l.KP * I);  // dW partials per row group (G, KP, I)
  l.red = take(4 + l.KP);                              // this block's loss total, correct count, dB (KP)
  l.floats = at;
  return l;
}

int denseHeadBlocks(const DeviceCaps& caps, int requested) {
  return std::min(requested > 0 ? requested : kHeadAutoBlocks, caps.headMaxCluster);
}

bool denseHeadFitsUpTo(const DeviceCaps& caps, int N, int inputs, int units, int blocks) {
  if (!denseHeadFits(caps, N, inputs, units, blocks)) return false;
  // the layout grows with the rows per block but for the lanes per row, which halve past 16, 32 and 64 rows
  // (denseHeadLayout): a smaller batch whose rows end an interval can need more than this one
  const int rows = (N + blocks - 1) / blocks;
  for (int r : {16, 32, 64})
    if (r < rows && denseHeadLayout(r, inputs, units, 1).floats * sizeof(float) > caps.headSharedBytes) return false;
  return true;
}

bool denseHeadSupported(const DeviceCaps& caps, int N, int inputs, int units) {
  if (N < 1 || inputs < 1 || units < 1 || units > kDenseHeadMaxUnits) return false;
  return denseHeadFitsUpTo(caps, N, inputs, units, denseHeadBlocks(caps, 0));
}

bool chooseDenseHeadFusion(const DeviceCaps& caps, const KernelOverrides& o, int N, int64_t inputs, int64_t units,
                           ActivationFn act) {
  if (o.fusion == Switch::Off || act == ActivationFn::Softmax) return false;
  if (inputs > INT32_MAX || units > INT32_MAX || !denseHeadSupported(caps, N, int(inputs), int(units))) return false;
  return o.fusion == Switch::On || headFusionPays(N, inputs, units);
}

// ---- optimizer ----

// enough blocks to fill the GPU a few times over, never more than there is work for
unsigned optimizerBlocks(const DeviceCaps& caps, size_t n, int threads) {
  const size_t work = (n + size_t(threads) - 1) / size_t(threads);
  return unsigned(std::max<size_t>(1, std::min<size_t>(work, size_t(caps.sms) * 4)));
}

}  // namespace nnstudio::cuda
