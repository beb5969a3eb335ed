// Blocked GEMM (see gemm.h). Loop order as BLIS: jc (NC) -> pc (KC, pack B) -> ic (MC, pack A) ->
// jr (NR) -> ir (MR) -> micro-kernel. Packing pads edge panels with zeros so the kernel has no edges.
// One driver serves gemm (B strided) and gemmRowsB (B rows at offsets); when both operands are
// contiguous along K (gemm with csA == 1 and rsB == 1, gemmDotColumns) blocked dot products skip packing.
#include "cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace nnstudio::cpu {

namespace {

// ---- blocking ----
#if defined(__AVX512F__)
constexpr int MR = 8, NR = 32;   // 8 x 2 zmm = 16 accumulators
#elif defined(__AVX__)
constexpr int MR = 6, NR = 16;   // 6 x 2 ymm = 12 accumulators
#else
constexpr int MR = 4, NR = 8;    // SSE / NEON: 4 x 2 xmm = 8 accumulators
#endif
constexpr int KC = 256;          // B micro-panel (KC x NR) stays in L1/L2 across the ir loop
constexpr int MC = 96;           // A block (MC x KC) in L2
constexpr int NC = 4096;

static_assert(MC % MR == 0, "MC must be a multiple of MR");
static_assert(NC % NR == 0, "NC must be a multiple of NR");

// Scratch for packed panels, one per thread, grown once (no allocation in the steady state).
struct PackBuffers {
  std::vector<float> a, b;
};
thread_local PackBuffers tlsPack;

// ---- packing ----

// A block (mc, kc) into MR-row panels: panel r holds a[(p*MR) + i] = A(r*MR + i, p).
void packA(int mc, int kc, const float* A, int64_t rsA, int64_t csA, float* out) {
  for (int r = 0; r < mc; r += MR) {
    int rows = std::min(MR, mc - r);
    float* panel = out + int64_t(r) * kc;
    if (rows == MR && csA == 1) {
      for (int i = 0; i < MR; ++i) {
        const float* src = A + int64_t(r + i) * rsA;
        for (int p = 0; p < kc; ++p) panel[p * MR + i] = src[p];
      }
    } else {
      for (int p = 0; p < kc; ++p) {
        for (int i = 0; i < rows; ++i) panel[p * MR + i] = A[int64_t(r + i) * rsA + int64_t(p) * csA];
        for (int i = rows; i < MR; ++i) panel[p * MR + i] = 0.0f;
      }
    }
  }
}

// B block (kc, nc) into NR-column panels: panel c holds b[(p*NR) + j] = B(p, c*NR + j).
void packB(int kc, int nc, const float* B, int64_t rsB, int64_t csB, float* out) {
  for (int c = 0; c < nc; c += NR) {
    int cols = std::min(NR, nc - c);
    float* panel = out + int64_t(c) * kc;
    if (csB == 1) {
      for (int p = 0; p < kc; ++p) {
        const float* src = B + int64_t(p) * rsB + c;
        float* dst = panel + p * NR;
        for (int j = 0; j < cols; ++j) dst[j] = src[j];
        for (int j = cols; j < NR; ++j) dst[j] = 0.0f;
      }
    } else {
      for (int j = 0; j < cols; ++j) {
        const float* src = B + int64_t(c + j) * csB;
        for (int p = 0; p < kc; ++p) panel[p * NR + j] = src[int64_t(p) * rsB];
      }
      if (cols < NR)
        for (int p = 0; p < kc; ++p)
          for (int j = cols; j < NR; ++j) panel[p * NR + j] = 0.0f;
    }
  }
}

// ---- micro-kernel ----

// acc (MR, NR) = a-panel (kc, MR)^T . b-panel (kc, NR); the fixed trip counts let the compiler keep
// acc in vector registers and turn the j loop into NR/width FMAs per a-element.
inline void microKernel(int kc, const float* __restrict a, const float* __restrict b, float* __restrict out) {
  float acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = 0.0f;
  for (int p = 0; p < kc; ++p) {
    const float* ap = a + p * MR;
    const float* bp = b + p * NR;
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float ai = ap[i];
#pragma GCC unroll 32
      for (int j = 0; j < NR; ++j) acc[i][j] += ai * bp[j];
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) out[i * NR + j] = acc[i][j];
}

// C tile (m, n) = alpha * acc + beta * C
inline void storeTile(int m, int n, const float* acc, float alpha, float beta, float* C, int64_t rsC, int64_t csC) {
  for (int i = 0; i < m; ++i) {
    float* c = C + int64_t(i) * rsC;
    const float* t = acc + i * NR;
    if (csC == 1) {
      if (beta == 0.0f) for (int j = 0; j < n; ++j) c[j] = alpha * t[j];
      else if (beta == 1.0f) for (int j = 0; j < n; ++j) c[j] += alpha * t[j];
      else for (int j = 0; j < n; ++j) c[j] = alpha * t[j] + beta * c[j];
    } else {
      for (int j = 0; j < n; ++j) {
        float& cij = c[int64_t(j) * csC];
        cij = beta == 0.0f ? alpha * t[j] : alpha * t[j] + beta * cij;
      }
    }
  }
}

// ---- K-contiguous operands: blocked dot products ----

// When A's rows and B's columns are both contiguous along K (C = A . B^T with both row-major, as a conv
// weight gradient dy (F, P) . col^T), each C(i, j) is a dot product over K. A 4 x 4 block of them shares
// its loads (8 loads per 16 FMAs), needs no packing, and 16 independent lanes per dot keep it
// vectorised without reassociating float sums.
template <class ColumnOfB>
void gemmDot(int M, int N, int K, float alpha, const float* A, int64_t rsA, ColumnOfB&& columnOfB, float beta,
             float* C, int64_t rsC, int64_t csC) {
  constexpr int L = 16, IB = 4, JB = 4;
  for (int i0 = 0; i0 < M; i0 += IB) {
    const int in = std::min(IB, M - i0);
    const float* a[IB];
    for (int ii = 0; ii < IB; ++ii) a[ii] = A + int64_t(i0 + (ii < in ? ii : 0)) * rsA;  // missing rows repeat
    for (int j0 = 0; j0 < N; j0 += JB) {
      const int jn = std::min(JB, N - j0);
      const float* b[JB];
      for (int jj = 0; jj < JB; ++jj) b[jj] = columnOfB(j0 + (jj < jn ? jj : 0));
      const float* __restrict a0 = a[0];
      const float* __restrict a1 = a[1];
      const float* __restrict a2 = a[2];
      const float* __restrict a3 = a[3];
      const float* __restrict b0 = b[0];
      const float* __restrict b1 = b[1];
      const float* __restrict b2 = b[2];
      const float* __restrict b3 = b[3];
      float acc[IB * JB][L] = {};
      int k = 0;
      for (; k + L <= K; k += L) {
        for (int l = 0; l < L; ++l) {
          const float x0 = a0[k + l], x1 = a1[k + l], x2 = a2[k + l], x3 = a3[k + l];
          const float y0 = b0[k + l], y1 = b1[k + l], y2 = b2[k + l], y3 = b3[k + l];
          acc[0][l] += x0 * y0; acc[1][l] += x0 * y1; acc[2][l] += x0 * y2; acc[3][l] += x0 * y3;
          acc[4][l] += x1 * y0; acc[5][l] += x1 * y1; acc[6][l] += x1 * y2; acc[7][l] += x1 * y3;
          acc[8][l] += x2 * y0; acc[9][l] += x2 * y1; acc[10][l] += x2 * y2; acc[11][l] += x2 * y3;
          acc[12][l] += x3 * y0; acc[13][l] += x3 * y1; acc[14][l] += x3 * y2; acc[15][l] += x3 * y3;
        }
      }
      for (int ii = 0; ii < in; ++ii) {
        for (int jj = 0; jj < jn; ++jj) {
          float sum = 0.0f;
          for (int l = 0; l < L; ++l) sum += acc[ii * JB + jj][l];
          for (int kk = k; kk < K; ++kk) sum += a[ii][kk] * b[jj][kk];
          float& c = C[int64_t(i0 + ii) * rsC + int64_t(j0 + jj) * csC];
          c = beta == 0.0f ? alpha * sum : alpha * sum + beta * c;
        }
      }
    }
  }
}

// ---- the blocked driver ----

// C = alpha * A . B + beta * C with B supplied by packBlock(pc, kc, jc, nc, out), which packs
// B(pc.., jc..) into NR-column panels (zero-padded) as packB does.
template <class PackBlock>
void gemmDriver(int M, int N, int K, float alpha, const float* A, int64_t rsA, int64_t csA, PackBlock&& packBlock,
                float beta, float* C, int64_t rsC, int64_t csC) {
  PackBuffers& pack = tlsPack;
  const int kcMax = std::min(K, KC);
  const size_t aNeed = size_t(MC) * kcMax;
  const size_t bNeed = size_t((std::min(N, NC) + NR - 1) / NR * NR) * kcMax;
  if (pack.a.size() < aNeed) pack.a.resize(aNeed);
  if (pack.b.size() < bNeed) pack.b.resize(bNeed);
  alignas(64) float acc[MR * NR];

  for (int jc = 0; jc < N; jc += NC) {
    const int nc = std::min(NC, N - jc);
    for (int pc = 0; pc < K; pc += KC) {
      const int kc = std::min(KC, K - pc);
      const float betaBlock = pc == 0 ? beta : 1.0f;
      packBlock(pc, kc, jc, nc, pack.b.data());
      for (int ic = 0; ic < M; ic += MC) {
        const int mc = std::min(MC, M - ic);
        packA(mc, kc, A + int64_t(ic) * rsA + int64_t(pc) * csA, rsA, csA, pack.a.data());
        for (int jr = 0; jr < nc; jr += NR) {
          const int n = std::min(NR, nc - jr);
          const float* bPanel = pack.b.data() + int64_t(jr) * kc;
          for (int ir = 0; ir < mc; ir += MR) {
            const int m = std::min(MR, mc - ir);
            microKernel(kc, pack.a.data() + int64_t(ir) * kc, bPanel, acc);
            storeTile(m, n, acc, alpha, betaBlock, C + int64_t(ic + ir) * rsC + int64_t(jc + jr) * csC, rsC, csC);
          }
        }
      }
    }
  }
}

void scaleC(int M, int N, float beta, float* C, int64_t rsC, int64_t csC) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float& c = C[int64_t(i) * rsC + int64_t(j) * csC];
      c = beta == 0.0f ? 0.0f : beta * c;
    }
}

}  // namespace

