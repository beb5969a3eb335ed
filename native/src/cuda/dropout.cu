// Inverted dropout with the CPU's masks bit for bit: one thread per sample draws the sample's mask from
// the same xoshiro stream as cpu/dropout.cpp (spec/rng.h runs on the device too). The step's seed comes
// from the device-side step counter, so the launch replays correctly from a CUDA graph.
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"
#include "spec/rng.h"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 128;

__global__ void dropoutForward(float* out, float* mask, const float* in, int N, int64_t width, float rate,
                               uint64_t runSeed, uint64_t layerIndex, const StepState* state) {
  startAfterPreviousKernel();
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  // the CPU's seeds: the network's per-step seed, then the layer's, then the sample's
  const uint64_t stepSeed = mixSeed(runSeed, uint64_t(state->globalStep), 0xD0);
  Rng rng(mixSeed(mixSeed(stepSeed, layerIndex), uint64_t(n), 0xD50F));
  const float keep = 1.0f / (1.0f - rate);
  float* m = mask + n * width;
  const float* x = in + n * width;
  float* y = out + n * width;
  for (int64_t i = 0; i < width; ++i) {
    const float mi = rng.uniform() < rate ? 0.0f : keep;
    m[i] = mi;
    y[i] = x[i] * mi;
  }
}

__global__ void dropoutBackward(float* dIn, const float* dOut, const float* mask, int64_t total) {
  startAfterPreviousKernel();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    dIn[i] = dOut[i] * mask[i];
}

}  // namespace

void dropout_forward(cudaStream_t stream, float* out, float* mask, const float* in, int N, int64_t width, float rate,
                     uint64_t runSeed, uint64_t layerIndex, const StepState* state) {
  if (N == 0 || width == 0) return;
  launchKernel("dropoutForward", dropoutForward, blocksFor(N, kThreads), kThreads, 0, stream,
               out, mask, in, N, width, rate, runSeed, layerIndex,
                                                                  state);
  checkLaunch("dropout forward");
}

void dropout_backward(cudaStream_t stream, float* dIn, const float* dOut, const float* mask, int N, int64_t width) {
  const int64_t total = int64_t(N) * width;
  if (total == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(blocksFor(total, 256), 65535));
  launchKernel("dropoutBackward", dropoutBackward, blocks, 256, 0, stream, dIn, dOut, mask, total);
  checkLaunch("dropout backward");
}

}  // namespace nnstudio::cuda
