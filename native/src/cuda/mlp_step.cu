// The fused training step of a small MLP: see mlp_step.h for the split over the cluster's blocks. One launch
// runs `steps` consecutive steps (the session's group of full steps, or one): the blocks read the step
// counters and the base learning rate once, keep their W1 columns in shared memory, and block 0 books each
// step into StepState (the batch loss, divergence, the counters) exactly as the loss and optimizer kernels
// do. Every block sums the blocks' loss partials in the same order, so all of them agree on a diverged step
// without reading global memory back.
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/loss_math.cuh"
#include "cuda/mlp_step_common.cuh"
#include "cuda/mlp_step_launch.h"
#include "cuda/optim_math.cuh"
#include "cuda/tc_mma.cuh"
#include "spec/lr_schedule.h"

namespace nnstudio::cuda {

namespace {

using mlp::kThreads;
constexpr int kWarps = kThreads / 32;

// Compiled with NNSTUDIO_MLP_STEP_PHASES defined (a measurement build only), block 0's thread 0 prints the clock
// counts of the 12 phases of the run's step 300 (MLP_STEP_MARK(1..12) minus the mark before).
#if defined(NNSTUDIO_MLP_STEP_PHASES)
#define MLP_STEP_MARK(i) \
  if (threadIdx.x == 0) marks[i] = clock64()
#else
#define MLP_STEP_MARK(i)
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace cg = cooperative_groups;
using namespace mlp;

// Four consecutive units of one W1 column (slot index j, flat index i of the first; `valid` of them are real
// units), updated from their gradients g with float4 accesses to the slots.
__device__ __forceinline__ void updateW1Quad(const MlpStepArgs& a, const Owned& o, int j, size_t i, int valid,
                                             const float (&g)[4], const StepRule& rule) {
  float4* value = reinterpret_cast<float4*>(o.slot[0] + j);
  const float4 old4 = *value;
  float old[4] = {old4.x, old4.y, old4.z, old4.w}, m[4] = {}, v[4] = {}, p[4];
  if (o.slot[2]) {
    const float4 m4 = *reinterpret_cast<const float4*>(o.slot[2] + j);
    m[0] = m4.x, m[1] = m4.y, m[2] = m4.z, m[3] = m4.w;
  }
  if (o.slot[3]) {
    const float4 v4 = *reinterpret_cast<const float4*>(o.slot[3] + j);
    v[0] = v4.x, v[1] = v4.y, v[2] = v4.z, v[3] = v4.w;
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const size_t at = i + size_t(r) * size_t(a.inputs);  // W1 is (H, I): the next unit is a row further
    p[r] = r >= valid ? old[r]
           : a.adam  ? adamUpdate(old[r], g[r], at, rule.lr, rule.corrections, a.beta1, a.beta2, a.eps, a.decay, m[r], v[r])
                     : sgdUpdate(old[r], g[r], at, rule.lr, a.momentum, a.nesterov, a.decay, m[r]);
  }
  *reinterpret_cast<float4*>(o.slot[1] + j) = old4;
  *value = make_float4(p[0], p[1], p[2], p[3]);
  if (o.slot[2]) *reinterpret_cast<float4*>(o.slot[2] + j) = make_float4(m[0], m[1], m[2], m[3]);
  if (o.slot[3]) *reinterpret_cast<float4*>(o.slot[3] + j) = make_float4(v[0], v[1], v[2], v[3]);
}

// updateW1Quad for plain SGD (no momentum, no decay: sgdUpdate's p - lr g, the same bits). The padding units
// past H stay zero: their gradient is zero.
__device__ __forceinline__ void updateW1QuadSgd(const Owned& o, int j, float4 g, float lr) {
  float4* value = reinterpret_cast<float4*>(o.slot[0] + j);
  const float4 old = *value;
  *reinterpret_cast<float4*>(o.slot[1] + j) = old;
  *value = make_float4(plainSgd(old.x, g.x, lr), plainSgd(old.y, g.y, lr), plainSgd(old.z, g.z, lr),
                       plainSgd(old.w, g.w, lr));
}

// The step's batch by cp.async (it lands while the step before runs): x's columns [col0, col0 + cols) of the
// rows `rows` (their dataset indices) and the rows' labels. The column of ones (whose weight gradient is b1's) and
// the zeros past N and past the columns are written once, when the launch begins (onesColumn).
// Threads [first, first + stride) of the block issue the copies.
__device__ void stageBatchAsync(const MlpStepArgs& a, const MlpStepLayout& l, float* xN, int32_t* labels,
                                const uint32_t* rows, int N, int col0, int cols, int first = 0,
                                int stride = kThreads) {
  const uint32_t base = uint32_t(__cvta_generic_to_shared(xN));
  const int me = int(threadIdx.x) - first;
  if (me < 0 || me >= stride) return;
  for (int e = me; e < N * cols; e += stride) {
    const int n = e / cols, i = e - n * cols;
    tc::cpAsync4(base + 4u * uint32_t(n * l.xs + i), a.features + size_t(rows[n]) * size_t(a.inputs) + col0 + i, 1u);
  }
  for (int n = me; n < N; n += stride)
    tc::cpAsync4(uint32_t(__cvta_generic_to_shared(labels + n)), reinterpret_cast<const float*>(a.labels + rows[n]), 1u);
}

// The step's rows (dataset indices) by cp.async, into `rows`.
__device__ void stageRowsAsync(const uint32_t* order, uint32_t* rows, int N) {
  for (int n = threadIdx.x; n < N; n += kThreads)
    tc::cpAsync4(uint32_t(__cvta_generic_to_shared(rows + n)), reinterpret_cast<const float*>(order + n), 1u);
}

// Both batch buffers' column of ones for the N rows (the rest stays zero).
__device__ void onesColumn(const MlpStepLayout& l, float* smem, int N, int cols) {
  for (int n = threadIdx.x; n < N; n += kThreads) {
    smem[l.xN[0] + n * l.xs + cols] = 1.0f;
    smem[l.xN[1] + n * l.xs + cols] = 1.0f;
  }
}

// part (NP, ps) = x[:, cols] . W1[:, cols]^T on the tensor cores (tc_mma.cuh): a warp per 32 x 32 tile
template <int SPLIT>
__device__ void forwardPartials(const MlpStepLayout& l, const float* xN, const float* w1t, float* part, int N) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
  const int TM = l.NP / 32, TN = l.HP / 32;
  for (int tile = warp; tile < TM * TN; tile += kWarps) {
    const int m0 = (tile % TM) * 32, n0 = (tile / TM) * 32;
    if (m0 >= N) continue;
    float acc[2][4][4];
    tc::clearWarpTile(acc);
    for (int k8 = 0; k8 < l.IcP; k8 += 8)
      tc::mmaWarpTileTf32<SPLIT>(acc, k8, g, t, [&](int r, int k) { return xN[(m0 + r) * l.xs + k]; },
                             [&](int k, int c) { return w1t[k * l.w1s + n0 + c]; });
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          *reinterpret_cast<float2*>(part + (m0 + 16 * mt + g + 8 * half) * l.ps + n0 + 8 * nt + 2 * t) =
              make_float2(acc[mt][nt][2 * half], acc[mt][nt][2 * half + 1]);
  }
}

// This block's logits z (R, K): a warp per (row, class), its lanes over the hidden units, summed as a butterfly.
// (A lane per class summing all H units one after another was the step's longest chain.)
__device__ void blockLogits(const MlpStepLayout& l, const float* smem, float* z, int R, int H, int K) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  for (int p = warp; p < R * K; p += kWarps) {
    const int r = p / K, k = p - r * K;
    const float* h = smem + l.hRows + r * l.HP;
    const float* wk = smem + l.w2s + k * l.w2Stride;
    float sum = 0.0f;
    for (int u = lane; u < H; u += 32) sum = fmaf(h[u], wk[u], sum);
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) z[r * l.KP + k] = sum + smem[l.b2s + k];
  }
}

