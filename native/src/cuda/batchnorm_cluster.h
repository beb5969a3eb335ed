// The batchnorm's one-launch kernels (batchnorm_cluster.cu): a thread-block cluster of K blocks per channel
// reduces the channel's statistics (or its gradient sums), combines them through distributed shared
// memory and normalises (or writes dx) in the same launch. batchnorm.cu launches them where the chooser
// (chooseBatchnormCluster, kernel_choice.h) gives K >= 2, in place of its two-pass kernels.
#pragma once

#include "cuda/kernels.h"

namespace nnstudio::cuda {

constexpr int kBatchnormClusterThreads = 512;  // threads per block of the cluster kernels

// 32-bit indices where every index and every loop's step past the end fits
inline bool batchnormNarrowIndex(const BatchNormArgs& a) { return int64_t(a.N) * a.C * a.S < (int64_t(1) << 31); }

void batchnorm_cluster_forward(cudaStream_t stream, float* y, const float* x, float* saved, float* runMean,
                               float* runVar, const BatchNormArgs& a, int K, const BatchNormActivation& act);
void batchnorm_cluster_backward(cudaStream_t stream, float* dx, float* dGamma, float* dBeta, const float* dy,
                                const float* x, const float* saved, const BatchNormArgs& a, bool training, int K,
                                const BatchNormActivation& act);

}  // namespace nnstudio::cuda
