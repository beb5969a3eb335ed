// Row-major SGEMM with a fused epilogue (see kernels.h), FP32 throughout.
//
// One kernel template serves every shape: a BM x BN block tile, BK-deep K steps streamed through a
// STAGES-deep shared-memory ring by cp.async (sm_80+; plain loads on sm_75), each thread a TM x TN
// register micro-tile. Operands keep their memory layout in shared memory: a K-contiguous operand
// (A untransposed, B transposed) is stored [row][k] and read as float4 along k, an M/N-contiguous one
// [k][row] and read as float4 along the row; rows are padded by 4 floats so 16-byte copies stay
// aligned and the [row][k] reads are bank-conflict free (threads of a quarter-warp read 8 distinct
// rows 4 banks apart). Global loads are 16-byte cp.async when the leading dimension is a multiple of
// 4 and the pointer 16-byte aligned, else 4-byte ones; tiles past M, N or K are zero-filled, so any
// M, N, K (K = 0 too) works and nothing outside C is ever written.
//
// Four tiles, 64x64 (256 threads), 32x32, 16x64 and 16x16 with BK 64; the chooser (kernel_choice.h,
// chooseGemm) picks one by shape and, when even the smallest leaves the GPU idle, splits the K range over
// 2..8 blocks, 16 where the GPU co-schedules clusters that large (split-K). The
// partial tiles are reduced WITHOUT a workspace and without atomics: the blocks of one
// output tile form a thread-block cluster (sm_90+), each parks its partial tile in its own shared
// memory, and after a cluster barrier block r sums slice r of the tile over ranks 0..S-1 in that fixed
// order through distributed shared memory, applies the epilogue and stores it. So split-K costs no
// second launch, needs no scratch memory (gemm() has no workspace parameter), and the result is the
// same every run (the plan depends only on the shape and the device). Devices without clusters (before
// sm_90) run unsplit.
//
// Dense's weight gradient also needs the bias gradient, the row sums of op(A) = dOut^T: the ROWSUM
// variant accumulates them from the A fragments it already holds in the blocks of the first column
// tile (reduced across a split like the tile), so dBias costs no extra launch (gemmWithRowSums).
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/cluster_probes.h"
#include "cuda/gemm_common.cuh"
#include "cuda/gemm_detail.h"
#include "cuda/gemm_stream.h"
#include "cuda/kernel_choice.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/tc_mma.cuh"

