// Blocked single-precision GEMM for the CPU backend, after the Goto/BLIS layout: pack A into MR-row
// panels and B into NR-column panels, then a register-blocked MR x NR micro-kernel written as plain
// loops that the compiler vectorises (-O3 -march=native). Operands take any row/column strides, so a
// transposed operand costs nothing extra; when both are contiguous along K (A . B^T of row-major
// matrices, as a weight gradient) the product runs as blocked dot products without packing.
#pragma once

#include <cstdint>

#include "cpu/thread_pool.h"

namespace nnstudio::cpu {

// C (M, N) = alpha * A (M, K) . B (K, N) + beta * C. Element (i, j) of X lives at X[i*rsX + j*csX].
// beta == 0 never reads C (so NaN garbage in C is overwritten). Single-threaded.
void gemm(int M, int N, int K, float alpha,
          const float* A, int64_t rsA, int64_t csA,
          const float* B, int64_t rsB, int64_t csB,
          float beta, float* C, int64_t rsC, int64_t csC);

// ---- B as rows (or columns) at arbitrary offsets of one buffer ----
// B (K, N) with row k at base + rowOffsets[k] (contiguous along N): a stride-1 convolution reads its
// input this way, one shifted view of the image per kernel tap, without an im2col copy.
void gemmRowsB(int M, int N, int K, float alpha, const float* A, int64_t rsA, int64_t csA, const float* base,
               const int64_t* rowOffsets, float beta, float* C, int64_t rsC, int64_t csC);
// C (M, N) = alpha * A (M, K) . B (K, N) + beta * C with A's rows contiguous (rsA apart) and column j of
// B at base + columnOffsets[j] (contiguous along K): blocked dot products (a conv weight gradient).
void gemmDotColumns(int M, int N, int K, float alpha, const float* A, int64_t rsA, const float* base,
                    const int64_t* columnOffsets, float beta, float* C, int64_t rsC, int64_t csC);

// Row-major convenience with BLAS-like transposes: op(A) is (M, K), op(B) is (K, N).
inline void gemmRowMajor(bool transA, bool transB, int M, int N, int K, float alpha,
                         const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  gemm(M, N, K, alpha, A, transA ? 1 : lda, transA ? lda : 1, B, transB ? 1 : ldb, transB ? ldb : 1,
       beta, C, ldc, 1);
}

// The same, split over the pool's threads by blocks of C (rows or columns, whichever is larger).
void gemmParallel(ThreadPool& pool, bool transA, bool transB, int M, int N, int K, float alpha,
                  const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc);

}  // namespace nnstudio::cpu