// This block's dh = (dz . W2) * act'(h), a thread per (row, unit), the classes in order.
__device__ void blockHiddenGradient(const MlpStepArgs& a, const MlpStepLayout& l, float* smem, int R) {
  const int H = a.hidden, K = a.classes;
  for (int e = threadIdx.x; e < R * H; e += kThreads) {
    const int r = e / H, u = e - r * H;
    const float* dz = smem + l.dz + r * l.KP;
    float sum = 0.0f;
    for (int k = 0; k < K; ++k) sum = fmaf(dz[k], smem[l.w2s + k * l.w2Stride + u], sum);
    smem[l.dhRows + r * l.HP + u] = gateGradient(sum, smem[l.hRows + r * l.HP + u], a.act, a.alpha);
  }
}

// W2 and b2 (K * H + K entries) from their owners into this block's copy, four remote loads in flight a thread.
__device__ void pullW2(cg::cluster_group& cluster, const MlpStepLayout& l, float* smem, const float* owned, int H, int KH,
                       int K) {
  constexpr int kBatch = 4;
  for (int base = threadIdx.x; base < KH + K; base += kBatch * kThreads) {
    float v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = base + u * kThreads, owner = e / l.per2;
      if (e < KH + K) v[u] = *cluster.map_shared_rank(owned + (e - owner * l.per2), owner);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = base + u * kThreads;
      if (e < KH) smem[l.w2s + (e / H) * l.w2Stride + e % H] = v[u];
      else if (e < KH + K) smem[l.b2s + e - KH] = v[u];
    }
  }
}

