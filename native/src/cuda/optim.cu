// SGD with momentum (Nesterov's too) and Adam/AdamW over the whole flat parameter vector in one kernel each,
// exactly as cpu/optim.cpp (PyTorch's update rules, coupled or decoupled weight decay on the masked
// parameters included), and the weight average (EMA) after them. Adam's step count and the base learning rate live on the
// device (state->globalStep, state->baseLr) and the schedule is a kernel argument, so the launch
// replays from a CUDA graph with the learning rate of each step. Each update first saves the old value to `backup` (the
// weights of the last step whose loss was finite, should the next one diverge) and is skipped once
// the loss kernel has flagged divergence. A loss-scaled run's gradients are divided by the scale, and a step
// whose gradients overflowed is skipped (loss_scale.h). Then the kernel gathers the next step's batch when
// given one (every kernel of this step that reads the batch has run by now). The last block to finish ends
// the step.
#include "cuda/batch_rows.cuh"
#include "cuda/check.h"
#include "cuda/kernel_choice.h"
#include "cuda/launch.cuh"
#include "cuda/optim_math.cuh"
#include "cuda/kernels.h"
#include "cuda/loss_scale.h"
#include "spec/lr_schedule.h"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void finishStep(StepState* state) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned done = atomicAdd(&state->blocksDone, 1u);
    if (done == gridDim.x - 1) {
      // every block has read the counters: advance them for the next step
      state->blocksDone = 0;
      state->globalStep += 1;
      state->epochStep += 1;
      if (state->lossScaling)
        advanceLossScale(state->lossScaleLog2, state->scaleGoodSteps, state->skippedSteps, state->gradsOverflow != 0);
      state->gradsOverflow = 0;
      __threadfence();
    }
  }
}

// this step updates the weights: its loss was finite and so were its (scaled) gradients
__device__ __forceinline__ bool takesStep(const StepState* state) { return !state->diverged && !state->gradsOverflow; }

// what turns a scaled gradient into the gradient: 2^-lossScaleLog2, exact (1 without scaling)
__device__ __forceinline__ float gradientUnscale(const StepState* state) { return ldexpf(1.0f, -state->lossScaleLog2); }

__device__ __forceinline__ void gatherNext(const BatchGather& next, const StepState* state) {
  if (next.batchFeatures)
    copyNextBatch(next, state, blockIdx.x * int64_t(blockDim.x) + threadIdx.x, int64_t(gridDim.x) * blockDim.x);
}

// A thread updates kInFlight parameters a grid stride apart at once: all their loads first, then the updates and the
// stores, so that their loads are in flight together. One at a time, the grid of 4 blocks an SM kept too few bytes
// in flight for HBM (seed001_256's SGD step: 435 K parameters and the next batch's gather, 10.8 us under ncu). Each
// parameter's update is the same, so are its bits.
constexpr int kInFlight = 4;

__global__ void sgdKernel(float* params, const float* grads, float* velocity, float* backup, size_t n, LrPlan schedule,
                          float momentum, StepState* state, BatchGather next, WeightDecay decay, bool nesterov) {
  startAfterPreviousKernel();
  if (takesStep(state)) {
    const float lr = stepLearningRate(schedule, state->baseLr, state->globalStep);
    const float unscale = gradientUnscale(state);
    const bool moving = momentum != 0.0f;  // without momentum the velocity is neither read nor written
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t first = blockIdx.x * size_t(blockDim.x) + threadIdx.x; first < n; first += kInFlight * stride) {
      float old[kInFlight], g[kInFlight], vel[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const size_t i = first + u * stride;
        if (i >= n) break;
        old[u] = params[i];
        g[u] = grads[i];
        vel[u] = moving ? velocity[i] : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const size_t i = first + u * stride;
        if (i >= n) break;
        backup[i] = old[u];
        params[i] = sgdUpdate(old[u], g[u] * unscale, i, lr, momentum, nesterov, decay, vel[u]);
        if (moving) velocity[i] = vel[u];
      }
    }
  }
  gatherNext(next, state);
  finishStep(state);
}

