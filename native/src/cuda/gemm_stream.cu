// A few-unit layer over a long input, its two passes that read that input (kernel_choice.h, chooseGemmStream):
//   narrow   C (M, N <= 16) = A (M, K) . B^T, B stored (N, K): the forward of seed001_256's head (1000 x 43 264
//            -> 10). The tiled kernels' 16x16 tile ran it at 1.3 TB/s, bound by shared-memory reads (4 float4
//            loads for 16 FMAs). Here a lane owns a row of A (or two) and keeps all N sums in registers: a stage
//            of A (cp.async) is read once, conflict-free, and B's rows are warp-wide broadcasts.
//   fewrows  C (M <= 16, N) = A^T . B, A stored (K, M), B (K, N), + the row sums of A^T: the weight gradient
//            (and bias gradient) of that head. A thread owns 4 columns of B and keeps all M sums in registers;
//            B streams straight from global memory (8 rows in flight), A's rows are broadcasts from shared memory.
// Both split the summed length over the blocks of a cluster and reduce it as gemm.cu's split-K does: each block
// parks its partial tile in shared memory and, after a cluster barrier, block r sums slice r over ranks 0..S-1
// in that fixed order. Within a block every sum runs in a fixed order too, so the bits are the same every run.
#include <cooperative_groups.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda/check.h"
#include "cuda/device_caps.h"
#include "cuda/gemm_common.cuh"
#include "cuda/gemm_stream.h"
#include "cuda/launch.cuh"

namespace nnstudio::cuda::detail {

namespace {

using namespace gemm_parts;

// ---- narrow: C (M, N <= 16) = A . B^T ----

constexpr int kNarrowWarps = 4, kNarrowThreads = 32 * kNarrowWarps;

// RPL rows of A a lane (rows lane, lane + 32, ...): 1 with 64 of K a stage in 3 stages, or 2 with 32 of K in 4
// (B's broadcasts then serve two rows; both stay under 48 KB of static shared memory)
template <int RPL>
struct NarrowShape {
  static constexpr int rows = kGemmNarrowLaneRows * RPL, BK = 64 / RPL, stages = RPL == 1 ? 3 : 4;
  static constexpr int warpK = BK / kNarrowWarps;  // a warp's K of each stage
  static constexpr int LD = BK + 4;  // rows 4 banks apart: a quarter-warp's float4 reads of 8 rows are conflict-free
};

// NP: N rounded up to 4, 8, 12 or 16 (B's rows past N are zero-filled, their sums never stored)
template <int NP, int RPL>
__global__ void __launch_bounds__(kNarrowThreads)
    gemmNarrowKernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* C,
                     Epilogue epi, int splits, unsigned flags) {
  startAfterPreviousKernel();
  using S = NarrowShape<RPL>;
  constexpr int ROWS = S::rows, BK = S::BK, STAGES = S::stages, LD = S::LD;
  constexpr int A_STAGE = ROWS * LD, B_STAGE = NP * LD;
  constexpr int PIPE = STAGES * (A_STAGE + B_STAGE);
  constexpr int RED = (kNarrowWarps + 1) * NP * ROWS;  // the warps' sums, then the block's
  __shared__ __align__(16) float smem[PIPE > RED ? PIPE : RED];
  float* const As = smem;
  float* const Bs = smem + STAGES * A_STAGE;

  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int split = int(blockIdx.x) % splits, m0 = (int(blockIdx.x) / splits) * ROWS;
  const int KT = (K + BK - 1) / BK;
  const int kt0 = int(int64_t(KT) * split / splits), nk = int(int64_t(KT) * (split + 1) / splits) - kt0;
  const bool vecA = flags & kVecA, vecB = flags & kVecB;

  auto loadStage = [&](int stage, int kt) {
    const int k0 = kt * BK;
    loadTile<ROWS, BK, kNarrowThreads>(As + stage * A_STAGE, A, K, m0, k0, M, K, vecA, tid);
    loadTile<NP, BK, kNarrowThreads>(Bs + stage * B_STAGE, B, K, 0, k0, N, K, vecB, tid);
  };

  float acc[RPL][NP];
#pragma unroll
  for (int r = 0; r < RPL; ++r)
#pragma unroll
    for (int n = 0; n < NP; ++n) acc[r][n] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) loadStage(s, kt0 + s);
    tc::cpAsyncCommit();
  }
  for (int t = 0; t < nk; ++t) {
    tc::cpAsyncWait<STAGES - 2>();
    __syncthreads();
    if (t + STAGES - 1 < nk) loadStage((t + STAGES - 1) % STAGES, kt0 + t + STAGES - 1);
    tc::cpAsyncCommit();
    const float* as = As + (t % STAGES) * A_STAGE + lane * LD + warp * S::warpK;
    const float* bs = Bs + (t % STAGES) * B_STAGE + warp * S::warpK;
#pragma unroll
    for (int kk = 0; kk < S::warpK; kk += 4) {
      float4 a[RPL];
#pragma unroll
      for (int r = 0; r < RPL; ++r) a[r] = *reinterpret_cast<const float4*>(as + r * 32 * LD + kk);
#pragma unroll
      for (int n = 0; n < NP; ++n) {
        const float4 b = *reinterpret_cast<const float4*>(bs + n * LD + kk);  // a broadcast
#pragma unroll
        for (int r = 0; r < RPL; ++r) {
          acc[r][n] = fmaf(a[r].x, b.x, acc[r][n]);
          acc[r][n] = fmaf(a[r].y, b.y, acc[r][n]);
          acc[r][n] = fmaf(a[r].z, b.z, acc[r][n]);
          acc[r][n] = fmaf(a[r].w, b.w, acc[r][n]);
        }
      }
    }
  }
  tc::cpAsyncWait<0>();
  __syncthreads();  // the pipeline's shared memory becomes the reduction buffer

  // the warps' sums of each (row, n), warp 0 first; part[n][row] is the block's
  float* const red = smem;
  float* const part = smem + kNarrowWarps * NP * ROWS;