void gemm(int M, int N, int K, float alpha, const float* A, int64_t rsA, int64_t csA, const float* B, int64_t rsB,
          int64_t csB, float beta, float* C, int64_t rsC, int64_t csC) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scaleC(M, N, beta, C, rsC, csC);
  // keep C's unit stride along the kernel's NR axis: for a column-major C compute C^T = B^T . A^T
  if (csC != 1 && rsC == 1) {
    gemm(N, M, K, alpha, B, csB, rsB, A, csA, rsA, beta, C, csC, rsC);
    return;
  }
  if (csA == 1 && rsB == 1 && K >= 64 && K >= 2 * std::min(M, N)) {
    gemmDot(M, N, K, alpha, A, rsA, [&](int j) { return B + int64_t(j) * csB; }, beta, C, rsC, csC);
    return;
  }
  gemmDriver(M, N, K, alpha, A, rsA, csA,
             [&](int pc, int kc, int jc, int nc, float* out) {
               packB(kc, nc, B + int64_t(pc) * rsB + int64_t(jc) * csB, rsB, csB, out);
             },
             beta, C, rsC, csC);
}

void gemmRowsB(int M, int N, int K, float alpha, const float* A, int64_t rsA, int64_t csA, const float* base,
               const int64_t* rowOffsets, float beta, float* C, int64_t rsC, int64_t csC) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scaleC(M, N, beta, C, rsC, csC);
  gemmDriver(M, N, K, alpha, A, rsA, csA,
             [&](int pc, int kc, int jc, int nc, float* out) {
               // panel c: out[(c*kc + p)*NR + j] = base[rowOffsets[pc + p] + jc + c*NR + j], contiguous runs of NR
               for (int c = 0; c < nc; c += NR) {
                 const int cols = std::min(NR, nc - c);
                 float* panel = out + int64_t(c) * kc;
                 for (int p = 0; p < kc; ++p) {
                   const float* __restrict src = base + rowOffsets[pc + p] + jc + c;
                   float* __restrict dst = panel + p * NR;
                   if (cols == NR) {
                     for (int j = 0; j < NR; ++j) dst[j] = src[j];
                   } else {
                     for (int j = 0; j < cols; ++j) dst[j] = src[j];
                     for (int j = cols; j < NR; ++j) dst[j] = 0.0f;
                   }
                 }
               }
             },
             beta, C, rsC, csC);
}