template <int SPLIT>
__global__ void __launch_bounds__(kThreads) mlpStepKernel(MlpStepArgs a, MlpStepLayout l, int N, int steps) {
  startAfterPreviousKernel();  // as every kernel: under NNSTUDIO_CUDA_PDL=1 the launch may start early
  cg::cluster_group cluster = cg::this_cluster();
  extern __shared__ float4 shared4[];
  float* smem = reinterpret_cast<float*>(shared4);
  float* w1t = smem + l.w1t;
  // step s's batch in buffer s & 1 (selects, not an indexed array: that would live in local memory)
  auto xBuf = [&](int b) { return smem + (b ? l.xN[1] : l.xN[0]); };
  auto rowBuf = [&](int b) { return reinterpret_cast<uint32_t*>(smem + (b ? l.rows[1] : l.rows[0])); };
  auto labelBuf = [&](int b) { return reinterpret_cast<int32_t*>(smem + (b ? l.labels[1] : l.labels[0])); };
  float* part = smem + l.part;
  float* hRows = smem + l.hRows;
  float* dhRows = smem + l.dhRows;
  float* dz = smem + l.dz;
  double* rowLosses = reinterpret_cast<double*>(smem + l.rowLoss);
  float* rowRight = smem + l.rowRight;
  double* lossPart = reinterpret_cast<double*>(smem + l.lossPart);
  float* dW2 = smem + l.dW2;
  __shared__ int skipStep;
  __shared__ int anyApplied;

  const int C = l.blocks, rank = int(cluster.block_rank()), tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
  const int H = a.hidden, K = a.classes, HP = l.HP, KP = l.KP, KH = K * H;
  const int64_t I = a.inputs;
  const int col0 = rank * l.cols;
  const int cols = I - col0 <= 0 ? 0 : int(I - col0 < l.cols ? I - col0 : l.cols);
  const int row0 = rank * l.rowsPer, R = max(0, min(l.rowsPer, N - row0));
  const int slots = a.adam ? 2 : a.momentum != 0.0f ? 1 : 0;
  // this block's parameters: W1's columns [col0, col0 + cols), W2/b2 entries [own2Begin, own2End), b1 units
  const int own2Begin = min(KH + K, rank * l.per2), own2Count = min(KH + K, own2Begin + l.per2) - own2Begin;
  const int b1Begin = min(H, rank * l.perB1), b1Count = min(H, b1Begin + l.perB1) - b1Begin;
  const Owned w1 = ownedAt(smem, l.w1, slots), own2 = ownedAt(smem, l.own2, slots), ownB1 = ownedAt(smem, l.ownB1, slots);
  auto own2Index = [&](int j) {
    const int e = own2Begin + j;
    return e < KH ? a.w2 + size_t(e) : a.b2 + size_t(e - KH);
  };
  auto b1Index = [&](int j) { return a.b1 + size_t(b1Begin + j); };

  // the run state: read by every block before its first barrier; block 0's thread 0 books every step into its
  // copy and writes it back at the end
  StepState booked = *a.state;
  const long long globalStep0 = booked.globalStep, epochStep0 = booked.epochStep;
  bool diverged = booked.diverged != 0;

  for (size_t e = tid; e < l.floats; e += kThreads) smem[e] = 0.0f;  // the paddings stay zero
  if (tid == 0) anyApplied = 0;
  __syncthreads();
  auto w1Place = [&](int e) {  // W1's columns, coalesced along them
    const int u = e / cols, i = e - u * cols;
    return OwnedPlace{i * l.w1s + u, a.w1 + size_t(u) * size_t(I) + col0 + i};
  };
  loadOwnedAt(a, w1, slots, H * cols, w1Place);
  loadOwned(a, own2, slots, own2Count, own2Index);
  loadOwned(a, ownB1, slots, b1Count, b1Index);
  onesColumn(l, smem, N, cols);
  auto orderOf = [&](int s) { return a.order + size_t(epochStep0 + s) * size_t(a.batch); };
  const uint32_t* order0 = orderOf(0);
  for (int n = tid; n < N; n += kThreads) rowBuf(0)[n] = order0[n];
  __syncthreads();
  stageBatchAsync(a, l, xBuf(0), labelBuf(0), rowBuf(0), N, col0, cols);
  tc::cpAsyncCommit();
#if defined(NNSTUDIO_MLP_STEP_PHASES)
  long long marks[16] = {};
#endif

  for (int s = 0; s < steps; ++s) {
    const int cur = s & 1, nxt = cur ^ 1;
    const bool more = s + 1 < steps;
    float* xN = xBuf(cur);
    MLP_STEP_MARK(0);
    tc::cpAsyncWait<0>();
    __syncthreads();  // this step's batch has landed; the next step's rows start coming
    MLP_STEP_MARK(1);
    if (more) stageRowsAsync(orderOf(s + 1), rowBuf(nxt), N);
    tc::cpAsyncCommit();
    // ---- forward partials over this block's columns ----
    forwardPartials<SPLIT>(l, xN, w1t, part, N);
    tc::cpAsyncWait<0>();
    __syncthreads();
    MLP_STEP_MARK(2);
    cluster.sync();  // (1) every block's partials, and its owned parameters of the last step
    MLP_STEP_MARK(3);
    // the next step's batch: issued by the warps the rows' loss leaves idle (there the copies slow no exchange),
    // else now
    const bool idleWarps = R < kWarps;
    if (more && !idleWarps) stageBatchAsync(a, l, xBuf(nxt), labelBuf(nxt), rowBuf(nxt), N, col0, cols);

    // ---- this block's rows: h, logits, loss, dz, dh; its partial dW2 and db2 ----
    pullW2(cluster, l, smem, own2.slot[0], H, KH, K);
    for (int e = tid; e < R * H; e += kThreads) {  // h: the partials summed in rank order, b1 from its owner
      const int r = e / H, u = e - r * H, owner = u / l.perB1;
      const float b = *cluster.map_shared_rank(ownB1.slot[0] + (u - owner * l.perB1), owner);
      const float sum = clusterSum(cluster, part + (row0 + r) * l.ps + u, C);
      hRows[r * HP + u] = activate(sum + b, a.act, a.alpha);
    }
    __syncthreads();
    MLP_STEP_MARK(4);
    blockLogits(l, smem, smem + l.zRows, R, H, K);
    __syncthreads();
    MLP_STEP_MARK(5);
    for (int r = warp; r < R; r += kWarps)
      rowLoss(a, smem + l.zRows + r * KP, RowOut{dz + r * KP, rowLosses + r, rowRight + r}, labelBuf(cur)[row0 + r], N);
    if (more && idleWarps)
      stageBatchAsync(a, l, xBuf(nxt), labelBuf(nxt), rowBuf(nxt), N, col0, cols, 32 * R, kThreads - 32 * R);
    tc::cpAsyncCommit();
    __syncthreads();
    MLP_STEP_MARK(6);
    blockHiddenGradient(a, l, smem, R);
    blockLossPart(rowLosses, rowRight, R, lossPart);
    for (int e = tid; e < KH + K; e += kThreads) {
      float sum = 0.0f;
      if (e < KH) {
        const int k = e / H, u = e - k * H;
        for (int r = 0; r < R; ++r) sum = fmaf(dz[r * KP + k], hRows[r * HP + u], sum);
      } else {
        for (int r = 0; r < R; ++r) sum += dz[r * KP + e - KH];
      }
      dW2[e] = sum;
    }
    __syncthreads();
    MLP_STEP_MARK(7);
    cluster.sync();  // (2) every block's rows
    MLP_STEP_MARK(8);

    // ---- the step's loss: warp 0 sums the blocks' partials (the same tree in every block); block 0 books it ----
    if (tid < 32) {
      const bool skip = bookStepLoss(cluster, lossPart, C, rank, N, booked, diverged);
      if (tid == 0) skipStep = skip ? 1 : 0;
    }
    // every row's dh (over the partials: every block read them before the second barrier)
    float* dhAll = part;
    const int K8 = (N + 7) / 8 * 8;  // the weight gradient's reduction over rows, in steps of 8: zero rows past N
    for (int e = tid; e < (K8 - N) * l.ps; e += kThreads) dhAll[N * l.ps + e] = 0.0f;
    const int HQ = HP / 4;
    constexpr int kBatch = 4;  // remote loads in flight per thread
    for (int base = tid; base < N * HQ; base += kBatch * kThreads) {
      float4 v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int e = base + u * kThreads, n = e / HQ, q = e - n * HQ, owner = n / l.rowsPer;
        if (e < N * HQ)
          v[u] = *reinterpret_cast<const float4*>(
              cluster.map_shared_rank(dhRows + (n - owner * l.rowsPer) * HP + 4 * q, owner));
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int e = base + u * kThreads, n = e / HQ, q = e - n * HQ;
        if (e < N * HQ) *reinterpret_cast<float4*>(dhAll + n * l.ps + 4 * q) = v[u];
      }
    }
    __syncthreads();
    MLP_STEP_MARK(9);
    diverged = skipStep != 0;
    if (!diverged) {
      if (tid == 0) anyApplied = 1;
      const StepRule rule = stepRule(a, booked.baseLr, globalStep0 + s);
      // W2 and b2: this block's entries, summed over the blocks in rank order
      for (int j = tid; j < own2Count; j += kThreads) {
        const int e = own2Begin + j;
        updateOwned(a, own2, j, own2Index(j), clusterSum(cluster, dW2 + e, C), rule, e < KH);
      }
      MLP_STEP_MARK(10);
      // W1's columns' gradient dW1^T = dh^T . x on the tensor cores, into the backup slot (the update reads it
      // there before it writes the backup); the ones column's is b1's
      float* grad = w1.slot[1];
      const int TM = HP / 32, TN = (l.IcP + 31) / 32, g = lane / 4, t4 = lane % 4;
      for (int tile = warp; tile < TM * TN; tile += kWarps) {
        const int m0 = (tile % TM) * 32, n0 = (tile / TM) * 32;
        if (n0 > cols) continue;
        float acc[2][4][4];
        tc::clearWarpTile(acc);
        for (int k8 = 0; k8 < K8; k8 += 8)
          tc::mmaWarpTileTf32<SPLIT>(acc, k8, g, t4, [&](int r, int k) { return dhAll[k * l.ps + m0 + r]; },
                                 [&](int k, int c) { return xN[k * l.xs + n0 + c]; });
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const int u = m0 + 16 * mt + g + (c >= 2 ? 8 : 0), i = n0 + 8 * nt + 2 * t4 + (c & 1);
              if (i <= cols) grad[i * l.w1s + u] = acc[mt][nt][c];
            }
      }
      __syncthreads();
      MLP_STEP_MARK(11);
      // W1's columns: a warp a column, a lane 4 units (no index division); plain SGD as one FMA an entry
      const bool plainSgdRule = !a.adam && a.momentum == 0.0f && a.decay.rate == 0.0f;
      for (int i = warp; i < cols; i += kWarps)
        for (int u0 = 4 * lane; u0 < HP; u0 += 128) {
          const int j = i * l.w1s + u0;
          const float4 g4 = *reinterpret_cast<const float4*>(grad + j);
          if (plainSgdRule) {
            updateW1QuadSgd(w1, j, g4, rule.lr);
          } else {
            const float gq[4] = {g4.x, g4.y, g4.z, g4.w};
            updateW1Quad(a, w1, j, a.w1 + size_t(u0) * size_t(I) + col0 + i, H - u0, gq, rule);
          }
        }
      for (int j = tid; j < b1Count; j += kThreads)  // b1: the units this block owns
        updateOwned(a, ownB1, j, b1Index(j), grad[cols * l.w1s + b1Begin + j], rule, false);
    }
    __syncthreads();
    MLP_STEP_MARK(12);
