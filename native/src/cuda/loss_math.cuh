// The losses' per-sample math on the device, the formulas of cpu/loss.cpp (in double, as there), shared
// by the loss kernels (loss.cu) and the fused classifier head (dense_head.cu): the loss of one row and its
// gradient, the predicted class, a block-wide sum, and the step's bookkeeping in StepState.
#pragma once

#include <cstdint>

#include "cuda/step_state.h"
#include "nnstudio/engine.h"

namespace nnstudio::cuda {

__device__ __forceinline__ double sigmoidD(double z) { return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z)); }

__device__ __forceinline__ double targetOf(int32_t label, int K, int k) {
  return K == 1 ? double(label) : (k == label ? 1.0 : 0.0);
}

__device__ __forceinline__ int32_t predictRow(LossKind loss, const float* row, int K) {
  if (K > 1) {
    int best = 0;
    float top = row[0];  // row[best], kept in a register: the loads need not wait for the comparisons
    for (int k = 1; k < K; ++k)
      if (row[k] > top) {
        best = k;
        top = row[k];
      }
    return best;
  }
  const bool logits = loss == LossKind::SoftmaxCrossEntropy || loss == LossKind::BinaryCrossEntropy;
  return logits ? (row[0] >= 0.0f ? 1 : 0) : (row[0] >= 0.5f ? 1 : 0);
}

// ---- one output's pieces: rowLoss below composes them in order; dense_head.cu spreads them over threads
// and sums them in the same order ----

// softmax cross-entropy: the row's max, the terms exp(z_k - max) whose sum gives lse = max + log(sum),
// the loss lse - z_label, and the gradient
__device__ __forceinline__ double rowMax(const float* z, int K) {
  double m = z[0];
  for (int k = 1; k < K; ++k) m = fmax(m, double(z[k]));
  return m;
}
__device__ __forceinline__ double softmaxTerm(float zk, double m) { return exp(double(zk) - m); }
// the target of output k: one-hot, or with label smoothing s cpu/loss.cpp's (1 - s) one-hot + s / K
__device__ __forceinline__ double softmaxTarget(bool label, double smoothing, int K) {
  return smoothing == 0.0 ? (label ? 1.0 : 0.0) : (label ? 1.0 - smoothing : 0.0) + smoothing / K;
}
__device__ __forceinline__ float softmaxGradient(float zk, double lse, bool label, double scale, double smoothing = 0.0,
                                                 int K = 1) {
  return float((exp(double(zk) - lse) - softmaxTarget(label, smoothing, K)) * scale);
}
// the row's loss lse - sum_k target_k z_k; zSum = sum_k z_k (read only with smoothing)
__device__ __forceinline__ double softmaxLoss(double lse, float zLabel, double zSum, double smoothing, int K) {
  return smoothing == 0.0 ? lse - zLabel : lse - ((1.0 - smoothing) * zLabel + smoothing * zSum / K);
}

// the element-wise losses (binary cross-entropy on logits, mse, mae, huber with `delta`) of output zk
// against target t, and their derivative (unscaled)
__device__ __forceinline__ double elementLoss(LossKind loss, double zk, double t, double delta = 1.0) {
  switch (loss) {
    case LossKind::BinaryCrossEntropy: return fmax(zk, 0.0) - zk * t + log1p(exp(-fabs(zk)));
    case LossKind::MSE: { const double d = zk - t; return d * d; }
    case LossKind::Huber: {
      const double d = zk - t;
      return fabs(d) < delta ? 0.5 * d * d : delta * (fabs(d) - 0.5 * delta);
    }
    default: return fabs(zk - t);  // MAE
  }
}
__device__ __forceinline__ double elementSlope(LossKind loss, double zk, double t, double delta = 1.0) {
  switch (loss) {
    case LossKind::BinaryCrossEntropy: return sigmoidD(zk) - t;
    case LossKind::MSE: return 2.0 * (zk - t);
    case LossKind::Huber: {  // d clamped to [-delta, delta] (PyTorch's); NaN passes
      const double d = zk - t;
      return d < -delta ? -delta : d > delta ? delta : d;
    }
    default: {  // MAE: sign(d), d itself when NaN
      const double d = zk - t;
      return d > 0 ? 1.0 : d < 0 ? -1.0 : (d == 0 ? 0.0 : d);
    }
  }
}

