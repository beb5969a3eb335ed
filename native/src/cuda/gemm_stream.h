// gemm_stream.cu's launches, which gemm() calls where the chooser's plan is a streaming one (kernel_choice.h,
// chooseGemmStream). CUDA-only: the epilogue is gemm_common.cuh's.
#pragma once

#include <cuda_runtime.h>

#include "cuda/gemm_common.cuh"
#include "cuda/kernel_choice.h"

namespace nnstudio::cuda::detail {

// C (M, N <= 16) = A (M, K) . B^T with B stored (N, K); `flags`: gemm_parts::kVecA / kVecB
void gemmNarrow(cudaStream_t stream, const GemmStreamPlan& plan, int M, int N, int K, const float* A, const float* B,
                float* C, const gemm_parts::Epilogue& epi, unsigned flags);
// C (M <= 16, N) = A^T . B with A stored (K, M), B (K, N); epi.rowSum, when set, receives A^T's row sums.
// vecB: N % 4 == 0 and B 16-byte aligned
void gemmFewRows(cudaStream_t stream, const GemmStreamPlan& plan, int M, int N, int K, const float* A, const float* B,
                 float* C, const gemm_parts::Epilogue& epi, bool vecB);

}  // namespace nnstudio::cuda::detail