void gemmDotColumns(int M, int N, int K, float alpha, const float* A, int64_t rsA, const float* base,
                    const int64_t* columnOffsets, float beta, float* C, int64_t rsC, int64_t csC) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scaleC(M, N, beta, C, rsC, csC);
  gemmDot(M, N, K, alpha, A, rsA, [&](int j) { return base + columnOffsets[j]; }, beta, C, rsC, csC);
}

void gemmParallel(ThreadPool& pool, bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
                  const float* B, int ldb, float beta, float* C, int ldc) {
  const int threads = pool.size();
  const int64_t rsA = transA ? 1 : lda, csA = transA ? lda : 1;
  const int64_t rsB = transB ? 1 : ldb, csB = transB ? ldb : 1;
  // too small to pay for a parallel region
  if (threads == 1 || int64_t(M) * N * K < 32 * 1024) {
    gemm(M, N, K, alpha, A, rsA, csA, B, rsB, csB, beta, C, ldc, 1);
    return;
  }
  // split columns in multiples of NR when there are enough, else rows in multiples of MR
  if (N >= M || M < MR * threads) {
    const int panels = (N + NR - 1) / NR;
    pool.parallelFor(panels, [&](int64_t p0, int64_t p1, int, int) {
      int j0 = int(p0) * NR, j1 = std::min(N, int(p1) * NR);
      gemm(M, j1 - j0, K, alpha, A, rsA, csA, B + int64_t(j0) * csB, rsB, csB, beta, C + j0, ldc, 1);
    });
  } else {
    const int panels = (M + MR - 1) / MR;
    pool.parallelFor(panels, [&](int64_t p0, int64_t p1, int, int) {
      int i0 = int(p0) * MR, i1 = std::min(M, int(p1) * MR);
      gemm(i1 - i0, N, K, alpha, A + int64_t(i0) * rsA, rsA, csA, B, rsB, csB, beta, C + int64_t(i0) * ldc, ldc, 1);
    });
  }
}

}  // namespace nnstudio::cpu