namespace nnstudio::cuda {

namespace {

using namespace gemm_parts;

// T consecutive floats of shared memory (16/8-byte aligned for T = 4/2) into v[0..T)
template <int T>
__device__ __forceinline__ void loadRun(float (&v)[T], const float* p) {
  if constexpr (T == 4) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
  } else if constexpr (T == 2) {
    const float2 x = *reinterpret_cast<const float2*>(p);
    v[0] = x.x; v[1] = x.y;
  } else {
#pragma unroll
    for (int i = 0; i < T; ++i) v[i] = p[i];
  }
}

template <int BM, int BN, int BK, int TM, int TN, int STAGES, bool TA, bool TB, bool ROWSUM>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), (BM / TM) * (BN / TN) >= 256 ? 2 : 8)
    gemmKernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* C, Epilogue epi,
               int splits, int tilesN, unsigned flags) {
  startAfterPreviousKernel();
  constexpr int TX = BN / TN, TY = BM / TM, THREADS = TX * TY;
  static_assert(BK % 4 == 0 && BM % TM == 0 && BN % TN == 0, "tile shape");
  // shared-memory tiles: A is [m][k] (!TA) or [k][m] (TA); B is [n][k] (TB) or [k][n] (!TB)
  constexpr int A_LD = (TA ? BM : BK) + 4, A_STAGE = (TA ? BK : BM) * A_LD;
  constexpr int B_LD = (TB ? BK : BN) + 4, B_STAGE = (TB ? BN : BK) * B_LD;
  constexpr int PIPE = STAGES * (A_STAGE + B_STAGE);
  constexpr int RED = BM * BN + BM;  // split-K: the partial tile and the partial row sums
  __shared__ __align__(16) float smem[PIPE > RED ? PIPE : RED];
  float* const As = smem;
  float* const Bs = smem + STAGES * A_STAGE;

  const int tid = int(threadIdx.x), tx = tid % TX, ty = tid / TX;
  const int split = int(blockIdx.x) % splits, tile = int(blockIdx.x) / splits;
  const int m0 = (tile / tilesN) * BM, n0 = (tile % tilesN) * BN;
  const int KT = (K + BK - 1) / BK;
  const int kt0 = int(int64_t(KT) * split / splits), nk = int(int64_t(KT) * (split + 1) / splits) - kt0;
  const bool vecA = flags & kVecA, vecB = flags & kVecB;
  const bool doRowSum = ROWSUM && n0 == 0;

  // a thread's rows / columns: consecutive where its fragment is read along them ([k][row] tiles),
  // strided by TY / TX where it is read along k ([row][k] tiles)
  auto rowOf = [&](int i) { return TA ? ty * TM + i : ty + i * TY; };
  auto colOf = [&](int j) { return TB ? tx + j * TX : tx * TN + j; };

  auto loadStage = [&](int stage, int kt) {
    const int k0 = kt * BK;
    if constexpr (!TA) loadTile<BM, BK, THREADS>(As + stage * A_STAGE, A, K, m0, k0, M, K, vecA, tid);
    else loadTile<BK, BM, THREADS>(As + stage * A_STAGE, A, M, k0, m0, K, M, vecA, tid);
    if constexpr (TB) loadTile<BN, BK, THREADS>(Bs + stage * B_STAGE, B, K, n0, k0, N, K, vecB, tid);
    else loadTile<BK, BN, THREADS>(Bs + stage * B_STAGE, B, N, k0, n0, K, N, vecB, tid);
  };

  float acc[TM][TN];
  float rs[TM];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    rs[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) loadStage(s, kt0 + s);
    tc::cpAsyncCommit();
  }
  for (int t = 0; t < nk; ++t) {
    tc::cpAsyncWait<STAGES - 2>();  // tile t has landed (this thread's copies) ...
    __syncthreads();                // ... everyone's, and everyone is done with tile t - 1's stage
    if (t + STAGES - 1 < nk) loadStage((t + STAGES - 1) % STAGES, kt0 + t + STAGES - 1);
    tc::cpAsyncCommit();
    const float* as = As + (t % STAGES) * A_STAGE;
    const float* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 4) {
      float a[TM][4], b[TN][4];
      if constexpr (!TA) {
#pragma unroll
        for (int i = 0; i < TM; ++i) loadRun<4>(a[i], as + (ty + i * TY) * A_LD + kk);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          float v[TM];
          loadRun<TM>(v, as + (kk + q) * A_LD + ty * TM);
#pragma unroll
          for (int i = 0; i < TM; ++i) a[i][q] = v[i];
        }
      }
      if constexpr (TB) {
#pragma unroll
        for (int j = 0; j < TN; ++j) loadRun<4>(b[j], bs + (tx + j * TX) * B_LD + kk);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          float v[TN];
          loadRun<TN>(v, bs + (kk + q) * B_LD + tx * TN);
#pragma unroll
          for (int j = 0; j < TN; ++j) b[j][q] = v[j];
        }
      }
#pragma unroll
      for (int q = 0; q < 4; ++q)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i][q], b[j][q], acc[i][j]);
      if constexpr (ROWSUM) {
        if (doRowSum) {
#pragma unroll
          for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int i = 0; i < TM; ++i) rs[i] += a[i][q];
        }
      }
    }
  }
  tc::cpAsyncWait<0>();

  if (splits == 1) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = m0 + rowOf(i);
      if (m >= M) continue;
      float* c = C + int64_t(m) * N;
      if constexpr (!TB && TN == 4) {
        const int n = n0 + tx * TN;
        if ((flags & kVecC) && n + 3 < N) {
          float4 v;
          v.x = finish(acc[i][0], m, n, N, epi);
          v.y = finish(acc[i][1], m, n + 1, N, epi);
          v.z = finish(acc[i][2], m, n + 2, N, epi);
          v.w = finish(acc[i][3], m, n + 3, N, epi);
          *reinterpret_cast<float4*>(c + n) = v;
          if (doRowSum && tx == 0) epi.rowSum[m] = rs[i];
          continue;
        }
      }
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int n = n0 + colOf(j);
        if (n < N) c[n] = finish(acc[i][j], m, n, N, epi);
      }
      if (doRowSum && tx == 0) epi.rowSum[m] = rs[i];
    }
    return;
  }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // split-K: the S blocks of this tile are one cluster (rank == split); see the file comment
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  __syncthreads();  // the pipeline's shared memory becomes the reduction buffer
  float* red = smem;
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) red[rowOf(i) * BN + colOf(j)] = acc[i][j];
  if (doRowSum && tx == 0) {
#pragma unroll
    for (int i = 0; i < TM; ++i) red[BM * BN + rowOf(i)] = rs[i];
  }
  cluster.sync();
  const int rank = int(cluster.block_rank());
  const int total = BM * BN + (doRowSum ? BM : 0);
  const int per = (total + splits - 1) / splits;
  const int e0 = rank * per, e1 = min(total, e0 + per);
  for (int e = e0 + tid; e < e1; e += THREADS) {
    float sum = 0.0f;
    for (int r = 0; r < splits; ++r) sum += cluster.map_shared_rank(red, r)[e];  // fixed order
    if (e < BM * BN) {
      const int m = m0 + e / BN, n = n0 + e % BN;
      if (m < M && n < N) C[int64_t(m) * N + n] = finish(sum, m, n, N, epi);
    } else {
      const int m = m0 + (e - BM * BN);
      if (m < M) epi.rowSum[m] = sum;
    }
  }
  cluster.sync();  // no block leaves while another still reads its shared memory