#pragma unroll
  for (int r = 0; r < RPL; ++r)
#pragma unroll
    for (int n = 0; n < NP; ++n) red[(warp * NP + n) * ROWS + r * 32 + lane] = acc[r][n];
  __syncthreads();
  for (int e = tid; e < NP * ROWS; e += kNarrowThreads) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kNarrowWarps; ++w) sum += red[w * NP * ROWS + e];
    part[e] = sum;
  }
  __syncthreads();

  auto store = [&](int e, float sum) {
    const int n = e / ROWS, m = m0 + e % ROWS;
    if (m < M && n < N) C[int64_t(m) * N + n] = finish(sum, m, n, N, epi);
  };
  if (splits == 1) {
    for (int e = tid; e < NP * ROWS; e += kNarrowThreads) store(e, part[e]);
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int rank = int(cluster.block_rank()), total = NP * ROWS;
  const int per = (total + splits - 1) / splits, e0 = rank * per, e1 = min(total, e0 + per);
  for (int e = e0 + tid; e < e1; e += kNarrowThreads) {
    float sum = 0.0f;
    for (int r = 0; r < splits; ++r) sum += cluster.map_shared_rank(part, r)[e];  // fixed order
    store(e, sum);
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
#else
  __trap();  // never launched: the chooser splits only where clusters exist
#endif
}

// ---- fewrows: C (M <= 16, N) = A^T . B, + the row sums of A^T ----

constexpr int kFewThreads = kGemmFewRowsColumns / 4;  // 4 columns a thread
constexpr int kFewChunk = 64;                         // rows of A staged at a time
constexpr int kFewUnroll = 8;                         // rows of B a thread has in flight

template <bool VEC>
__device__ __forceinline__ float4 loadColumns(const float* row, int n0, int N) {
  if (VEC) return __ldg(reinterpret_cast<const float4*>(row + n0));
  float4 x;
  x.x = n0 < N ? __ldg(row + n0) : 0.0f;
  x.y = n0 + 1 < N ? __ldg(row + n0 + 1) : 0.0f;
  x.z = n0 + 2 < N ? __ldg(row + n0 + 2) : 0.0f;
  x.w = n0 + 3 < N ? __ldg(row + n0 + 3) : 0.0f;
  return x;
}

// MP: M rounded up to 4, 8, 12 or 16 (A's columns past M are zero-filled, their sums never stored). VEC: N % 4 == 0
// and B 16-byte aligned.
template <int MP, bool VEC>
__global__ void __launch_bounds__(kFewThreads)
    gemmFewRowsKernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* C,
                      Epilogue epi, int splits) {
  startAfterPreviousKernel();
  constexpr int COLS = kGemmFewRowsColumns;
  constexpr int STAGE = kFewChunk * MP, RED = MP * COLS + MP;  // A's chunk; then the partial tile + row sums
  __shared__ __align__(16) float smem[STAGE > RED ? STAGE : RED];
  const int tid = int(threadIdx.x);
  const int split = int(blockIdx.x) % splits, tile = int(blockIdx.x) / splits;
  const int c0 = tile * COLS, n0 = c0 + tid * 4;
  const int k0 = int(int64_t(K) * split / splits), k1 = int(int64_t(K) * (split + 1) / splits);
  const bool rowSums = epi.rowSum && tile == 0;

  float acc[MP][4];
#pragma unroll
  for (int m = 0; m < MP; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.0f;
  float rs = 0.0f;  // thread m < MP: the row sum of A^T's row m over this split

  auto accumulate = [&](const float* a, const float4& x) {
#pragma unroll
    for (int m = 0; m < MP; m += 4) {
      const float4 am = *reinterpret_cast<const float4*>(a + m);  // a broadcast
      const float av[4] = {am.x, am.y, am.z, am.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        acc[m + i][0] = fmaf(av[i], x.x, acc[m + i][0]);
        acc[m + i][1] = fmaf(av[i], x.y, acc[m + i][1]);
        acc[m + i][2] = fmaf(av[i], x.z, acc[m + i][2]);
        acc[m + i][3] = fmaf(av[i], x.w, acc[m + i][3]);
      }
    }
  };

  for (int kc = k0; kc < k1; kc += kFewChunk) {
    const int rows = min(kFewChunk, k1 - kc);
    __syncthreads();  // everyone is done with the previous chunk
    for (int i = tid; i < rows * MP; i += kFewThreads) {
      const int r = i / MP, m = i % MP;
      smem[i] = m < M ? A[int64_t(kc + r) * M + m] : 0.0f;
    }
    __syncthreads();
    if (rowSums && tid < MP)
      for (int r = 0; r < rows; ++r) rs += smem[r * MP + tid];
    if (n0 >= N) continue;
    const float* b = B + int64_t(kc) * N;
    int r = 0;
    for (; r + kFewUnroll <= rows; r += kFewUnroll) {
      float4 x[kFewUnroll];
#pragma unroll
      for (int u = 0; u < kFewUnroll; ++u) x[u] = loadColumns<VEC>(b + int64_t(r + u) * N, n0, N);
#pragma unroll
      for (int u = 0; u < kFewUnroll; ++u) accumulate(smem + (r + u) * MP, x[u]);
    }
    for (; r < rows; ++r) accumulate(smem + r * MP, loadColumns<VEC>(b + int64_t(r) * N, n0, N));
  }
  __syncthreads();  // A's chunk becomes the partial tile

  auto store = [&](int m, int n, float sum) {
    if (m < M && n < N) C[int64_t(m) * N + n] = finish(sum, m, n, N, epi);
  };
  if (splits == 1) {
#pragma unroll
    for (int m = 0; m < MP; ++m)
      for (int j = 0; j < 4; ++j) store(m, n0 + j, acc[m][j]);
    if (rowSums && tid < M) epi.rowSum[tid] = rs;
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#pragma unroll
  for (int m = 0; m < MP; ++m)
    *reinterpret_cast<float4*>(smem + m * COLS + tid * 4) = make_float4(acc[m][0], acc[m][1], acc[m][2], acc[m][3]);
  if (rowSums && tid < MP) smem[MP * COLS + tid] = rs;
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  const int rank = int(cluster.block_rank()), total = MP * COLS + (rowSums ? MP : 0);
  const int per = (total + splits - 1) / splits, e0 = rank * per, e1 = min(total, e0 + per);
  for (int e = e0 + tid; e < e1; e += kFewThreads) {
    float sum = 0.0f;
    for (int r = 0; r < splits; ++r) sum += cluster.map_shared_rank(smem, r)[e];  // fixed order
    if (e < MP * COLS) store(e / COLS, c0 + e % COLS, sum);
    else if (e - MP * COLS < M) epi.rowSum[e - MP * COLS] = sum;
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
#else
  __trap();  // never launched: the chooser splits only where clusters exist
#endif
}

// ---- launches ----

// `Kernel` over `blocks`, the blocks of each output tile one cluster of `splits`; clusters past the portable 8 are
// allowed once per kernel and device (a template per kernel: each keeps its own flag)
template <auto Kernel, class... Args>
void launchSplit(const char* what, unsigned blocks, int threads, cudaStream_t stream, int splits, Args&&... args) {
  if (splits == 1) {
    launchKernel(what, Kernel, dim3(blocks), dim3(threads), 0, stream, std::forward<Args>(args)...);
    return;
  }
  if (splits > kGemmPortableCluster) {
    static PerDevice<bool> allowed;
    if (!oncePerDevice(allowed, [] { return allowWideClusters(Kernel); }))
      throw EngineError(std::string(what) + ": clusters of " + std::to_string(splits) + " blocks are not allowed");
  }
  launchClusterKernel(what, Kernel, dim3(blocks), dim3(threads), 0, stream, splits, std::forward<Args>(args)...);
}

// calls go(std::integral_constant<int, P>) for P = n rounded up to 4, 8, 12 or 16
template <class Go>
void withPadded(int n, Go&& go) {
  if (n <= 4) go(std::integral_constant<int, 4>());
  else if (n <= 8) go(std::integral_constant<int, 8>());
  else if (n <= 12) go(std::integral_constant<int, 12>());
  else go(std::integral_constant<int, 16>());
}

}  // namespace

void gemmNarrow(cudaStream_t stream, const GemmStreamPlan& p, int M, int N, int K, const float* A, const float* B,
                float* C, const Epilogue& epi, unsigned flags) {
  const unsigned blocks = unsigned(int64_t(p.tiles) * p.splits);
  withPadded(N, [&](auto np) {
    constexpr int NP = decltype(np)::value;
    if (p.rowsPerLane == 2)
      launchSplit<gemmNarrowKernel<NP, 2>>("gemm (narrow, 2 rows a lane)", blocks, kNarrowThreads, stream, p.splits, M,
                                           N, K, A, B, C, epi, p.splits, flags);
    else
      launchSplit<gemmNarrowKernel<NP, 1>>("gemm (narrow)", blocks, kNarrowThreads, stream, p.splits, M, N, K, A, B, C,
                                           epi, p.splits, flags);
  });
}

void gemmFewRows(cudaStream_t stream, const GemmStreamPlan& p, int M, int N, int K, const float* A, const float* B,
                 float* C, const Epilogue& epi, bool vecB) {
  const unsigned blocks = unsigned(int64_t(p.tiles) * p.splits);
  withPadded(M, [&](auto mp) {
    constexpr int MP = decltype(mp)::value;
    if (vecB)
      launchSplit<gemmFewRowsKernel<MP, true>>("gemm (fewrows)", blocks, kFewThreads, stream, p.splits, M, N, K, A, B,
                                               C, epi, p.splits);
    else
      launchSplit<gemmFewRowsKernel<MP, false>>("gemm (fewrows)", blocks, kFewThreads, stream, p.splits, M, N, K, A,
                                                B, C, epi, p.splits);
  });
}

}  // namespace nnstudio::cuda::detail
