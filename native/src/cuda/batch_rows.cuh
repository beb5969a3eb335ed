// Copying a step's batch out of the resident dataset: rows order[first + i], i < n. A grid-stride loop
// over (row, float4) so that any grid can do it: gatherRows (data.cu) at the start of an epoch, and the
// optimizer kernel (optim.cu), which gathers the NEXT step's batch once its update is done, so that a
// training step needs no launch of its own for it.
#pragma once

#include <cstdint>

#include "cuda/kernels.h"

namespace nnstudio::cuda {

__device__ __forceinline__ void copyBatchRows(const BatchGather& g, int64_t first, int n, int64_t thread,
                                              int64_t threads) {
  // rows start 16-byte aligned when the row length is a multiple of 4 floats (cudaMalloc'd buffers)
  const bool vec = (g.featureSize & 3) == 0;
  const int64_t perRow = vec ? g.featureSize / 4 : g.featureSize;
  const int64_t total = perRow * n;
  for (int64_t e = thread; e < total; e += threads) {
    const int64_t i = e / perRow, j = e - i * perRow;
    const uint32_t row = g.order[first + i];
    if (vec)
      reinterpret_cast<float4*>(g.batchFeatures + i * g.featureSize)[j] =
          reinterpret_cast<const float4*>(g.features + int64_t(row) * g.featureSize)[j];
    else
      g.batchFeatures[i * g.featureSize + j] = g.features[int64_t(row) * g.featureSize + j];
    if (j == 0) {
      if (g.batchLabels) g.batchLabels[i] = g.labels[row];
      for (int k = 0; k < g.targetWidth; ++k) g.batchTargets[i * g.targetWidth + k] = g.targets[int64_t(row) * g.targetWidth + k];
    }
  }
}

// The batch after the one of this step (state->epochStep, not yet advanced), if the epoch has one.
__device__ __forceinline__ void copyNextBatch(const BatchGather& g, const StepState* state, int64_t thread,
                                              int64_t threads) {
  const int64_t first = (state->epochStep + 1) * g.batch;
  if (first >= g.count) return;
  const int n = int(g.count - first < g.batch ? g.count - first : g.batch);
  copyBatchRows(g, first, n, thread, threads);
}

}  // namespace nnstudio::cuda