#if defined(NNSTUDIO_MLP_STEP_PHASES)
    if (rank == 0 && tid == 0 && globalStep0 + s == 300) {
      printf("mlpphases step %lld C %d N %d SPLIT %d:", globalStep0 + s, C, N, SPLIT);
      for (int m = 1; m <= 12; ++m) printf(" %lld", marks[m] - marks[m - 1]);
      printf(" total %lld\n", marks[12] - marks[0]);
    }
#endif
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
  // ---- write back: the owned parameters (when a step applied), and block 0's booking ----
  if (anyApplied) {
    storeOwnedAt(a, w1, slots, H * cols, w1Place);
    storeOwned(a, own2, slots, own2Count, own2Index);
    storeOwned(a, ownB1, slots, b1Count, b1Index);
  }
  if (rank == 0 && tid == 0) *a.state = booked;
}
#else
template <int SPLIT>
__global__ void mlpStepKernel(MlpStepArgs, MlpStepLayout, int, int) { __trap(); }  // sm_90+ only
#endif

using KernelFn = void (*)(MlpStepArgs, MlpStepLayout, int, int);
// the products in 3xTF32 (FP32 accuracy) or, for a TF32 or mixed run, 1xTF32 (its K slices are padded to 8
// columns, not the 16 of a BF16 step: docs/PRECISION.md)
KernelFn kernelFor(Precision precision) { return precision == Precision::Fp32 ? mlpStepKernel<3> : mlpStepKernel<1>; }

}  // namespace

