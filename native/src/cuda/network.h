// A network on the GPU: the resolved plan plus every per-layer device buffer, allocated once for the
// largest batch so that a step allocates nothing and its launches can be captured in a CUDA graph.
// Walks the layers forward and backward like cpu/network.h, with the fusions of kernels.h: bias and
// activation in the producing kernel, and each activation's backward in the next layer's input-gradient
// kernel where that layer can take it (dense, conv2d, pools); a conv followed by a max pool runs as one
// kernel that never stores the conv's output where that pays (conv2d_pool.h), and a small dense head
// runs its forward, the loss and its backward as one kernel in training steps (dense_head.cu). A batchnorm
// runs the elementwise activation after it, and a max pool whose windows tile the input after that; a
// residual block's sum runs the activation after the block.
// Which pairs fuse is the chooser's (kernel_choice.h); NNSTUDIO_CUDA_FUSION=0 turns the conv + pool, batchnorm
// + pool and head fusions off, =1 on wherever supported.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/buffer.h"
#include "cuda/kernel_overrides.h"
#include "cuda/kernels.h"
#include "spec/model.h"

namespace nnstudio::cuda {

class Network {
 public:
  // inputGradient: also compute dLoss/dInput (tests only; training never needs it).
  // trainable = false: forward only (evaluation), no gradient buffers. weightedLoss: the loss will take
  // class weights (which the fused head does not). precision: the convolutions' arithmetic (engine.h).
  Network(const ModelSpec& spec, int maxBatch, bool inputGradient = false, bool trainable = true,
          bool weightedLoss = false, Precision precision = Precision::Fp32);

  const NetworkPlan& plan() const { return plan_; }
  int maxBatch() const { return maxBatch_; }
  int outputWidth() const { return int(plan_.outputWidth); }
  size_t deviceBytes() const { return bytes_; }

  // Enqueues every layer on input (n, inputSize), which must stay valid until backward(); returns the
  // head's outputs (n, outputWidth) (logits when the loss folds the head's activation). Dropout draws
  // its masks from runSeed and the step counter in `state` (training only). Batchnorm normalises with the
  // batch's statistics in training and then, when `stats` is given (the flat parameter vector, writable),
  // moves its running statistics there; in evaluation it uses the running statistics and writes nothing.
  const float* forward(cudaStream_t stream, const float* params, const float* input, int n, bool training,
                       uint64_t runSeed, const StepState* state, float* stats = nullptr);
  // The loss of the last forward against labels (n): seeds backward with dLoss/dOutputs and adds the
  // batch's loss to `state` (see loss_forward_backward).
  // With the fused head (headFused()), a training forward stops before the head and this only records
  // its arguments: the head's forward, the loss and the head's backward are backward()'s first launch
  // (which alone has the gradient buffer), so the outputs and `state` are ready once backward() ran.
  // The fused head serves unweighted classification with the cross-entropies, mse and mae only: a
  // regression, huber or class weights take the separate launches (loss.cu).
  void loss(cudaStream_t stream, const LossTargets& targets, int n, StepState* state);
  void loss(cudaStream_t stream, const int32_t* labels, int n, StepState* state);  // classification, unweighted
  // Writes dLoss/dParameters (parameterCount floats, overwritten; 0 for batchnorm's running statistics)
  // for the last forward + loss.
  void backward(cudaStream_t stream, const float* params, float* grads, int n);
  bool headFused() const { return headFused_; }

  const float* outputs() const { return out_.back(); }
  const float* inputGradient() const { return inputGrad_.get(); }  // (n, inputSize), when enabled

