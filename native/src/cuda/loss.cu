// Losses on the device, the formulas of cpu/loss.cpp (in double, as there; loss_math.cuh, shared with the
// fused classifier head of dense_head.cu), in one block per launch:
// a batch's rows are few, and one block lets the batch total, the divergence check and the running
// totals be written without atomics or a second kernel. softmax + cross-entropy are fused: the
// gradient w.r.t. the logits is written directly. A regression's rows take their float targets; class
// weights weigh each row by its label's class (the mean divides by the weights' sum).
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"
#include "cuda/loss_math.cuh"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 512;

// Sums a per-thread double over the block and hands the sum to every thread (blockSum gives it to thread 0).
__device__ double blockSumToAll(double value) {
  __shared__ double shared;
  long long unused = 0;
  __syncthreads();  // a blockSum before this one has been read in full
  blockSum<kThreads>(value, unused);
  if (threadIdx.x == 0) shared = value;
  __syncthreads();
  return shared;
}

__global__ void __launch_bounds__(kThreads) lossKernel(LossConfig config, const float* outputs, LossTargets targets,
                                                       int N, int K, float* dOutputs, StepState* state) {
  startAfterPreviousKernel();
  const LossKind loss = config.kind;
  const bool regression = config.regression;
  const bool perSample = loss == LossKind::SoftmaxCrossEntropy;
  // the samples' class weights and their sum (N without weights: the unweighted mean, bit for bit)
  const float* weights = regression ? nullptr : targets.classWeights;
  double weightSum = double(N);
  if (weights) {
    double mine = 0;
    for (int n = threadIdx.x; n < N; n += kThreads) mine += weights[targets.labels[n]];
    weightSum = blockSumToAll(mine);
  }
  const double elements = perSample ? weightSum : weightSum * K;
  const double scale = lossGradientScale(state) / elements;  // the loss scale: 1 unless loss-scaled
  double total = 0, squared = 0;
  long long right = 0;
  for (int n = threadIdx.x; n < N; n += kThreads) {
    const float* z = outputs + int64_t(n) * K;
    float* dz = dOutputs ? dOutputs + int64_t(n) * K : nullptr;
    if (regression) {
      const float* t = targets.targets + int64_t(n) * K;
      total += rowLoss(loss, z, 0, K, dz, scale, t, config.huberDelta);
      for (int k = 0; k < K; ++k) {
        const double d = double(z[k]) - double(t[k]);
        squared += d * d;
      }
      continue;
    }
    const int32_t y = targets.labels[n];
    if (predictRow(loss, z, K) == y) ++right;
    if (weights) {
      const double w = weights[y];
      total += w * rowLoss(loss, z, y, K, dz, w * scale, nullptr, config.huberDelta, config.labelSmoothing);
    } else {
      total += rowLoss(loss, z, y, K, dz, scale, nullptr, config.huberDelta, config.labelSmoothing);
    }
  }
  blockSum<kThreads>(total, right);
  if (regression) {
    const double all = blockSumToAll(squared);
    squared = all;
  }
  if (threadIdx.x == 0) recordBatchLoss(state, total, right, N, elements, squared);
}

__global__ void __launch_bounds__(kThreads) predictKernel(LossConfig config, const float* outputs, LossTargets targets,
                                                          int N, int K, int32_t* predictions, float* probabilities,
                                                          StepState* state, unsigned long long* confusion) {
  startAfterPreviousKernel();
  const LossKind loss = config.kind;
  const bool regression = config.regression;
  const int classes = K == 1 ? 2 : K;
  const bool logits = loss == LossKind::SoftmaxCrossEntropy || loss == LossKind::BinaryCrossEntropy;
  const bool perSample = loss == LossKind::SoftmaxCrossEntropy;
  const bool scored = regression ? targets.targets != nullptr : targets.labels != nullptr;
  const float* weights = regression ? nullptr : targets.classWeights;
  double total = 0, weightTotal = 0;
  long long right = 0;
  for (int n = blockIdx.x * kThreads + threadIdx.x; n < N; n += gridDim.x * kThreads) {
    const float* z = outputs + int64_t(n) * K;
    if (regression) {
      if (scored && state)
        total += rowLoss(loss, z, 0, K, nullptr, 0.0, targets.targets + int64_t(n) * K, config.huberDelta);
      weightTotal += 1.0;
      continue;
    }
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
    if (scored) {
      const int32_t y = targets.labels[n];
      if (predicted == y) ++right;
      const double w = weights ? double(weights[y]) : 1.0;
      if (state) total += w * rowLoss(loss, z, y, K, nullptr, 0.0, nullptr, config.huberDelta, config.labelSmoothing);
      weightTotal += w;
      if (confusion) atomicAdd(confusion + int64_t(y) * classes + predicted, 1ull);
    }
  }
  if (!state || !scored) return;
  blockSum<kThreads>(total, right);
  __syncthreads();  // blockSum's shared partials are read before the second sum writes them
  long long unused = 0;
  blockSum<kThreads>(weightTotal, unused);
  if (threadIdx.x == 0) {
    // the per-sample loss (mean over K outputs for the element-wise losses), summed (weighted by class)
    atomicAdd(&state->sampleLossSum, perSample ? total : total / K);
    atomicAdd(&state->weightSum, weightTotal);
    atomicAdd(reinterpret_cast<unsigned long long*>(&state->correct), static_cast<unsigned long long>(right));
    if (blockIdx.x == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&state->samples), static_cast<unsigned long long>(N));
  }
}

}  // namespace

void loss_forward_backward(cudaStream_t stream, const LossConfig& config, const float* outputs,
                           const LossTargets& targets, int N, int K, float* dOutputs, StepState* state) {
  if (N == 0) return;
  launchKernel("lossKernel", lossKernel, 1, kThreads, 0, stream, config, outputs, targets, N, K, dOutputs, state);
  checkLaunch("loss");
}

void loss_predict(cudaStream_t stream, const LossConfig& config, const float* outputs, const LossTargets& targets,
                  int N, int K, int32_t* predictions, float* probabilities, StepState* state,
                  unsigned long long* confusion) {
  if (N == 0) return;
  const unsigned blocks = unsigned(std::min<int64_t>(blocksFor(N, kThreads), 256));
  launchKernel("predictKernel", predictKernel, blocks, kThreads, 0, stream, config, outputs, targets, N, K, predictions,
               probabilities, state, confusion);
  checkLaunch("predict");
}

void loss_forward_backward(cudaStream_t stream, LossKind loss, const float* outputs, const int32_t* labels, int N,
                           int K, float* dOutputs, StepState* state) {
  LossTargets targets;
  targets.labels = labels;
  loss_forward_backward(stream, LossConfig{loss}, outputs, targets, N, K, dOutputs, state);
}

void loss_predict(cudaStream_t stream, LossKind loss, const float* outputs, const int32_t* labels, int N, int K,
                  int32_t* predictions, float* probabilities, StepState* state, unsigned long long* confusion) {
  LossTargets targets;
  targets.labels = labels;
  loss_predict(stream, LossConfig{loss}, outputs, targets, N, K, predictions, probabilities, state, confusion);
}

}  // namespace nnstudio::cuda