#else
  __trap();  // never launched: the host splits only where clusters exist
#endif
}

// ---- configurations: the chooser's four tiles (kernel_choice.h, kGemmTiles) ----

template <GemmTile c, bool TA, bool TB, bool RS>
struct KernelOf;
#define NNSTUDIO_GEMM_CFG(CFG, TILE_M, TILE_N, TILE_K, TM, TN, ST)                                        \
  template <bool TA, bool TB, bool RS>                                                                    \
  struct KernelOf<CFG, TA, TB, RS> {                                                                      \
    static_assert(kGemmTiles[int(CFG)].BM == TILE_M && kGemmTiles[int(CFG)].BN == TILE_N &&               \
                      kGemmTiles[int(CFG)].BK == TILE_K,                                                  \
                  "the chooser's tile");                                                                  \
    static constexpr auto fn = gemmKernel<TILE_M, TILE_N, TILE_K, TM, TN, ST, TA, TB, RS>;                \
  };
NNSTUDIO_GEMM_CFG(GemmTile::Large64x64, 64, 64, 16, 4, 4, 3)
NNSTUDIO_GEMM_CFG(GemmTile::Medium32x32, 32, 32, 16, 4, 4, 3)
NNSTUDIO_GEMM_CFG(GemmTile::Wide16x64, 16, 64, 16, 4, 4, 3)
NNSTUDIO_GEMM_CFG(GemmTile::Small16x16, 16, 16, 64, 2, 2, 4)
#undef NNSTUDIO_GEMM_CFG

constexpr int threadsOf(GemmTile c) { return kGemmTiles[int(c)].threads; }

// ---- the device's clusters, probed once per device (DeviceCaps, cluster_probes.h) ----

// the kernels that split K, smallest and largest tile
constexpr auto kSplitSmall = KernelOf<GemmTile::Small16x16, true, false, false>::fn;
constexpr auto kSplitLarge = KernelOf<GemmTile::Large64x64, false, true, false>::fn;

bool clusterCodeAvailable() {
  // the cluster path exists only in code compiled for sm_90+: ask the loaded kernel
  if (!runsSm90Code(KernelOf<GemmTile::Small16x16, false, true, false>::fn)) return false;
  // and the GPU can co-schedule clusters of the portable maximum for the kernels that split
  return clusterFits(kSplitSmall, threadsOf(GemmTile::Small16x16), 0, kGemmPortableCluster) &&
         clusterFits(kSplitLarge, threadsOf(GemmTile::Large64x64), 0, kGemmPortableCluster);
}

// Can clusters of kGemmWideCluster blocks of the split kernels run?
bool wideClustersFit() {
  return allowWideClusters(kSplitSmall) && allowWideClusters(kSplitLarge) &&
         clusterFits(kSplitSmall, threadsOf(GemmTile::Small16x16), 0, kGemmWideCluster) &&
         clusterFits(kSplitLarge, threadsOf(GemmTile::Large64x64), 0, kGemmWideCluster);
}