 private:
  NetworkPlan plan_;
  int maxBatch_ = 0;
  bool inputGradient_ = false;
  bool trainable_ = true;  // false: no gradient buffers nor dropout masks (evaluation only)
  Precision precision_ = Precision::Fp32;
  size_t bytes_ = 0;
  const float* input_ = nullptr;
  bool headFused_ = false;                    // the last dense layer, loss and backward in one kernel
  bool headPending_ = false;                  // the last forward left the fused head to backward()
  const int32_t* headLabels_ = nullptr;       // its arguments, from loss()
  StepState* headState_ = nullptr;
  std::vector<DeviceBuffer<float>> storage_;  // outputs and gradients
  std::vector<float*> out_, grad_;            // per layer (n, outSize); flatten and a block's begin alias their input
  std::vector<bool> needInputGrad_;           // does layer i have to produce dLoss/dInput?
  std::vector<bool> gatedByNext_;             // layer i's activation backward is done by the next layer
  std::vector<bool> poolFused_;               // conv i and max pool i+1 run as one kernel
  std::vector<bool> bnActFused_;              // batchnorm i's kernels apply (and differentiate) activation i+1
  std::vector<bool> resActFused_;             // residual end i's sum applies (and differentiates) activation i+1
  std::vector<bool> bnPoolFused_;             // batchnorm i (with activation i+1) runs max pool i+2 too
  std::vector<bool> bnConvWgrad_;             // batchnorm i's backward takes conv i-1's weight gradient
  std::vector<DeviceBuffer<uint8_t>> windows_;  // fused conv i's pool windows' argmax bytes (chooseConvPoolWindowBytes)
  std::vector<ActivationFn> inAct_;           // the activation layer i's input-gradient kernel applies
  std::vector<float> inAlpha_;
  DeviceBuffer<float> inputGrad_;
  std::vector<DeviceBuffer<int32_t>> argmax_;   // maxpool layers
  std::vector<DeviceBuffer<float>> mask_;       // dropout layers
  std::vector<DeviceBuffer<float>> pre_;        // dense/conv2d with gelu: the pre-activation (gelu' needs it)
  std::vector<DeviceBuffer<float>> bnSaved_;    // batchnorm: the forward's mean and inverse std (2C)
  // a residual block's end marker: the gradient its shortcut sends to the block's input (the begin
  // marker, which aliases its input like flatten, adds it); endOf_ maps a begin marker to its end
  std::vector<DeviceBuffer<float>> shortcutGrad_;
  std::vector<size_t> endOf_;
  bool lastTraining_ = false;                   // the last forward's mode (batchnorm's backward)
  DeviceBuffer<LossPartials> lossPartials_;     // the spread loss's block sums (loss_forward_backward)
  DeviceBuffer<float> workspace_;               // weight-gradient partial sums, shared (launches are serial)
  // The weight gradients of dense and conv layers (and projections) run on a second stream, beside the input
  // gradients that the rest of the backward waits for: forked where their dOut is ready, joined at the end of
  // backward(), with a workspace of their own (NNSTUDIO_CUDA_WEIGHT_STREAM=0 keeps them on the step's stream).
  bool weightStream_ = true;
  Stream weights_;
  Event fork_, join_;
  DeviceBuffer<float> weightsWorkspace_;
  bool forked_ = false;                         // this backward() has forked
  // backward()'s layers, last to first
  void backwardLayers(cudaStream_t stream, const float* params, float* grads, int n);
  // `stream` or, with weightStream_, the weight stream, forked from `stream` as it stands
  cudaStream_t weightGradientStream(cudaStream_t stream);
  float* weightGradientWorkspace() const { return (weightStream_ ? weightsWorkspace_ : workspace_).get(); }
  std::vector<ConvGeometry> convGeom_;
  std::vector<PoolGeometry> poolGeom_;

  // batchnorm i's conv before (layer i-1, bnConvWgrad_): its input and weight gradient; empty when not fused
  BatchNormConvWgrad fusedConvWgrad(size_t i, float* grads) const;
  // batchnorm i's fused max pool (layer i+2, bnPoolFused_): its geometry and buffers; empty when not fused
  BatchNormPool fusedPool(size_t i) const;
  // the first conv + max pool's window bytes (windows_), where chosen
  void allocateWindowBytes(const KernelOverrides& overrides);
  // act: the activation layer after the block when it is fused (resActFused_), else the identity
  void residualForward(cudaStream_t stream, size_t i, const float* params, float* y, const float* x, int n,
                       ActivationFn act, float alpha);
  void residualBackward(cudaStream_t stream, size_t i, const float* params, float* grads, float* dIn, int n);
};

}  // namespace nnstudio::cuda
