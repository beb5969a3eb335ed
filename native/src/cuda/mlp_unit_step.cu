// The fused MLP step split over the hidden units (mlp_step.h, MlpUnitLayout): block r owns W1's rows and W2's
// columns of its units and streams the whole batch through a ring of shared-memory chunks twice a step, once
// for the forward and once, in reverse chunk order, for W1's gradient. The blocks meet at two cluster barriers
// a step and exchange only the logits' shares and dz, where the column split (mlp_step.cu) exchanges the hidden
// layer's partial sums, W2 and dh. A block streams at about 10 bytes a cycle, so this split wins on narrow,
// tall batches (tables) and loses on wide ones (docs/BENCHMARKS.md, "Two splits of the fused MLP step"). As
// there: one launch runs `steps` steps, block 0 books each into StepState, every sum has a fixed order
// (deterministic bits), and the owned parameters stay on chip until the launch's end.
#include <cooperative_groups.h>

#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/mlp_step_common.cuh"
#include "cuda/mlp_step_launch.h"
#include "cuda/tc_mma.cuh"

namespace nnstudio::cuda {

namespace {

using mlp::kThreads;
constexpr int kWarps = kThreads / 32;
constexpr int kBooker = kThreads - 32;  // the thread whose StepState copy books the steps (block 0's)

// Compiled with NNSTUDIO_MLP_STEP_PHASES defined (a measurement build only), block 0's thread 0 prints the clock
// counts of the 7 phases of the run's step 300 (UNIT_STEP_MARK(1..7) minus the mark before).
#if defined(NNSTUDIO_MLP_STEP_PHASES)
#define UNIT_STEP_MARK(i) \
  if (threadIdx.x == 0) marks[i] = clock64()
#else
#define UNIT_STEP_MARK(i)
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace cg = cooperative_groups;
using namespace mlp;

// Where chunk c of a step sits in the ring: slot (base + dir c) mod slots. The backward pass frees the slots in
// reverse chunk order and the next forward pass fills them in that order, so every step turns the direction.
struct Ring {
  int base, dir, slots;
  __device__ int slot(int c) const {
    const int s = (base + dir * c) % slots;
    return s < 0 ? s + slots : s;
  }
  __device__ Ring next() const { return Ring{slot(slots - 1), -dir, slots}; }
};

// Chunk `chunk` of staged batch `batch` (its columns, N rows) into a ring slot by cp.async; columns past I are
// zeros. 16-byte copies where every row starts 16-byte aligned (I a multiple of 4), else 4-byte ones.
__device__ void loadChunk(const MlpStepArgs& a, const MlpUnitLayout& l, float* slot, int batch, int N, int chunk) {
  const int64_t I = a.inputs;
  const int col0 = chunk * l.chunkCols;
  const float* x = a.staging + size_t(batch) * size_t(l.NP) * size_t(I);
  const uint32_t base = uint32_t(__cvta_generic_to_shared(slot));
  if (I % 4 == 0) {
    const int Q = l.chunkCols / 4;
    for (int e = threadIdx.x; e < N * Q; e += kThreads) {
      const int n = e / Q, q = e - n * Q, col = col0 + 4 * q;
      const bool keep = col < I;
      tc::cpAsync16(base + 4u * uint32_t(n * l.xs + 4 * q), x + size_t(n) * size_t(I) + (keep ? col : 0), keep ? 16u : 0u);
    }
  } else {
    for (int e = threadIdx.x; e < N * l.chunkCols; e += kThreads) {
      const int n = e / l.chunkCols, i = e - n * l.chunkCols, col = col0 + i;
      const bool keep = col < I;
      tc::cpAsync4(base + 4u * uint32_t(n * l.xs + i), x + size_t(n) * size_t(I) + (keep ? col : 0), keep ? 1u : 0u);
    }
  }
}

// This block's rows [row0, row0 + R) of a batch, copied from the dataset into staged batch `batch`: `load` issues
// the first kGatherQuads float4 loads a thread (I a multiple of 4) into registers, `store` writes them and copies
// whatever is left, so a step can issue the loads early and write late.
constexpr int kGatherQuads = 2;
struct RowGather {
  float4 v[kGatherQuads];
};
__device__ void gatherLoad(const MlpStepArgs& a, const uint32_t* rows, int row0, int R, RowGather& g) {
  const int64_t I = a.inputs, I4 = I / 4;
  if (I % 4 != 0) return;
#pragma unroll
  for (int i = 0; i < kGatherQuads; ++i) {
    const int64_t e = threadIdx.x + int64_t(i) * kThreads;
    if (e >= R * I4) break;
    const int64_t n = e / I4, q = e - n * I4;
    g.v[i] = __ldg(reinterpret_cast<const float4*>(a.features + size_t(rows[row0 + n]) * size_t(I)) + q);
  }
}
__device__ void gatherStore(const MlpStepArgs& a, const MlpUnitLayout& l, const uint32_t* rows, int row0, int R,
                            int batch, const RowGather& g) {
  const int64_t I = a.inputs, I4 = I / 4;
  float* x = a.staging + (size_t(batch) * size_t(l.NP) + size_t(row0)) * size_t(I);
  if (I % 4 == 0) {
#pragma unroll
    for (int i = 0; i < kGatherQuads; ++i) {
      const int64_t e = threadIdx.x + int64_t(i) * kThreads;
      if (e >= R * I4) break;
      reinterpret_cast<float4*>(x)[e] = g.v[i];  // row n of the block's at n I4 quads: the same flat index
    }
    for (int64_t e = threadIdx.x + int64_t(kGatherQuads) * kThreads; e < R * I4; e += kThreads) {
      const int64_t n = e / I4, q = e - n * I4;
      reinterpret_cast<float4*>(x)[e] =
          __ldg(reinterpret_cast<const float4*>(a.features + size_t(rows[row0 + n]) * size_t(I)) + q);
    }
  } else {
    for (int64_t e = threadIdx.x; e < R * I; e += kThreads) {
      const int64_t n = e / I, i = e - n * I;
      x[e] = __ldg(a.features + size_t(rows[row0 + n]) * size_t(I) + i);
    }
  }
}

// d += a . b (m16n8k8): 3xTF32 (SPLIT 3: the small corrections first, as tc_mma.cuh) or 1xTF32.
template <int SPLIT>
__device__ __forceinline__ void mmaTf32(float (&d)[4], const float (&a)[4], const float (&b)[2]) {
  uint32_t aBig[4], aSmall[4], bBig[2], bSmall[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) tc::split<SPLIT>(a[i], aBig[i], aSmall[i]);
#pragma unroll
  for (int i = 0; i < 2; ++i) tc::split<SPLIT>(b[i], bBig[i], bSmall[i]);
  if constexpr (SPLIT == 3) {
    tc::mma(d, aBig, bSmall);
    tc::mma(d, aSmall, bBig);
  }
  tc::mma(d, aBig, bBig);
}

// The forward's share of one chunk: P[rows, units] += x[rows, chunk] . W1[units, chunk]^T. Warp w takes the m16
// row tile w % (NP / 16) and every kGroups-th k8 step of the chunk from w / (NP / 16) on. Each k8 step's slot t
// holds column 2t and slot t + 4 column 2t + 1, so both operands load as float2 (the same order for A and B).
template <int SPLIT>
__device__ void forwardChunk(const MlpUnitLayout& l, const float* x, const float* w1, int chunk, int N, int NT,
                             float (&acc)[4][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
  const int MT = l.NP / 16, n0 = 16 * (warp % MT), kg = warp / MT;
  if (n0 >= N) return;
  for (int ks = kg; ks < l.chunkCols / 8; ks += l.kGroups) {
    const int kk = 8 * ks + 2 * t;
    const float2 lo = *reinterpret_cast<const float2*>(x + (n0 + g) * l.xs + kk);
    const float2 hi = *reinterpret_cast<const float2*>(x + (n0 + g + 8) * l.xs + kk);
    const float af[4] = {lo.x, hi.x, lo.y, hi.y};
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      if (nt >= NT) break;
      const float2 w = *reinterpret_cast<const float2*>(w1 + (8 * nt + g) * l.w1s + chunk * l.chunkCols + kk);
      const float bf[2] = {w.x, w.y};
      mmaTf32<SPLIT>(acc[nt], af, bf);
    }
  }
}

// W1's gradient over one chunk's columns, dW1^T[chunk, units] = x[:, chunk]^T . dh: warp w takes the 16 columns
// (w % 8) and every other k8 step of the rows from w / 8 on; the second half's sums are added to the first's
// (acc, in warps 0-7, which return true) after a barrier of the pair.
template <int SPLIT>
__device__ bool weightGradientChunk(const MlpUnitLayout& l, const float* x, const float* dh, float* pairSums, int tileCol,
                                    int rowSteps, int NT, float (&acc)[4][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane / 4, t = lane % 4, half = warp / 8;
  for (int ks = half; ks < rowSteps; ks += 2) {
    const float* r0 = x + (8 * ks + t) * l.xs + tileCol + g;
    const float* r4 = r0 + 4 * l.xs;
    const float af[4] = {r0[0], r0[8], r4[0], r4[8]};
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      if (nt >= NT) break;
      const float bf[2] = {dh[(8 * ks + t) * l.hs + 8 * nt + g], dh[(8 * ks + t + 4) * l.hs + 8 * nt + g]};
      mmaTf32<SPLIT>(acc[nt], af, bf);
    }
  }
  const int pair = 1 + warp % 8;
  if (half == 1) {
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        if (nt < NT) pairSums[(nt * 4 + c) * 32 + lane] = acc[nt][c];
    asm volatile("bar.sync %0, 64;\n" ::"r"(pair) : "memory");
    return false;
  }
  asm volatile("bar.sync %0, 64;\n" ::"r"(pair) : "memory");
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      if (nt < NT) acc[nt][c] += pairSums[(nt * 4 + c) * 32 + lane];
  return true;
}

// (one block an SM: without the 1, ptxas aimed at two and held the kernel to 64 registers, spilling 300 bytes)
template <int SPLIT>
__global__ void __launch_bounds__(kThreads, 1) mlpUnitStepKernel(MlpStepArgs a, MlpUnitLayout l, int N, int steps) {
  startAfterPreviousKernel();  // as every kernel: under NNSTUDIO_CUDA_PDL=1 the launch may start early
  cg::cluster_group cluster = cg::this_cluster();
  extern __shared__ float4 shared4[];
  float* smem = reinterpret_cast<float*>(shared4);
  auto rowBuf = [&](int b) { return reinterpret_cast<uint32_t*>(smem + (b ? l.rows[1] : l.rows[0])); };
  auto slotAt = [&](int slot) { return smem + l.x + size_t(slot) * l.NP * l.xs; };
  float* part = smem + l.part;
  float* h = smem + l.h;
  float* dh = smem + l.dh;
  float* zPart = smem + l.zPart;
  float* zRows = smem + l.zRows;
  float* dzRows = smem + l.dzRows;
  float* dzAll = smem + l.dzAll;
  double* rowLosses = reinterpret_cast<double*>(smem + l.rowLoss);
  float* rowRight = smem + l.rowRight;
  double* lossPart = reinterpret_cast<double*>(smem + l.lossPart);
  float* sums = smem + l.sums;
  int32_t* labelRows = reinterpret_cast<int32_t*>(smem + l.labels);
  __shared__ int skipStep;
  __shared__ int anyApplied;

  const int C = l.blocks, rank = int(cluster.block_rank()), tid = threadIdx.x, warp = tid / 32;
  const int H = a.hidden, K = a.classes, KP = l.KP, UP = l.UP, NT = UP / 8, CH = l.chunks;
  const int64_t I = a.inputs;
  const int unit0 = min(H, rank * l.units), U = min(H, unit0 + l.units) - unit0;  // this block's units
  const int row0 = rank * l.rowsPer, R = max(0, min(l.rowsPer, N - row0));
  const int slots = a.adam ? 2 : a.momentum != 0.0f ? 1 : 0;
  const Owned w1 = ownedAt(smem, l.w1, slots), own2 = ownedAt(smem, l.own2, slots);
  const Owned ownB1 = ownedAt(smem, l.ownB1, slots), b2 = ownedAt(smem, l.b2, slots);
  auto w2Index = [&](int j) { return a.w2 + size_t(j / max(U, 1)) * size_t(H) + unit0 + j % max(U, 1); };
  auto b1Index = [&](int j) { return a.b1 + size_t(unit0 + j); };
  auto b2Index = [&](int j) { return a.b2 + size_t(j); };
  const bool plainSgdRule = !a.adam && a.momentum == 0.0f && a.decay.rate == 0.0f;

  StepState booked = *a.state;
  const long long globalStep0 = booked.globalStep, epochStep0 = booked.epochStep;
  bool diverged = booked.diverged != 0;

  for (size_t e = tid; e < l.floats; e += kThreads) smem[e] = 0.0f;  // the paddings and rows past N stay zero
  if (tid == 0) anyApplied = 0;
  __syncthreads();
  auto w1Place = [&](int e) {  // W1's rows, coalesced along them
    const int u = int(e / I), i = int(e - int64_t(u) * I);
    return OwnedPlace{u * l.w1s + i, a.w1 + size_t(unit0 + u) * size_t(I) + i};
  };
  loadOwnedAt(a, w1, slots, int(U * I), w1Place);
  loadOwned(a, own2, slots, K * U, w2Index);  // W2[:, units] as [k][u], U to a row
  loadOwned(a, ownB1, slots, U, b1Index);
  loadOwned(a, b2, slots, K, b2Index);
  auto orderOf = [&](int s) { return a.order + size_t(epochStep0 + s) * size_t(a.batch); };
  for (int n = tid; n < N; n += kThreads) rowBuf(0)[n] = orderOf(0)[n];
  __syncthreads();

  // The ring's schedule: a step consumes 2 CH chunks at positions p (the forward's chunk p, then the backward's
  // chunk 2 CH - 1 - p), and at position p issues the copy that position p + ring - 1 needs (one commit group
  // a position, possibly empty). The backward's first `ring` chunks are the forward's last, still in the ring.
  const int S = l.ring;
  Ring ring{0, 1, S};
  auto issue = [&](int s, int q, const Ring& now) {  // the copy position q of step s needs, if any
    if (q < CH) {
      loadChunk(a, l, slotAt(now.slot(q)), s % 3, N, q);
    } else if (q < 2 * CH) {
      const int j = q - CH, chunk = CH - 1 - j;
      if (j >= S) loadChunk(a, l, slotAt(now.slot(chunk)), s % 3, N, chunk);
    } else if (s + 1 < steps) {
      loadChunk(a, l, slotAt(now.next().slot(q - 2 * CH)), (s + 1) % 3, N, q - 2 * CH);
    }
  };
  {  // step 0's batch, staged by every block before any block reads it
    RowGather first;
    gatherLoad(a, rowBuf(0), row0, R, first);
    gatherStore(a, l, rowBuf(0), row0, R, 0, first);
  }
  cluster.sync();
  for (int q = 0; q < S - 1; ++q) {
    issue(0, q, ring);
    tc::cpAsyncCommit();
  }
  // waits for position p's chunk (ring - 2 younger groups may still fly), then issues position p + ring - 1's;
  // the first position's group also brings the next step's rows (dataset indices)
  auto advance = [&](int s, int p) {
    if (S == 2) tc::cpAsyncWait<0>();
    else if (S == 3) tc::cpAsyncWait<1>();
    else tc::cpAsyncWait<2>();
    __syncthreads();
    issue(s, p + S - 1, ring);
    if (p == 0 && s + 1 < steps)
      for (int n = tid; n < N; n += kThreads)
        tc::cpAsync4(uint32_t(__cvta_generic_to_shared(rowBuf((s + 1) & 1) + n)),
                     reinterpret_cast<const float*>(orderOf(s + 1) + n), 1u);
    tc::cpAsyncCommit();
  };
#if defined(NNSTUDIO_MLP_STEP_PHASES)
  long long marks[8] = {};
#endif

  for (int s = 0; s < steps; ++s) {
    const uint32_t* rows = rowBuf(s & 1);
    const bool more = s + 1 < steps;
    UNIT_STEP_MARK(0);
    // ---- forward: P = x . W1[units, :]^T over the chunks; the warps' partial sums, then h ----
    // (the next step's batch: its rows have come by position ring - 1; loaded then, staged after the pass)
    float acc[4][4] = {};
    RowGather nextRows;
    int32_t label = 0;
    // (with one chunk the rows' copy, issued at position 0, is waited for after the pass)
    const int rowsAt = min(S, CH) - 1;
    for (int c = 0; c < CH; ++c) {
      advance(s, c);
      if (c == 0 && tid < R) label = a.labels[rows[row0 + tid]];
      if (c == rowsAt && c > 0 && more) gatherLoad(a, rowBuf((s + 1) & 1), row0, R, nextRows);
      forwardChunk<SPLIT>(l, slotAt(ring.slot(c)), w1.slot[0], c, N, NT, acc);
    }
    if (rowsAt == 0 && more) {
      tc::cpAsyncWait<0>();
      __syncthreads();
      gatherLoad(a, rowBuf((s + 1) & 1), row0, R, nextRows);
    }
    if (more) gatherStore(a, l, rowBuf((s + 1) & 1), row0, R, (s + 1) % 3, nextRows);
    if (tid < R) labelRows[tid] = label;
    {
      const int lane = tid & 31, g = lane / 4, t = lane % 4, MT = l.NP / 16, n0 = 16 * (warp % MT), kg = warp / MT;
      if (n0 < N)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int c = 0; c < 4; ++c)
            if (nt < NT) part[(kg * l.NP + n0 + g + (c >= 2 ? 8 : 0)) * UP + 8 * nt + 2 * t + (c & 1)] = acc[nt][c];
    }
    __syncthreads();
    UNIT_STEP_MARK(1);
    for (int e = tid; e < N * UP; e += kThreads) {
      const int n = e / UP, u = e - n * UP;
      float sum = 0.0f;
      for (int k = 0; k < l.kGroups; ++k) sum += part[(k * l.NP + n) * UP + u];
      h[n * l.hs + u] = u < U ? activate(sum + ownB1.slot[0][u], a.act, a.alpha) : 0.0f;
    }
    __syncthreads();
    for (int e = tid; e < N * K; e += kThreads) {  // this block's share of the logits
      const int n = e / K, k = e - n * K;
      float sum = 0.0f;
      for (int u = 0; u < U; ++u) sum = fmaf(h[n * l.hs + u], own2.slot[0][k * U + u], sum);
      zPart[n * KP + k] = sum;
    }
    UNIT_STEP_MARK(2);
    cluster.sync();  // (1) every block's share of the logits
    UNIT_STEP_MARK(3);

    // ---- this block's rows: the logits, the loss and dz ----
    for (int e = tid; e < R * K; e += kThreads) {
      const int r = e / K, k = e - r * K;
      zRows[r * KP + k] = clusterSum(cluster, zPart + (row0 + r) * KP + k, C) + b2.slot[0][k];
    }
    __syncthreads();
    for (int r = warp; r < R; r += kWarps)
      rowLoss(a, zRows + r * KP, RowOut{dzRows + r * KP, rowLosses + r, rowRight + r}, labelRows[r], N);
    __syncthreads();
    blockLossPart(rowLosses, rowRight, R, lossPart);
    UNIT_STEP_MARK(4);
    cluster.sync();  // (2) every block's rows
    UNIT_STEP_MARK(5);

    // ---- every row's dz; the step's loss; dh, dW2, db2, db1 and their updates ----
    {  // the blocks' dz rows are consecutive rows of dzAll: a float4 a thread, one round trip
      const int quads = l.rowsPer * KP / 4;
      for (int e = tid; e < C * quads; e += kThreads) {
        const int owner = e / quads, q = e - owner * quads;
        if (owner * l.rowsPer < N)
          reinterpret_cast<float4*>(dzAll)[e] = *cluster.map_shared_rank(reinterpret_cast<const float4*>(dzRows) + q, owner);
      }
    }
    if (tid >= kBooker) {  // the last warp, which has no dz to gather (16 blocks' rows: 192 float4)
      const bool skip = bookStepLoss(cluster, lossPart, C, rank, N, booked, diverged);
      if (tid == kBooker) skipStep = skip ? 1 : 0;
    }
    __syncthreads();
    diverged = skipStep != 0;
    for (int e = tid; e < N * UP; e += kThreads) {
      const int n = e / UP, u = e - n * UP;
      float sum = 0.0f;
      if (u < U)
        for (int k = 0; k < K; ++k) sum = fmaf(dzAll[n * KP + k], own2.slot[0][k * U + u], sum);
      dh[n * l.hs + u] = u < U ? gateGradient(sum, h[n * l.hs + u], a.act, a.alpha) : 0.0f;
    }
    __syncthreads();
    // sums over the rows, 4 lanes an output: dW2[k][u] (K U), db2 (K), db1 (U)
    const int outputs = K * U + K + U;
    for (int o0 = 0; o0 < outputs; o0 += kThreads / 4) {
      const int o = o0 + tid / 4, q = tid % 4;
      float sum = 0.0f;
      if (o < K * U) {
        const int k = o / U, u = o - k * U;
        for (int n = q; n < N; n += 4) sum = fmaf(dzAll[n * KP + k], h[n * l.hs + u], sum);
      } else if (o < K * U + K) {
        for (int n = q; n < N; n += 4) sum += dzAll[n * KP + o - K * U];
      } else if (o < outputs) {
        for (int n = q; n < N; n += 4) sum += dh[n * l.hs + o - K * U - K];
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      if (q == 0 && o < outputs) sums[o] = sum;
    }
    __syncthreads();
    StepRule rule{};
    if (!diverged) {
      if (tid == 0) anyApplied = 1;
      rule = stepRule(a, booked.baseLr, globalStep0 + s);
      for (int j = tid; j < outputs; j += kThreads) {
        if (j < K * U) updateOwned(a, own2, j, w2Index(j), sums[j], rule, true);
        else if (j < K * U + K) updateOwned(a, b2, j - K * U, b2Index(j - K * U), sums[j], rule, false);
        else updateOwned(a, ownB1, j - K * U - K, b1Index(j - K * U - K), sums[j], rule, false);
      }
    }
    UNIT_STEP_MARK(6);

    // ---- W1's gradient over the chunks in reverse, each chunk's columns updated at once ----
    const int rowSteps = (N + 7) / 8;
    for (int j = 0; j < CH; ++j) {
      const int chunk = CH - 1 - j;
      advance(s, CH + j);
      const int tileCol = 16 * (warp % 8), col0 = chunk * l.chunkCols + tileCol;
      if (tileCol >= l.chunkCols || col0 >= I) continue;  // both warps of the pair skip
      float g[4][4] = {};
      float* pairSums = smem + l.combine + (warp % 8) * NT * 128;
      if (!weightGradientChunk<SPLIT>(l, slotAt(ring.slot(chunk)), dh, pairSums, tileCol, rowSteps, NT, g) || diverged)
        continue;
      const int lane = tid & 31, gq = lane / 4, t = lane % 4;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int col = col0 + gq + (c >= 2 ? 8 : 0), u = 8 * nt + 2 * t + (c & 1);
          if (nt >= NT || col >= I || u >= U) continue;
          const int at = u * l.w1s + col;
          if (plainSgdRule) {
            updateOwnedPlainSgd(w1, at, g[nt][c], rule.lr);
          } else {
            updateOwned(a, w1, at, a.w1 + size_t(unit0 + u) * size_t(I) + col, g[nt][c], rule, true);
          }
        }
    }
    ring = ring.next();
    UNIT_STEP_MARK(7);
#if defined(NNSTUDIO_MLP_STEP_PHASES)
    if (rank == 0 && tid == 0 && globalStep0 + s == 300) {
      printf("unitphases step %lld C %d N %d SPLIT %d ring %d chunks %d:", globalStep0 + s, C, N, SPLIT, S, CH);
      for (int m = 1; m <= 7; ++m) printf(" %lld", marks[m] - marks[m - 1]);
      printf(" total %lld\n", marks[7] - marks[0]);
    }
#endif
  }
  tc::cpAsyncWait<0>();
  cluster.sync();  // no block leaves while another still reads its shared memory
  // ---- write back: the owned parameters (when a step applied), and block 0's booking ----
  if (anyApplied) {
    storeOwnedAt(a, w1, slots, int(U * I), w1Place);
    storeOwned(a, own2, slots, K * U, w2Index);
    storeOwned(a, ownB1, slots, U, b1Index);
    if (rank == 0) storeOwned(a, b2, slots, K, b2Index);
  }
  if (rank == 0 && tid == kBooker) *a.state = booked;
}
#else
template <int SPLIT>
__global__ void mlpUnitStepKernel(MlpStepArgs, MlpUnitLayout, int, int) { __trap(); }  // sm_90+ only
#endif

using KernelFn = void (*)(MlpStepArgs, MlpUnitLayout, int, int);
// 3xTF32 products for FP32, 1xTF32 for a TF32 or mixed run (as the column split)
KernelFn kernelFor(Precision precision) {
  return precision == Precision::Fp32 ? mlpUnitStepKernel<3> : mlpUnitStepKernel<1>;
}

}  // namespace

