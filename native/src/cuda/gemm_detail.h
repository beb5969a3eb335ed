// gemm.cu's entry point beyond kernels.h: dense's fused weight + bias gradient. (The tile plan a shape
// gets is the chooser's: kernel_choice.h, chooseGemm.)
#pragma once

#include <cuda_runtime.h>

namespace nnstudio::cuda::detail {

// C (M, N) = A^T . B with A stored (K, M), B (K, N), and rowSums (M) = the sums over K of A, in one launch
void gemmWithRowSums(cudaStream_t stream, int M, int N, int K, const float* A, const float* B, float* C,
                     float* rowSums);

}  // namespace nnstudio::cuda::detail
