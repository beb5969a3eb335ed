// Losses on the device, the formulas of cpu/loss.cpp (in double, as there; loss_math.cuh, shared with the
// fused classifier head of dense_head.cu), in one block per launch: a batch's rows are few, and one block
// lets the batch total, the divergence check and the running totals be written without atomics or a second
// kernel. Softmax cross-entropy of 2-32 classes without class weights is the exception (softmaxLossSpread):
// spread over many blocks, a lane a class, the last block books the step. softmax + cross-entropy are fused:
// the gradient w.r.t. the logits is written directly. A regression's rows take their float targets; class
// weights weigh each row by its label's class (the mean divides by the weights' sum).
#include <algorithm>

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

// Softmax cross-entropy without class weights, 2 <= K <= W <= 32, spread: W lanes take a row, a lane a class, so a
// row's exps run side by side; a warp takes 32 / W rows at a time, a block 8 warps, the grid up to
// LossPartials::kMaxBlocks blocks. lossKernel's thread a row had run its 21 double-precision exp and log one
// after another, 4 warps of one block holding seed001's 100 rows (13.7 us on an H100, 27 000 cycles for 7 900
// instructions). Each lane scans the row's K values through shuffles in k order (the max, the prediction, the
// label's value, the sums): rowLoss's operations in its order, so each row's loss and gradient have its bits. The
// rows' losses are summed per block in a fixed order, the blocks' sums by the last block in block order: the
// batch loss is deterministic (its rounding differs from lossKernel's thread order).
constexpr int kSpreadThreads = 256;

template <int W>
__global__ void __launch_bounds__(kSpreadThreads)
    softmaxLossSpread(float smoothingF, const float* outputs, const int32_t* labels, int N, int K, float* dOutputs,
                      StepState* state, LossPartials* partials) {
  startAfterPreviousKernel();
  constexpr int G = 32 / W;  // rows a warp takes at once
  constexpr int kWarps = kSpreadThreads / 32;
  const unsigned all = 0xffffffffu;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int k = lane % W, group = lane / W;
  const double smoothing = smoothingF;
  const double scale = lossGradientScale(state) / double(N);
  double total = 0;  // this lane's rows (lane k == 0 of its group)
  long long right = 0;
  for (int first = (blockIdx.x * kWarps + warp) * G; first < N; first += gridDim.x * kWarps * G) {
    const int n = first + group;
    const bool live = n < N;
    const float z = live && k < K ? outputs[int64_t(n) * K + k] : 0.0f;
    const int32_t y = live ? labels[n] : 0;
    // the row's max, first maximum, label value and value sum, scanned in k order by every lane of the row
    double m = __shfl_sync(all, z, 0, W);
    float top = float(m), zLabel = y == 0 ? top : 0.0f;
    int best = 0;
    double zSum = smoothing != 0.0 ? m : 0.0;
    for (int j = 1; j < K; ++j) {
      const float zj = __shfl_sync(all, z, j, W);
      m = fmax(m, double(zj));
      if (zj > top) best = j, top = zj;
      if (j == y) zLabel = zj;
      if (smoothing != 0.0) zSum += zj;
    }
    const double term = k < K ? softmaxTerm(z, m) : 0.0;
    double sum = 0;
    for (int j = 0; j < K; ++j) sum += __shfl_sync(all, term, j, W);
    const double lse = m + log(sum);
    if (live && k < K && dOutputs)
      dOutputs[int64_t(n) * K + k] = softmaxGradient(z, lse, k == y, scale, smoothing, K);
    if (live && k == 0) {
      total += softmaxLoss(lse, zLabel, zSum, smoothing, K);
      if (best == y) ++right;
    }
  }
  // the block's sums: a warp's groups in order, then the warps in order
  __shared__ double warpTotal[kWarps];
  __shared__ long long warpRight[kWarps];
  double t = 0;
  long long r = 0;
  for (int g = 0; g < G; ++g) {
    t += __shfl_sync(all, total, g * W);
    r += __shfl_sync(all, right, g * W);
  }
  if (lane == 0) warpTotal[warp] = t, warpRight[warp] = r;
  __syncthreads();
  if (threadIdx.x != 0) return;
  double blockTotal = 0;
  long long blockRight = 0;
  for (int w = 0; w < kWarps; ++w) blockTotal += warpTotal[w], blockRight += warpRight[w];
  partials->total[blockIdx.x] = blockTotal;
  partials->right[blockIdx.x] = blockRight;
  __threadfence();
  if (atomicAdd(&partials->blocksDone, 1u) != gridDim.x - 1) return;
  __threadfence();  // every block's partial is visible
  double batchTotal = 0;
  long long batchRight = 0;
  for (int b = 0; b < int(gridDim.x); ++b) {
    batchTotal += reinterpret_cast<volatile double*>(partials->total)[b];
    batchRight += reinterpret_cast<volatile long long*>(partials->right)[b];
  }
  partials->blocksDone = 0;
  recordBatchLoss(state, batchTotal, batchRight, N, double(N));
}

template <int W>
void launchSpread(cudaStream_t stream, const LossConfig& config, const float* outputs, const int32_t* labels, int N,
                  int K, float* dOutputs, StepState* state, LossPartials* partials) {
  const int rowsPerBlock = kSpreadThreads / 32 * (32 / W);
  const unsigned blocks = unsigned(std::min<int64_t>((int64_t(N) + rowsPerBlock - 1) / rowsPerBlock,
                                                     LossPartials::kMaxBlocks));
  launchKernel("softmaxLossSpread", softmaxLossSpread<W>, blocks, kSpreadThreads, 0, stream, config.labelSmoothing,
               outputs, labels, N, K, dOutputs, state, partials);
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
                           const LossTargets& targets, int N, int K, float* dOutputs, StepState* state,
                           LossPartials* partials) {
  if (N == 0) return;
  // spread (a lane a class, many blocks) where a training step's state takes the batch sums
  const bool spread = state && partials && config.kind == LossKind::SoftmaxCrossEntropy && !config.regression &&
                      !targets.classWeights && K >= 2 && K <= 32;
  if (!spread) launchKernel("lossKernel", lossKernel, 1, kThreads, 0, stream, config, outputs, targets, N, K, dOutputs, state);
  else if (K <= 8) launchSpread<8>(stream, config, outputs, targets.labels, N, K, dOutputs, state, partials);
  else if (K <= 16) launchSpread<16>(stream, config, outputs, targets.labels, N, K, dOutputs, state, partials);
  else launchSpread<32>(stream, config, outputs, targets.labels, N, K, dOutputs, state, partials);
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