__global__ void adamKernel(float* params, const float* grads, float* m, float* v, float* backup, size_t n,
                           LrPlan schedule, float beta1, float beta2, float eps, StepState* state, BatchGather next,
                           WeightDecay decay) {
  startAfterPreviousKernel();
  if (takesStep(state)) {
    const float lr = stepLearningRate(schedule, state->baseLr, state->globalStep);
    const AdamCorrections corrections =
        adamCorrections(lr, beta1, beta2, state->globalStep - state->skippedSteps + 1);
    const float unscale = gradientUnscale(state);
    const size_t stride = size_t(gridDim.x) * blockDim.x;  // kInFlight parameters a thread at once, as SGD's
    for (size_t first = blockIdx.x * size_t(blockDim.x) + threadIdx.x; first < n; first += kInFlight * stride) {
      float old[kInFlight], g[kInFlight], mi[kInFlight], vi[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const size_t i = first + u * stride;
        if (i >= n) break;
        old[u] = params[i];
        g[u] = grads[i];
        mi[u] = m[i];
        vi[u] = v[i];
      }
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const size_t i = first + u * stride;
        if (i >= n) break;
        backup[i] = old[u];
        params[i] = adamUpdate(old[u], g[u] * unscale, i, lr, corrections, beta1, beta2, eps, decay, mi[u], vi[u]);
        m[i] = mi[u];
        v[i] = vi[u];
      }
    }
  }
  gatherNext(next, state);
  finishStep(state);
}

__global__ void finiteCheckKernel(const float* grads, size_t n, StepState* state) {
  startAfterPreviousKernel();
  bool bad = false;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    bad = bad || !isfinite(grads[i]);
  if (__syncthreads_or(bad) && threadIdx.x == 0) state->gradsOverflow = 1;
}

__global__ void emaKernel(float* average, const float* params, size_t n, float decay, const StepState* state) {
  startAfterPreviousKernel();
  if (state->diverged) return;
  const float keep = decay, take = 1.0f - decay;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    average[i] = keep * average[i] + take * params[i];
}

// the chooser's grid (kernel_choice.h) for the current device's SMs
unsigned gridFor(size_t n) { return optimizerBlocks(currentDeviceCaps(), n, kThreads); }

}  // namespace

void sgd_step(cudaStream_t stream, float* params, const float* grads, float* velocity, float* backup, size_t n,
              const LrPlan& schedule, float momentum, StepState* state, const BatchGather* next,
              const WeightDecay& decay, bool nesterov) {
  launchKernel("sgdKernel", sgdKernel, gridFor(n), kThreads, 0, stream,
               params, grads, velocity, backup, n, schedule, momentum, state, next ? *next : BatchGather(), decay,
               nesterov);
  checkLaunch("sgd step");
}

void check_gradients_finite(cudaStream_t stream, const float* grads, size_t n, StepState* state) {
  launchKernel("finiteCheckKernel", finiteCheckKernel, gridFor(n), kThreads, 0, stream, grads, n, state);
  checkLaunch("checking the gradients");
}

void ema_update(cudaStream_t stream, float* average, const float* params, size_t n, float decay,
                const StepState* state) {
  launchKernel("emaKernel", emaKernel, gridFor(n), kThreads, 0, stream, average, params, n, decay, state);
  checkLaunch("weight average");
}

void adam_step(cudaStream_t stream, float* params, const float* grads, float* m, float* v, float* backup, size_t n,
               const LrPlan& schedule, float beta1, float beta2, float eps, StepState* state, const BatchGather* next,
               const WeightDecay& decay) {
  launchKernel("adamKernel", adamKernel, gridFor(n), kThreads, 0, stream,
               params, grads, m, v, backup, n, schedule, beta1, beta2, eps, state, next ? *next : BatchGather(), decay);
  checkLaunch("adam step");
}

namespace {
LrPlan constantPlan(float lr) {
  LrPlan plan;
  plan.initialLr = lr;
  return plan;
}
}  // namespace

void sgd_step(cudaStream_t stream, float* params, const float* grads, float* velocity, float* backup, size_t n,
              float lr, float momentum, StepState* state, const BatchGather* next, const WeightDecay& decay,
              bool nesterov) {
  sgd_step(stream, params, grads, velocity, backup, n, constantPlan(lr), momentum, state, next, decay, nesterov);
}

void adam_step(cudaStream_t stream, float* params, const float* grads, float* m, float* v, float* backup, size_t n,
               float lr, float beta1, float beta2, float eps, StepState* state, const BatchGather* next,
               const WeightDecay& decay) {
  adam_step(stream, params, grads, m, v, backup, n, constantPlan(lr), beta1, beta2, eps, state, next, decay);
}

}  // namespace nnstudio::cuda
