// gemm.cu's entry points beyond kernels.h: dense's fused weight + bias gradient, and the tile plan a
// shape gets (for the tests' and benchmarks' labels).
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace nnstudio::cuda::detail {

// C (M, N) = A^T . B with A stored (K, M), B (K, N), and rowSums (M) = the sums over K of A, in one launch
void gemmWithRowSums(cudaStream_t stream, int M, int N, int K, const float* A, const float* B, float* C,
                     float* rowSums);

// "64x64/2" (tile / K splits): the plan gemm() takes for a shape on the current device
std::string gemmPlanName(int M, int N, int K);

}  // namespace nnstudio::cuda::detail