template <GemmTile c, bool TA, bool TB, bool RS>
void launchCfg(cudaStream_t stream, const GemmPlan& p, int M, int N, int K, const float* A, const float* B, float* C,
               const Epilogue& epi, unsigned flags) {
  auto kernel = KernelOf<c, TA, TB, RS>::fn;
  const dim3 grid(unsigned(int64_t(p.tilesM) * p.tilesN * p.splits)), block(threadsOf(c));
  if (p.splits == 1) {
    launchKernel("gemm", kernel, grid, block, 0, stream, M, N, K, A, B, C, epi, 1, p.tilesN, flags);
    checkLaunch("gemm");
    return;
  }
  if (p.splits > kGemmPortableCluster) {
    static PerDevice<bool> allowed;  // once per kernel and device
    if (!oncePerDevice(allowed, [&] { return allowWideClusters(kernel); }))
      throw EngineError("gemm: clusters of " + std::to_string(p.splits) + " blocks are not allowed");
  }
  launchClusterKernel("gemm (split-K)", kernel, grid, block, 0, stream, p.splits, M, N, K, A, B, C, epi, p.splits,
                      p.tilesN, flags);
}

template <GemmTile c>
void launchModes(cudaStream_t stream, const GemmPlan& p, bool transA, bool transB, bool rowSums, int M, int N, int K,
                 const float* A, const float* B, float* C, const Epilogue& epi, unsigned flags) {
  if (rowSums) launchCfg<c, true, false, true>(stream, p, M, N, K, A, B, C, epi, flags);
  else if (!transA && !transB) launchCfg<c, false, false, false>(stream, p, M, N, K, A, B, C, epi, flags);
  else if (!transA && transB) launchCfg<c, false, true, false>(stream, p, M, N, K, A, B, C, epi, flags);
  else if (transA && !transB) launchCfg<c, true, false, false>(stream, p, M, N, K, A, B, C, epi, flags);
  else launchCfg<c, true, true, false>(stream, p, M, N, K, A, B, C, epi, flags);
}

// C (M, N) = A (M, K) . B (K, N) for K <= kGemmShallowMaxK (chooseGemmShallow): a thread owns 4 columns of C,
// holds their K rows of B in registers and writes them for the block's kGemmShallowRows rows of A (staged in
// shared memory). Each sum runs k = 0, 1, ... from 0, as the tiled kernels' (no K split at this depth). KMAX (4, 8,
// 12 or 16, the least >= K) sizes the registers of B's rows: compiled for 16, a K of 10 took 88 registers a thread
// and two blocks an SM (seed001_256's input gradient, 116 us at 1.5 TB/s on an H200).
constexpr int kShallowThreads = 256;

template <int KMAX, bool VEC>
__global__ void __launch_bounds__(kShallowThreads)
    gemmShallowKernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* C,
                      Epilogue epi) {
  startAfterPreviousKernel();
  __shared__ float a[kGemmShallowRows][KMAX];
  const int n0 = (blockIdx.x * kShallowThreads + threadIdx.x) * 4;
  const int m0 = blockIdx.y * kGemmShallowRows;
  const int rows = min(kGemmShallowRows, M - m0);
  for (int i = threadIdx.x; i < rows * K; i += kShallowThreads) a[i / K][i % K] = A[int64_t(m0) * K + i];
  float b[KMAX][4];
#pragma unroll
  for (int k = 0; k < KMAX; ++k) {
    const float* row = B + int64_t(k) * N + n0;
    if (k >= K || n0 >= N) {
      b[k][0] = b[k][1] = b[k][2] = b[k][3] = 0.0f;
    } else if (VEC) {
      const float4 x = __ldg(reinterpret_cast<const float4*>(row));
      b[k][0] = x.x, b[k][1] = x.y, b[k][2] = x.z, b[k][3] = x.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) b[k][j] = n0 + j < N ? __ldg(row + j) : 0.0f;
    }
  }
  __syncthreads();
  if (n0 >= N) return;
  for (int r = 0; r < rows; ++r) {
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int k = 0; k < KMAX; ++k) {
      if (k >= K) break;
      const float x = a[r][k];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = fmaf(x, b[k][j], v[j]);
    }
    const int64_t m = m0 + r;
    float* out = C + m * N + n0;
    if (VEC) {  // N % 4 == 0: the 4 columns are in C
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = finish(v[j], m, n0 + j, N, epi);
      *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (n0 + j < N) out[j] = finish(v[j], m, n0 + j, N, epi);
    }
  }
}

