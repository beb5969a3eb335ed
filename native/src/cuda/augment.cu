// Augmentation of the training batch on the device (spec/augment.h, as cpu/augment.cpp): a block per
// sample, whose first thread draws the sample's transform from (seed, state->globalStep, sample) into
// shared memory; then the block writes the sample's pixels. The step is read on the device, so the
// captured step graph augments every step differently.
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"
#include "spec/augment.h"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void augmentKernel(float* out, const float* in, int C, int H, int W, Augmentation augment, uint64_t seed,
                              const StepState* state) {
  startAfterPreviousKernel();
  // raw storage: a __shared__ variable cannot have SampleTransform's default member initialisers
  __shared__ alignas(SampleTransform) unsigned char storage[sizeof(SampleTransform)];
  SampleTransform& t = *reinterpret_cast<SampleTransform*>(storage);
  const int sample = blockIdx.x;
  if (threadIdx.x == 0) t = drawTransform(augment, seed, state->globalStep, sample, H, W);
  __syncthreads();
  const int64_t plane = int64_t(H) * W, size = plane * C;
  const float* src = in + sample * size;  // (C, H, W)
  float* dst = out + sample * size;       // (C, H, W)
  for (int64_t e = threadIdx.x; e < size; e += kThreads) {
    const int c = int(e / plane), yx = int(e - c * plane);
    const int y = yx / W, x = yx - y * W;
    dst[e] = augmentedPixel(src + c * plane, H, W, y, x, t);
  }
}

}  // namespace

void augment_batch(cudaStream_t stream, float* out, const float* in, int n, int C, int H, int W,
                   const Augmentation& augment, uint64_t seed, const StepState* state) {
  if (n == 0) return;
  launchKernel("augmentKernel", augmentKernel, unsigned(n), kThreads, 0, stream, out, in, C, H, W, augment, seed,
               state);
  checkLaunch("augmentation");
}

}  // namespace nnstudio::cuda
