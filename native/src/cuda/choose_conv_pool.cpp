// The fused conv2d + max pool (conv2d_pool.cu): whether a pair fuses, and the launch plans of its forward
// and weight-gradient kernels.
#include <algorithm>

#include "cuda/kernel_choice.h"

namespace nnstudio::cuda {

namespace {

constexpr int kForwardSmemBytes = 40 * 1024;
constexpr int kWgInputBytes = 20 * 1024;
constexpr int kWgWindowBytes = 24 * 1024;

// Where the fused kernel pays (H100, test_cuda_conv2d_pool --bench): a thin conv (few taps) with many
// filters, whose output is large next to its input; seed001's 1 -> 64 and 1 -> 256 filters 3x3 gain 2-3x,
// fast_mnist's 1 -> 24 filters 5x5 (batch 256) 1.6-1.7x (forward with the pool 17.7 against 30.3 us,
// weight gradient 26.1 against 40.3). On few filters (seed000, seed002, lenet: 4-16, which the direct
// kernel takes) or many taps (keras conv2: 32 x 3 x 3; fast_mnist conv2: 24 x 5 x 5, 125 against 47 us)
// the conv plus a separate pool is faster.
bool fusionPays(const ConvGeometry& g) { return g.C * g.kh * g.kw <= 32 && g.F >= 24; }

// the forward's shared memory: CC channels of input rows and of FL blocks' weights (FB filters each), their biases
int64_t forwardStageBytes(int CC, int TH, int TW, int64_t khkw, int FB, int FL) {
  return (int64_t(CC) * (int64_t(TH) * TW + khkw * FB * FL) + int64_t(FB) * FL) * int64_t(sizeof(float));
}

// FL: doubled while the grid keeps loopBlocks blocks and the staged weights fit (forced: `loops`, halved until
// they fit); only where every channel is staged at once, so that the loops need no barrier
int filterLoops(const ConvPoolForwardPlan& c, const ConvGeometry& g, int64_t samplesTiles, int filterBlocks,
                int loopBlocks, int loops) {
  if (c.CC != g.C) return 1;
  auto fits = [&](int fl) {
    return forwardStageBytes(g.C, c.TH, c.TW, int64_t(g.kh) * g.kw, c.FPT * c.GY, fl) <= kForwardSmemBytes;
  };
  auto blocks = [&](int fl) { return samplesTiles * ((filterBlocks + fl - 1) / fl); };
  int fl = 1;
  if (loops > 0) {
    fl = std::min(loops, filterBlocks);
    while (fl > 1 && !fits(fl)) fl /= 2;
    return fl;
  }
  while (2 * fl <= filterBlocks && blocks(2 * fl) >= loopBlocks && fits(2 * fl)) fl *= 2;
  return fl;
}

// the forward with `targetBlocks` blocks to aim for (filter groups per block are cut until the grid has them)
ConvPoolForwardPlan forwardPlan(int N, const ConvGeometry& g, const PoolGeometry& p, int targetBlocks,
                                int loopBlocks, int loops) {
  ConvPoolForwardPlan c;
  c.PS = p.size;
  if (c.PS < 2 || c.PS > 4 || p.stride < 1 || g.stride < 1 || g.kh < 1 || g.kw < 1) return c;
  if (p.C != g.F || p.H != g.OH || p.W != g.OW || p.OH < 1 || p.OW < 1) return c;
  if (p.OH != (g.OH - p.size) / p.stride + 1 || p.OW != (g.OW - p.size) / p.stride + 1) return c;
  if (p.OW > 256) return c;
  const int F = g.F, khkw = g.kh * g.kw;
  c.taps = c.PS == 2 && g.stride == 1 && g.kh == g.kw && (g.kh == 3 || g.kh == 5) ? g.kh : 0;
  // 16 filters a thread only without the register taps: with them, 8 keeps two blocks an SM (65 against 113
  // registers) and was faster (seed001 with 64 and 256 filters, H200)
  if (c.PS == 2) c.FPT = F >= 64 && c.taps == 0 ? 16 : (F >= 8 ? 8 : 4);
  else if (c.PS == 3) c.FPT = F >= 8 ? 8 : 4;
  else c.FPT = 4;
  const int groups = (F + c.FPT - 1) / c.FPT;
  int TPR = std::min(p.OH, std::max(1, 256 / p.OW));
  for (;;) {
    const int bx = (TPR * p.OW + 31) / 32 * 32;
    const int rowTiles = (p.OH + TPR - 1) / TPR;
    int GY = std::min(groups, std::max(1, kConvPoolForwardMaxThreads / bx));
    while (GY > 1 && int64_t(std::max(N, 1)) * rowTiles * ((groups + GY - 1) / GY) < targetBlocks) --GY;
    const int TH = ((TPR - 1) * p.stride + c.PS - 1) * g.stride + g.kh;
    const int TW = ((p.OW - 1) * p.stride + c.PS - 1) * g.stride + g.kw;
    int CC = 0;
    for (; GY >= 1; --GY) {
      const int64_t perChannel = int64_t(TH) * TW + int64_t(khkw) * c.FPT * GY;
      CC = int(std::min<int64_t>(g.C, (kForwardSmemBytes / 4 - c.FPT * GY) / perChannel));  // the biases too
      if (CC >= 1) break;
    }
    if (CC >= 1) {
      c.TPR = TPR;
      c.GY = GY;
      c.TH = TH;
      c.TW = TW;
      c.CC = CC;
      c.bx = bx;
      const int filterBlocks = (groups + GY - 1) / GY;
      c.FL = filterLoops(c, g, int64_t(std::max(N, 1)) * rowTiles, filterBlocks, loopBlocks, loops);
      c.smem = size_t(forwardStageBytes(CC, TH, TW, khkw, c.FPT * GY, c.FL));
      c.grid[0] = unsigned(rowTiles);
      c.grid[1] = unsigned((filterBlocks + c.FL - 1) / c.FL);
      c.grid[2] = unsigned(std::max(N, 1));
      c.block[0] = unsigned(bx);
      c.block[1] = unsigned(GY);
      c.ok = N <= kConvPoolMaxBatch;
      return c;
    }
    if (TPR == 1) return c;
    TPR = (TPR + 1) / 2;
  }
}

// the batch in chunks of whole samples until the grid has about `target` blocks of `tiles` each
void setChunks(ConvPoolWeightsPlan& c, int N, int tiles, int target) {
  c.chunks = std::max(1, std::min(N, (target + tiles - 1) / tiles));
  c.mostChunks = c.chunks;  // whole samples a chunk: rounding `per` up only lowers the count
  c.per = (N + c.chunks - 1) / c.chunks;
  c.chunks = (N + c.per - 1) / c.per;
}

// A thin conv (a first layer: every tap of every channel fits a thread's registers, the input a block's shared
// memory): a warp per filter over all its windows (conv2d_pool.cu convPoolWeightsThin).
ConvPoolWeightsPlan thinWeightsPlan(int N, const ConvGeometry& g, ConvPoolWeightsPlan c, int64_t HpWp, int blocks) {
  c.thin = true;
  c.CT = g.C;
  c.FT = kConvPoolWgThreads / 32;
  c.QS = 32;
  const int tiles = (g.F + c.FT - 1) / c.FT;
  setChunks(c, N, tiles, blocks);
  const int64_t stage = g.C * HpWp;
  c.prefetch = g.padTop == 0 && g.padLeft == 0 && c.Hp == g.H && c.Wp == g.W && stage % 4 == 0 &&
               stage <= 4 * kConvPoolWgThreads;
  c.smem = size_t(c.prefetch ? 2 : 1) * size_t(stage) * sizeof(float);
  c.grid[0] = unsigned(c.chunks);
  c.grid[1] = unsigned(tiles);
  c.grid[2] = 1;
  c.ok = c.grid[1] <= 65535;
  return c;
}

}  // namespace

// Filter groups per block: cut until the grid has two blocks per SM (each thread sums its outputs in the
// same order whatever the grouping, so this only moves work between blocks).
ConvPoolForwardPlan planConvPoolForward(const DeviceCaps& caps, int N, const ConvGeometry& g, const PoolGeometry& p,
                                        int loops) {
  return forwardPlan(N, g, p, 2 * caps.sms, kConvPoolLoopBlocksPerSm * caps.sms, loops);
}

ConvPoolWeightsPlan planConvPoolWeights(int N, const ConvGeometry& g, const PoolGeometry& p, int thinBlocks) {
  ConvPoolWeightsPlan c;
  if (N < 1) return c;
  c.Hp = (g.OH - 1) * g.stride + g.kh;
  c.Wp = (g.OW - 1) * g.stride + g.kw;
  const int khkw = g.kh * g.kw;
  const int64_t HpWp = int64_t(c.Hp) * c.Wp;
  const int PQ = p.OH * p.OW;
  if (g.C * khkw <= kConvPoolThinTaps && g.C * HpWp <= kWgInputBytes / 4)
    return thinWeightsPlan(N, g, c, HpWp, thinBlocks > 0 ? thinBlocks : kConvPoolThinBlocks);
  c.CT = int(std::min<int64_t>(
      {int64_t(g.C), kWgInputBytes / 4 / HpWp, int64_t((kConvPoolWgCols * 32 - 1) / khkw)}));
  if (c.CT < 1) return c;
  const int colGroups = (c.CT * khkw + 1 + kConvPoolWgCols - 1) / kConvPoolWgCols;
  c.FT = std::min({g.F, kWgWindowBytes / 8 / std::max(PQ, 1), kConvPoolWgThreads * kConvPoolWgUnits / colGroups});
  if (c.FT < 1) return c;
  const int units = c.FT * colGroups;
  c.QS = std::max(1, std::min(16, kConvPoolWgThreads * kConvPoolWgUnits / units));
  c.QS = std::min(c.QS, PQ);
  const int tiles = ((g.F + c.FT - 1) / c.FT) * ((g.C + c.CT - 1) / c.CT);
  setChunks(c, N, tiles, kConvPoolWgBlocks);
  c.smem = std::max(size_t(c.CT) * HpWp * sizeof(float) + size_t(c.FT) * PQ * 2 * sizeof(float),
                    size_t(kConvPoolWgThreads) * kConvPoolWgUnits * 4 * sizeof(float));  // the slices' sums reuse it
  c.grid[0] = unsigned(c.chunks);
  c.grid[1] = unsigned((g.F + c.FT - 1) / c.FT);
  c.grid[2] = unsigned((g.C + c.CT - 1) / c.CT);
  c.ok = c.grid[1] <= 65535 && c.grid[2] <= 65535;
  return c;
}

bool convPoolSupported(const ConvGeometry& g, const PoolGeometry& p) {
  return forwardPlan(1, g, p, 1, 1, 1).ok && planConvPoolWeights(1, g, p).ok;
}

bool chooseConvPoolFusion(const KernelOverrides& o, const ConvGeometry& g, const PoolGeometry& p, ActivationFn act,
                          int maxN) {
  if (o.fusion == Switch::Off || act == ActivationFn::Softmax || maxN > kConvPoolMaxBatch || !convPoolSupported(g, p))
    return false;
  return o.fusion == Switch::On || fusionPays(g);
}

// Wherever the thin kernel runs and its windows' argmax fit 2 + 2 bits (Off keeps the int32s): seed001_256's
// forward writes 43 MB of bytes a step instead of 173 MB of int32s, and its weight gradient reads them instead of
// the argmax and pooled, 240 -> 183 us a step, 0.0468 -> 0.0429 s an epoch (H100, session 38).
bool chooseConvPoolWindowBytes(const KernelOverrides& o, const ConvGeometry& g, const PoolGeometry& p) {
  return o.convPoolWindowBytes != Switch::Off && p.size <= 4 && planConvPoolWeights(1, g, p, o.convPoolThinBlocks).thin;
}

}  // namespace nnstudio::cuda
