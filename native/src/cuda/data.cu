// The resident dataset and the batch of each step: rows picked through the epoch's order (uploaded once
// per epoch) at the offset the device-side step counter gives, so the same captured graph serves every
// step of the epoch. In training this launch runs once per epoch: the optimizer gathers the batch of
// every later step (batch_rows.cuh).
#include "cuda/batch_rows.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 128;

__global__ void gatherRows(BatchGather g, int n, const StepState* state) {
  startAfterPreviousKernel();
  copyBatchRows(g, state->epochStep * g.batch, n, blockIdx.x * int64_t(blockDim.x) + threadIdx.x,
                int64_t(gridDim.x) * blockDim.x);
}

}  // namespace

void gather_batch(cudaStream_t stream, float* batchFeatures, int32_t* batchLabels, const float* features,
                  const int32_t* labels, const uint32_t* order, int64_t featureSize, int n, int batch,
                  const StepState* state) {
  if (n == 0) return;
  BatchGather g;
  g.features = features;
  g.labels = labels;
  g.order = order;
  g.batchFeatures = batchFeatures;
  g.batchLabels = batchLabels;
  g.featureSize = featureSize;
  g.batch = batch;
  gather_batch(stream, g, n, state);
}

void gather_batch(cudaStream_t stream, const BatchGather& g, int n, const StepState* state) {
  if (n == 0) return;
  const int64_t featureSize = g.featureSize;
  const int64_t vectors = ((featureSize & 3) == 0 ? featureSize / 4 : featureSize) * n;
  const unsigned blocks = unsigned(std::min<int64_t>(blocksFor(vectors, kThreads), 1024));
  launchKernel("gatherRows", gatherRows, blocks, kThreads, 0, stream, g, n, state);
  checkLaunch("gather batch");
}

}  // namespace nnstudio::cuda
