// Split reductions in one launch ("the last block reduces"), shared by the conv weight gradients
// (conv2d.cu, conv2d_pool.cu): the S blocks of one output tile each add up a chunk of the pixels and
// store their partial tile in slot z of the workspace; the last block to finish a group of G
// consecutive slots adds that group in slot order (into the group's first slot), and the last group to
// finish adds the group sums in group order and writes dWeight / dBias. "Last" comes from a ticket
// (atomicInc on a counter of the workspace); the sums' order never depends on who comes last, so the
// bits are the same on every run. Two levels (G ~ sqrt(S)) spread the adding over many blocks: one block
// adding 100 partial tiles alone reads them at one SM's L2 bandwidth.
//
// Workspace layout (floats): [kSplitCounters counters (unsigned)][slot 0][slot 1]...; a slot is (F, K + 1).
// The counters are zero before the first launch (conv2d_weights_workspace_init) and every launch that
// uses one sets it back to zero, so CUDA-graph replays start clean. Every user of the workspace keeps
// this layout (the counters region is never written by anything else).
#pragma once

#include <cstdint>

namespace nnstudio::cuda::split {

constexpr int kCounters = 4096;        // counters region, in 4-byte words
constexpr int kGroupCounters = 3072;   // [0, 3072): one per (tile, group); [3072, 4096): one per tile
constexpr int kTileCounters = kCounters - kGroupCounters;

// group size for S slots: about sqrt(S)
inline int groupSize(int S) {
  int g = 1;
  while (g * g < S) ++g;
  return g;
}

// does a split of `tiles` tiles into S slots fit the counters?
inline bool fits(int64_t tiles, int S) {
  const int G = groupSize(S), groups = (S + G - 1) / G;
  return tiles <= kTileCounters && tiles * groups <= kGroupCounters;
}

// The tile's outputs: rows [f0, f0 + rows) of the (F, Kp) slot, columns colBegin + j for j < cols, and
// the bias column K (= Kp - 1) after them when `bias`. dWeight (F, K), dBias (F).
struct Tile {
  int f0, rows, colBegin, cols;
  bool bias;
};

#ifdef __CUDACC__
// Every thread of the block calls this last, after storing its part of slot z. Blocks are 1-D.
__device__ __forceinline__ void finish(float* ws, int F, int Kp, int S, int G, int tile, int z, const Tile& t,
                                       float* dWeight, float* dBias) {
  __shared__ unsigned ticket;
  unsigned* counters = reinterpret_cast<unsigned*>(ws);
  float* slots = ws + kCounters;
  const int64_t slotSize = int64_t(F) * Kp;
  const int K = Kp - 1;
  const int n = t.cols + (t.bias ? 1 : 0), total = t.rows * n;
  const int groups = (S + G - 1) / G, g = z / G, gBegin = g * G, gEnd = min(S, gBegin + G);

  // sums of slots first, first + step, ... (< end) in that order, for every output of the tile
  auto addUp = [&](int first, int end, int step, bool final) {
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
      const int r = e / n, j = e - r * n;
      const int f = t.f0 + r, col = j < t.cols ? t.colBegin + j : K;
      const float* p = slots + int64_t(f) * Kp + col;
      float s = 0.0f;
#pragma unroll 8
      for (int q = first; q < end; q += step) s += __ldcg(p + q * slotSize);
      if (!final) slots[int64_t(first) * slotSize + int64_t(f) * Kp + col] = s;
      else if (col < K) dWeight[int64_t(f) * K + col] = s;
      else dBias[f] = s;
    }
  };

  __threadfence();  // this thread's partial sums are visible before the ticket is taken
  __syncthreads();
  unsigned* groupCounter = counters + tile * groups + g;
  if (threadIdx.x == 0) ticket = atomicAdd(groupCounter, 1u);
  __syncthreads();
  if (ticket != unsigned(gEnd - gBegin - 1)) return;
  if (threadIdx.x == 0) *groupCounter = 0;  // ready for the next launch
  __threadfence();
  addUp(gBegin, gEnd, 1, groups == 1);
  if (groups == 1) return;

  __threadfence();
  __syncthreads();
  unsigned* tileCounter = counters + kGroupCounters + tile;
  if (threadIdx.x == 0) ticket = atomicAdd(tileCounter, 1u);
  __syncthreads();
  if (ticket != unsigned(groups - 1)) return;
  if (threadIdx.x == 0) *tileCounter = 0;
  __threadfence();
  addUp(0, S, G, true);
}
#endif

}  // namespace nnstudio::cuda::split
