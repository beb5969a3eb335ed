// Losses on the device, the formulas of cpu/loss.cpp (in double, as there), in one block per launch:
// a batch's rows are few, and one block lets the batch total, the divergence check and the running
// totals be written without atomics or a second kernel. softmax + cross-entropy are fused: the
// gradient w.r.t. the logits is written directly.
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ double sigmoidD(double z) { return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z)); }

__device__ __forceinline__ double targetOf(int32_t label, int K, int k) {
  return K == 1 ? double(label) : (k == label ? 1.0 : 0.0);
}

__device__ __forceinline__ int32_t predictRow(LossKind loss, const float* row, int K) {
  if (K > 1) {
    int best = 0;
    for (int k = 1; k < K; ++k)
      if (row[k] > row[best]) best = k;
    return best;
  }
  const bool logits = loss == LossKind::SoftmaxCrossEntropy || loss == LossKind::BinaryCrossEntropy;
  return logits ? (row[0] >= 0.0f ? 1 : 0) : (row[0] >= 0.5f ? 1 : 0);
}

// the loss of one sample (summed over its K outputs) and, when dz, its gradient scaled by `scale`
__device__ double rowLoss(LossKind loss, const float* z, int32_t y, int K, float* dz, double scale) {
  double total = 0;
  switch (loss) {
    case LossKind::SoftmaxCrossEntropy: {
      if (K == 1) {
        if (dz) dz[0] = 0.0f;
        break;
      }
      double m = z[0];
      for (int k = 1; k < K; ++k) m = fmax(m, double(z[k]));
      double sum = 0;
      for (int k = 0; k < K; ++k) sum += exp(double(z[k]) - m);
      const double lse = m + log(sum);
      total = lse - z[y];
      if (dz)
        for (int k = 0; k < K; ++k) dz[k] = float((exp(double(z[k]) - lse) - (k == y ? 1.0 : 0.0)) * scale);
      break;
    }
    case LossKind::BinaryCrossEntropy:
      for (int k = 0; k < K; ++k) {
        const double zk = z[k], t = targetOf(y, K, k);
        total += fmax(zk, 0.0) - zk * t + log1p(exp(-fabs(zk)));
        if (dz) dz[k] = float((sigmoidD(zk) - t) * scale);
      }
      break;
    case LossKind::MSE:
      for (int k = 0; k < K; ++k) {
        const double d = double(z[k]) - targetOf(y, K, k);
        total += d * d;
        if (dz) dz[k] = float(2.0 * d * scale);
      }
      break;
    case LossKind::MAE:
      for (int k = 0; k < K; ++k) {
        const double d = double(z[k]) - targetOf(y, K, k);
        total += fabs(d);
        const double s = d > 0 ? 1.0 : d < 0 ? -1.0 : (d == 0 ? 0.0 : d);
        if (dz) dz[k] = float(s * scale);
      }
      break;
  }
  return total;
}

// block-wide sums of (double, long long) into thread 0
__device__ void blockSum(double& value, long long& count) {
  __shared__ double values[kThreads / 32];
  __shared__ long long counts[kThreads / 32];
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
    value = lane < kThreads / 32 ? values[lane] : 0.0;
    count = lane < kThreads / 32 ? counts[lane] : 0;
    for (int o = 16; o > 0; o >>= 1) {
      value += __shfl_xor_sync(0xffffffffu, value, o);
      count += __shfl_xor_sync(0xffffffffu, count, o);
    }
  }
}