int mlp_step_blocks(const MlpStepShape& shape) {
  const size_t optin = mlp::optInSharedMemory(kernelFor(Precision::Fp32), kernelFor(Precision::Tf32));
  if (optin == 0) return 0;
  for (int blocks = kMlpStepMaxBlocks; blocks >= 2; blocks /= 2) {
    const MlpStepLayout l = mlpStepLayout(shape, blocks);
    if (l.bytes() <= optin && clusterFits(kernelFor(Precision::Fp32), kThreads, l.bytes(), blocks)) return blocks;
  }
  return 0;
}

void mlp_step_fused(cudaStream_t stream, const MlpStepArgs& args, const MlpStepLayout& layout, int rows, int steps) {
  if (rows < 1 || steps < 1) return;
  if (rows > layout.rowsPer * layout.blocks || layout.blocks < 2)  // every row needs an owning block
    throw EngineError("fused MLP step: " + std::to_string(rows) + " rows for a layout of " +
                      std::to_string(layout.rowsPer * layout.blocks) + " (internal error)");
  launchClusterKernel("mlpStepKernel", kernelFor(args.precision), dim3(unsigned(layout.blocks)), kThreads,
                      layout.bytes(), stream, layout.blocks, args, layout, rows, steps);
  checkLaunch("fused MLP step");
}

}  // namespace nnstudio::cuda
