// The resident dataset and the batch of each step: rows picked through the epoch's order (uploaded once
// per epoch) at the offset the device-side step counter gives, so the same captured graph serves every
// step of the epoch.
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 128;

// one block row per sample (blockIdx.y), threads across the features
__global__ void gatherRows(float* batchFeatures, int32_t* batchLabels, const float* features, const int32_t* labels,
                           const uint32_t* order, int64_t featureSize, int batch, const StepState* state) {
  startAfterPreviousKernel();
  const int i = blockIdx.y;
  const uint32_t row = order[state->epochStep * batch + i];
  const float* src = features + int64_t(row) * featureSize;
  float* dst = batchFeatures + int64_t(i) * featureSize;
  if ((featureSize & 3) == 0) {
    // rows start 16-byte aligned when the row length is a multiple of 4 floats
    const float4* s4 = reinterpret_cast<const float4*>(src);
    float4* d4 = reinterpret_cast<float4*>(dst);
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < featureSize / 4;
         j += int64_t(gridDim.x) * blockDim.x)
      d4[j] = s4[j];
  } else {
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < featureSize; j += int64_t(gridDim.x) * blockDim.x)
      dst[j] = src[j];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) batchLabels[i] = labels[row];
}

}  // namespace

void gather_batch(cudaStream_t stream, float* batchFeatures, int32_t* batchLabels, const float* features,
                  const int32_t* labels, const uint32_t* order, int64_t featureSize, int n, int batch,
                  const StepState* state) {
  if (n == 0) return;
  const int64_t vectors = (featureSize & 3) == 0 ? featureSize / 4 : featureSize;
  const unsigned across = unsigned(std::min<int64_t>(blocksFor(vectors, kThreads), 64));
  launchKernel("gatherRows", gatherRows, dim3(across, unsigned(n)), kThreads, 0, stream,
               batchFeatures, batchLabels, features, labels, order,
                                                                  featureSize, batch, state);
  checkLaunch("gather batch");
}

}  // namespace nnstudio::cuda