MlpUnitLayout mlp_unit_step_layout(const MlpStepShape& shape) {
  const size_t optin = mlp::optInSharedMemory(kernelFor(Precision::Fp32), kernelFor(Precision::Tf32));
  if (optin == 0) return {};
  for (int blocks = kMlpStepMaxBlocks; blocks >= 2; blocks /= 2) {
    const MlpUnitLayout l = mlpUnitLayout(shape, blocks, optin);
    if (l.blocks > 0 && clusterFits(kernelFor(Precision::Fp32), kThreads, l.bytes(), blocks)) return l;
  }
  return {};
}

void mlp_unit_step_fused(cudaStream_t stream, const MlpStepArgs& args, const MlpUnitLayout& layout, int rows,
                         int steps) {
  if (rows < 1 || steps < 1) return;
  if (rows > layout.rowsPer * layout.blocks || rows > layout.NP || layout.blocks < 2)
    throw EngineError("fused MLP step (unit split): " + std::to_string(rows) + " rows for a layout of " +
                      std::to_string(layout.rowsPer * layout.blocks) + " (internal error)");
  launchClusterKernel("mlpUnitStepKernel", kernelFor(args.precision), dim3(unsigned(layout.blocks)), kThreads,
                      layout.bytes(), stream, layout.blocks, args, layout, rows, steps);
  checkLaunch("fused MLP step (unit split)");
}

}  // namespace nnstudio::cuda
