// A network on the CPU: the resolved plan plus every per-layer buffer, allocated once for the largest
// batch so that a training step allocates nothing. Walks the layers forward and backward.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/layers.h"
#include "cpu/thread_pool.h"
#include "spec/model.h"

namespace nnstudio::cpu {

class Network {
 public:
  // inputGradient: also compute dLoss/dInput (tests only; training never needs it).
  Network(const ModelSpec& spec, int maxBatch, ThreadPool& pool, bool inputGradient = false);

  const NetworkPlan& plan() const { return plan_; }
  int maxBatch() const { return maxBatch_; }
  int outputWidth() const { return int(plan_.outputWidth); }

  // Runs every layer on input (n, inputSize), which must stay alive until backward(); returns the
  // head's outputs (n, outputWidth) (logits when the loss folds the head's activation). training:
  // dropout on, batchnorm on the batch's statistics; then, when `stats` is given (the same flat vector
  // as params, writable), batchnorm's running statistics in it move toward the batch's. Evaluation
  // (training false) uses the running statistics and writes nothing.
  const float* forward(const float* params, const float* input, int n, bool training, uint64_t dropoutSeed,
                       float* stats = nullptr);
  // Mean loss of the last forward against the batch's labels or targets; with `gradient`, seeds backward
  // with dLoss/dOutputs. Adds to `counts` when given (loss_forward_backward).
  double loss(const LossTargets& targets, int n, bool gradient, LossCounts* counts);
  // Writes dLoss/dParameters (parameterCount floats, overwritten; 0 for batchnorm's running statistics)
  // for the last forward + loss, through batchnorm's batch statistics when that forward was training.
  void backward(const float* params, float* grads, int n);

  const float* outputs() const { return out_.back(); }
  const float* inputGradient() const { return inputGrad_.data(); }  // (n, inputSize), when enabled

 private:
  NetworkPlan plan_;
  ThreadPool& pool_;
  int maxBatch_ = 0;
  bool inputGradient_ = false;
  const float* input_ = nullptr;
  std::vector<std::vector<float>> storage_;      // backing memory of outputs and gradients
  std::vector<float*> out_, grad_;               // per layer (n, outSize); flatten and a block's begin alias their input
  std::vector<bool> needInputGrad_;              // does layer i have to produce dLoss/dInput?
  std::vector<bool> poolFused_;                  // conv i runs the pool i+1 inside its per-sample loop
  std::vector<float> inputGrad_;
  std::vector<std::vector<int32_t>> argmax_;     // maxpool layers
  std::vector<std::vector<float>> mask_;         // dropout layers
  std::vector<std::vector<float>> pre_;          // dense/conv2d with gelu: the pre-activation (gelu' needs it)
  std::vector<std::vector<float>> bnSaved_;      // batchnorm: the forward's mean and inverse std (2C)
  // a residual block's end marker: the gradient its shortcut sends to the block's input, which the begin
  // marker adds to the one through the block's layers
  std::vector<std::vector<float>> shortcutGrad_;
  std::vector<size_t> endOf_;                    // a block's begin marker -> its end marker

  void residualForward(const LayerPlan& lp, const float* params, float* y, const float* x, int n);
  void residualBackward(const LayerPlan& lp, const float* params, float* dParams, float* dIn, float* dOut, int n);
  bool lastTraining_ = false;                    // the last forward's mode (batchnorm's backward)
  std::vector<ConvScratch> convScratch_;
  std::vector<ConvGeometry> convGeom_;
  std::vector<PoolGeometry> poolGeom_;
};

}  // namespace nnstudio::cpu