// the loss of one sample (summed over its K outputs) and, when dz, its gradient scaled by `scale`; the
// target is the label y, or the row `targets` (K floats, a regression's) when given
// (label smoothing s: cpu/loss.cpp's smoothed target (1 - s) one-hot + s / K)
__device__ inline double rowLoss(LossKind loss, const float* z, int32_t y, int K, float* dz, double scale,
                                 const float* targets = nullptr, double delta = 1.0, double smoothing = 0.0) {
  double total = 0;
  if (loss == LossKind::SoftmaxCrossEntropy) {
    if (K == 1) {
      if (dz) dz[0] = 0.0f;
      return 0;
    }
    const double m = rowMax(z, K);
    double sum = 0;
    for (int k = 0; k < K; ++k) sum += softmaxTerm(z[k], m);
    const double lse = m + log(sum);
    double zSum = 0;
    if (smoothing != 0.0)
      for (int k = 0; k < K; ++k) zSum += z[k];
    total = softmaxLoss(lse, z[y], zSum, smoothing, K);
    if (dz)
      for (int k = 0; k < K; ++k) dz[k] = softmaxGradient(z[k], lse, k == y, scale, smoothing, K);
    return total;
  }
  for (int k = 0; k < K; ++k) {
    const double t = targets ? double(targets[k]) : targetOf(y, K, k);
    total += elementLoss(loss, z[k], t, delta);
    if (dz) dz[k] = float(elementSlope(loss, z[k], t, delta) * scale);
  }
  return total;
}

// block-wide sums of (double, long long) into thread 0 (fixed order: deterministic); Threads = blockDim.x,
// a multiple of 32 up to 1024. Every thread of the block must call it.
template <int Threads>
__device__ void blockSum(double& value, long long& count) {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "whole warps, at most 32");
  __shared__ double values[Threads / 32];
  __shared__ long long counts[Threads / 32];
  for (int o = 16; o > 0; o >>= 1) {
    value += __shfl_xor_sync(0xffffffffu, value, o);
    count += __shfl_xor_sync(0xffffffffu, count, o);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    values[warp] = value;
    counts[warp] = count;
  }
  __syncthreads();
  if (warp == 0) {
    value = lane < Threads / 32 ? values[lane] : 0.0;
    count = lane < Threads / 32 ? counts[lane] : 0;
    for (int o = 16; o > 0; o >>= 1) {
      value += __shfl_xor_sync(0xffffffffu, value, o);
      count += __shfl_xor_sync(0xffffffffu, count, o);
    }
  }
}

// The factor of a training step's output gradient: the loss scale 2^lossScaleLog2 of a loss-scaled run
// (loss_scale.h), else 1 (exact either way, a power of two)
__device__ __forceinline__ double lossGradientScale(const StepState* state) {
  return state ? ldexp(1.0, state->lossScaleLog2) : 1.0;
}

// One training batch's loss into the run state (one thread): `total` is the sum of the rows' losses over
// `elements` (N for softmax cross-entropy, N * K for the element-wise losses; with class weights the
// weighted sums), `right` the correct predictions, `squaredError` a regression's sum of squared errors.
// A non-finite mean flags divergence the first time (the optimizer then skips); while not diverged, the
// running totals grow.
__device__ inline void recordBatchLoss(StepState* state, double total, long long right, int N, double elements,
                                       double squaredError = 0) {
  const double mean = total / elements;
  if (state->diverged) return;
  if (!isfinite(mean)) {
    state->diverged = 1;
    state->divergedNaN = isnan(mean) ? 1 : 0;
    state->divergedAt = state->globalStep + 1;
  } else {
    state->sampleLossSum += mean * N;
    state->correct += right;
    state->samples += N;
    state->squaredErrorSum += squaredError;
    state->batchLossSum += mean;
    state->lossSteps += 1;
  }
}

}  // namespace nnstudio::cuda