void launchShallow(cudaStream_t stream, int M, int N, int K, const float* A, const float* B, float* C,
                   const Epilogue& epi, bool vec) {
  const dim3 grid(unsigned((int64_t(N) + 4 * kShallowThreads - 1) / (4 * kShallowThreads)),
                  unsigned((M + kGemmShallowRows - 1) / kGemmShallowRows));
  auto go = [&](auto kernel) {
    launchKernel("gemmShallowKernel", kernel, grid, kShallowThreads, 0, stream, M, N, K, A, B, C, epi);
  };
  static_assert(kGemmShallowMaxK == 16, "the instances below cover K up to 16");
  if (K <= 4) vec ? go(gemmShallowKernel<4, true>) : go(gemmShallowKernel<4, false>);
  else if (K <= 8) vec ? go(gemmShallowKernel<8, true>) : go(gemmShallowKernel<8, false>);
  else if (K <= 12) vec ? go(gemmShallowKernel<12, true>) : go(gemmShallowKernel<12, false>);
  else vec ? go(gemmShallowKernel<16, true>) : go(gemmShallowKernel<16, false>);
  checkLaunch("gemm (shallow K)");
}

void gemmImpl(cudaStream_t stream, bool transA, bool transB, int M, int N, int K, const float* A, const float* B,
              float* C, const GemmEpilogue& e, float* rowSums) {
  if (M <= 0 || (N <= 0 && !rowSums)) return;
  if (N < 0) N = 0;
  if (K < 0) K = 0;
  Epilogue epi;
  epi.bias = e.bias;
  epi.act = elementwise(e.act);
  epi.alpha = e.alpha;
  epi.gateAct = elementwise(e.gateAct);
  epi.gate = epi.gateAct == ActivationFn::Linear ? nullptr : e.gate;  // a Linear gate multiplies by 1
  epi.gateAlpha = e.gateAlpha;
  epi.rowSum = rowSums;
  unsigned flags = 0;
  if ((transA ? M : K) % 4 == 0 && aligned16(A)) flags |= kVecA;
  if ((transB ? K : N) % 4 == 0 && aligned16(B)) flags |= kVecB;
  if (N % 4 == 0 && aligned16(C)) flags |= kVecC;
  // a few-unit layer over a long input: its forward and weight gradient stream that input (gemm_stream.cu)
  const GemmStreamPlan streamed = chooseGemmStream(currentDeviceCaps(), kernelOverrides(), transA, transB, M, N, K);
  if (streamed.kind == GemmStreamKind::Narrow)
    return detail::gemmNarrow(stream, streamed, M, N, K, A, B, C, epi, flags);
  if (streamed.kind == GemmStreamKind::FewRows)
    return detail::gemmFewRows(stream, streamed, M, N, K, A, B, C, epi, (flags & kVecB) != 0);
  if (!rowSums && chooseGemmShallow(kernelOverrides(), transA, transB, M, N, K))
    return launchShallow(stream, M, N, K, A, B, C, epi, (flags & kVecB) && (flags & kVecC));
  const GemmPlan p = chooseGemm(currentDeviceCaps(), kernelOverrides(), M, N, K);
  switch (p.tile) {
    case GemmTile::Large64x64:
      launchModes<GemmTile::Large64x64>(stream, p, transA, transB, rowSums, M, N, K, A, B, C, epi, flags);
      break;
    case GemmTile::Medium32x32:
      launchModes<GemmTile::Medium32x32>(stream, p, transA, transB, rowSums, M, N, K, A, B, C, epi, flags);
      break;
    case GemmTile::Wide16x64:
      launchModes<GemmTile::Wide16x64>(stream, p, transA, transB, rowSums, M, N, K, A, B, C, epi, flags);
      break;
    case GemmTile::Small16x16:
      launchModes<GemmTile::Small16x16>(stream, p, transA, transB, rowSums, M, N, K, A, B, C, epi, flags);
      break;
  }
}

}  // namespace

void gemm(cudaStream_t stream, bool transA, bool transB, int M, int N, int K, const float* A, const float* B, float* C,
          const GemmEpilogue& epilogue) {
  gemmImpl(stream, transA, transB, M, N, K, A, B, C, epilogue, nullptr);
}

namespace detail {

void gemmWithRowSums(cudaStream_t stream, int M, int N, int K, const float* A, const float* B, float* C,
                     float* rowSums) {
  gemmImpl(stream, true, false, M, N, K, A, B, C, GemmEpilogue(), rowSums);
}

}  // namespace detail

int gemmClusterLimit(bool clusterLaunch) {
  if (!clusterLaunch || !clusterCodeAvailable()) return 1;
  return wideClustersFit() ? kGemmWideCluster : kGemmPortableCluster;
}

}  // namespace nnstudio::cuda
