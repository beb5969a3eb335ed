// Losses on the device, the formulas of cpu/loss.cpp (in double, as there; loss_math.cuh, shared with the
// fused classifier head of dense_head.cu), in one block per launch:
// a batch's rows are few, and one block lets the batch total, the divergence check and the running
// totals be written without atomics or a second kernel. softmax + cross-entropy are fused: the
// gradient w.r.t. the logits is written directly.
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/kernels.h"
#include "cuda/loss_math.cuh"

namespace nnstudio::cuda {

namespace {

constexpr int kThreads = 512;

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
  blockSum<kThreads>(total, right);
  if (threadIdx.x == 0) recordBatchLoss(state, total, right, N, elements);
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
  blockSum<kThreads>(total, right);
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