__global__ void __launch_bounds__(kThreads) lossKernel(LossKind loss, const float* outputs, const int32_t* labels, int N,
                                                       int K, float* dOutputs, StepState* state) {
  startAfterPreviousKernel();
  const bool perSample = loss == LossKind::SoftmaxCrossEntropy;
  const double elements = perSample ? double(N) : double(N) * K;
  const double scale = 1.0 / elements;
  double total = 0;
  long long right = 0;
  for (int n = threadIdx.x; n < N; n += kThreads) {
    const float* z = outputs + int64_t(n) * K;
    const int32_t y = labels[n];
    if (predictRow(loss, z, K) == y) ++right;
    total += rowLoss(loss, z, y, K, dOutputs ? dOutputs + int64_t(n) * K : nullptr, scale);
  }
  blockSum(total, right);
  if (threadIdx.x == 0) {
    const double mean = total / elements;
    if (!state->diverged) {
      if (!isfinite(mean)) {
        state->diverged = 1;
        state->divergedNaN = isnan(mean) ? 1 : 0;
        state->divergedAt = state->globalStep + 1;
      } else {
        state->sampleLossSum += mean * N;
        state->correct += right;
        state->samples += N;
        state->batchLossSum += mean;
        state->lossSteps += 1;
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads) predictKernel(LossKind loss, const float* outputs, const int32_t* labels,
                                                          int N, int K, int32_t* predictions, float* probabilities,
                                                          StepState* state, unsigned long long* confusion) {
  startAfterPreviousKernel();
  const int classes = K == 1 ? 2 : K;
  const bool logits = loss == LossKind::SoftmaxCrossEntropy || loss == LossKind::BinaryCrossEntropy;
  const bool perSample = loss == LossKind::SoftmaxCrossEntropy;
  double total = 0;
  long long right = 0;
  for (int n = blockIdx.x * kThreads + threadIdx.x; n < N; n += gridDim.x * kThreads) {
    const float* z = outputs + int64_t(n) * K;
    const int32_t predicted = predictRow(loss, z, K);
    if (predictions) predictions[n] = predicted;
    if (probabilities) {
      float* p = probabilities + int64_t(n) * classes;
      if (K == 1) {
        const double q = logits ? sigmoidD(z[0]) : double(z[0]);
        p[0] = float(1.0 - q);
        p[1] = float(q);
      } else if (loss == LossKind::SoftmaxCrossEntropy) {
        double m = z[0];
        for (int k = 1; k < K; ++k) m = fmax(m, double(z[k]));
        double sum = 0;
        for (int k = 0; k < K; ++k) sum += exp(double(z[k]) - m);
        for (int k = 0; k < K; ++k) p[k] = float(exp(double(z[k]) - m) / sum);
      } else if (loss == LossKind::BinaryCrossEntropy) {
        for (int k = 0; k < K; ++k) p[k] = float(sigmoidD(z[k]));
      } else {
        for (int k = 0; k < K; ++k) p[k] = z[k];
      }
    }
    if (labels) {
      const int32_t y = labels[n];
      if (predicted == y) ++right;
      if (state) total += rowLoss(loss, z, y, K, nullptr, 0.0);
      if (confusion) atomicAdd(confusion + int64_t(y) * classes + predicted, 1ull);
    }
  }
  if (!state || !labels) return;
  blockSum(total, right);
  if (threadIdx.x == 0) {
    // the per-sample loss (mean over K outputs for the element-wise losses), summed
    atomicAdd(&state->sampleLossSum, perSample ? total : total / K);
    atomicAdd(reinterpret_cast<unsigned long long*>(&state->correct), static_cast<unsigned long long>(right));
    if (blockIdx.x == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&state->samples), static_cast<unsigned long long>(N));
  }
}

}  // namespace

void loss_forward_backward(cudaStream_t stream, LossKind loss, const float* outputs, const int32_t* labels, int N,
                           int K, float* dOutputs, StepState* state) {
  if (N == 0) return;
  launchKernel("lossKernel", lossKernel, 1, kThreads, 0, stream, loss, outputs, labels, N, K, dOutputs, state);
  checkLaunch("loss");
}

void loss_predict(cudaStream_t stream, LossKind loss, const float* outputs, const int32_t* labels, int N, int K,
                  int32_t* predictions, float* probabilities, StepState* state, unsigned long long* confusion) {
  if (N == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(blocksFor(N, kThreads), 256));
  launchKernel("predictKernel", predictKernel, blocks, kThreads, 0, stream,
               loss, outputs, labels, N, K, predictions, probabilities, state,
                                                  confusion);
  checkLaunch("predict");
}

}  // namespace nnstudio::cuda
