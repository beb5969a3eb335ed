// The GPU network (see network.h). Host code only: it enqueues the launchers of kernels.h.
#include "cuda/network.h"

#include <algorithm>

#include "cuda/conv2d_pool.h"
#include "cuda/kernel_choice.h"

namespace nnstudio::cuda {

namespace {

bool elementwise(ActivationFn fn) { return fn != ActivationFn::Softmax; }

// gelu's derivative needs its input: a layer with gelu keeps its pre-activation and never fuses its
// backward into a neighbour (gates, conv + pool, the dense head)
bool gelu(ActivationFn fn) { return fn == ActivationFn::GELU; }

// can this layer's input-gradient kernel apply the previous layer's activation backward?
bool takesGate(LayerKind kind) {
  return kind == LayerKind::Dense || kind == LayerKind::Conv2D || kind == LayerKind::MaxPool2D ||
         kind == LayerKind::AvgPool2D;
}

}  // namespace

Network::Network(const ModelSpec& spec, int maxBatch, bool inputGradient, bool trainable, bool weightedLoss,
                 Precision precision)
    : plan_(planNetwork(spec)), maxBatch_(std::max(maxBatch, 1)), inputGradient_(inputGradient && trainable),
      trainable_(trainable), precision_(precision) {
  const size_t L = plan_.layers.size();
  out_.assign(L, nullptr);
  grad_.assign(L, nullptr);
  needInputGrad_.assign(L, false);
  gatedByNext_.assign(L, false);
  inAct_.assign(L, ActivationFn::Linear);
  inAlpha_.assign(L, 0.0f);
  argmax_.resize(L);
  mask_.resize(L);
  pre_.resize(L);
  bnSaved_.resize(L);
  shortcutGrad_.resize(L);
  endOf_.assign(L, 0);
  convGeom_.resize(L);
  poolGeom_.resize(L);
  auto track = [&](size_t bytes) { bytes_ += bytes; };
  if (inputGradient_) {
    inputGrad_.allocate(size_t(maxBatch_) * size_t(plan_.inputSize));
    track(inputGrad_.bytes());
  }

  // geometry and which layers need an input gradient, then which conv + max pool pairs fuse
  poolFused_.assign(L, false);
  bool paramsBefore = false;
  for (size_t i = 0; i < L; ++i) {
    const LayerPlan& lp = plan_.layers[i];
    needInputGrad_[i] = inputGradient_ || paramsBefore;
    paramsBefore = paramsBefore || lp.hasParams;
    if (lp.kind == LayerKind::Conv2D) {
      ConvGeometry& g = convGeom_[i];
      g.C = lp.inC; g.H = lp.inH; g.W = lp.inW;
      g.F = lp.outC; g.OH = lp.outH; g.OW = lp.outW;
      g.kh = lp.kh; g.kw = lp.kw; g.stride = lp.stride; g.padTop = lp.padTop; g.padLeft = lp.padLeft;
    } else if (lp.kind == LayerKind::MaxPool2D || lp.kind == LayerKind::AvgPool2D) {
      PoolGeometry& g = poolGeom_[i];
      g.C = lp.inC; g.H = lp.inH; g.W = lp.inW; g.OH = lp.outH; g.OW = lp.outW;
      g.size = lp.kh; g.stride = lp.stride;
    } else if (lp.projection) {
      // a residual block's shortcut: a 1x1 convolution, no padding, the block's input to its output
      ConvGeometry& g = convGeom_[i];
      g.C = lp.inC; g.H = lp.inH; g.W = lp.inW;
      g.F = lp.outC; g.OH = lp.outH; g.OW = lp.outW;
      g.kh = g.kw = 1; g.stride = lp.stride; g.padTop = g.padLeft = 0;
    }
    if (lp.blockEnd) endOf_[size_t(lp.blockBegin)] = i;
  }
  // the fusions are the chooser's (kernel_choice.h); asking for the caps here, before any capture, also
  // prepares the device for the kernels
  const DeviceCaps& caps = currentDeviceCaps();
  const KernelOverrides& overrides = kernelOverrides();
  for (size_t i = 0; i + 1 < L; ++i)
    poolFused_[i] = plan_.layers[i].kind == LayerKind::Conv2D && plan_.layers[i + 1].kind == LayerKind::MaxPool2D &&
                    !gelu(plan_.layers[i].activation) &&
                    chooseConvPoolFusion(overrides, convGeom_[i], poolGeom_[i + 1], plan_.layers[i].activation, maxBatch_);
  // batchnorm + an elementwise activation layer: one pass less each way over the activations (always pays:
  // the activation's own kernel reads and writes the whole tensor again)
  bnActFused_.assign(L, false);
  resActFused_.assign(L, false);
  for (size_t i = 0; i + 2 < L; ++i) {  // not the last layer: the loss may take over an output activation
    const LayerPlan& next = plan_.layers[i + 1];
    const bool fusable = next.kind == LayerKind::Activation && elementwise(next.activation) && !gelu(next.activation) &&
                         next.activation != ActivationFn::Linear;
    bnActFused_[i] = plan_.layers[i].kind == LayerKind::BatchNorm && fusable;
    // a residual block's sum + the activation after the block (a ResNet's ReLU): its backward, from the
    // activation's output, also takes the place of the end marker's copies of the gradient
    resActFused_[i] = plan_.layers[i].kind == LayerKind::Residual && plan_.layers[i].blockEnd && fusable;
  }
  // batchnorm + activation + a max pool whose windows tile the input (a ResNet's stem): the activation's
  // full tensor is never written nor read again (NNSTUDIO_CUDA_FUSION=0 or NNSTUDIO_CUDA_BN_POOL=0 keep the
  // three layers' kernels)
  bnPoolFused_.assign(L, false);
  for (size_t i = 0; i + 3 < L; ++i) {
    const LayerPlan& pool = plan_.layers[i + 2];
    bnPoolFused_[i] = bnActFused_[i] && overrides.fusion != Switch::Off && overrides.batchnormPool != Switch::Off &&
                      pool.kind == LayerKind::MaxPool2D && pool.stride == pool.kh;
  }
  // a one-channel 3x3 conv (a grayscale stem) before a batchnorm, whose input gradient nobody needs: the
  // batchnorm's backward sums the conv's weight gradient from its dx, which is then never stored, where the
  // chooser finds it pays (chooseBatchnormConvWgrad; NNSTUDIO_CUDA_BN_CONV_WGRAD=0 keeps them apart)
  bnConvWgrad_.assign(L, false);
  for (size_t i = 1; trainable && i < L; ++i) {
    const LayerPlan& conv = plan_.layers[i - 1];
    bnConvWgrad_[i] = plan_.layers[i].kind == LayerKind::BatchNorm && conv.kind == LayerKind::Conv2D &&
                      !needInputGrad_[i - 1] && conv.activation == ActivationFn::Linear && !poolFused_[i - 1] &&
                      batchnormConvWgradFits(convGeom_[i - 1], maxBatch_);
  }

  // the weight gradients' kernels take the weight stream's workspace when it runs, else the shared one (the
  // batchnorm and the fused conv + pool weight gradient always take the shared one)
  weightStream_ = trainable && overrides.weightStream != Switch::Off;
  size_t workspace = 0, weightsWorkspace = 0;
  auto weightGradientNeeds = [&](size_t floats) {
    size_t& need = weightStream_ ? weightsWorkspace : workspace;
    need = std::max(need, floats);
  };
  storage_.reserve(2 * L);
  auto allocate = [&](size_t count) {
    storage_.emplace_back(count, "allocating the layers' activations");
    track(count * sizeof(float));
    return storage_.back().get();
  };
  for (size_t i = 0; i < L; ++i) {
    const LayerPlan& lp = plan_.layers[i];
    const size_t size = size_t(maxBatch_) * size_t(lp.outSize);
    if (lp.kind == LayerKind::Flatten || (lp.kind == LayerKind::Residual && !lp.blockEnd)) {
      grad_[i] = i == 0 ? inputGrad_.get() : grad_[i - 1];
    } else if (poolFused_[i]) {
      // the conv's output is never stored; its gradient only when an input gradient needs it in full
      if (trainable && needInputGrad_[i]) grad_[i] = allocate(size);
    } else {
      out_[i] = allocate(size);
      if (trainable) grad_[i] = allocate(size);
    }
    if ((lp.kind == LayerKind::Dense || lp.kind == LayerKind::Conv2D) && gelu(lp.activation)) {
      pre_[i].allocate(size, "allocating the layers' activations");
      track(pre_[i].bytes());
    }
    if (lp.kind == LayerKind::BatchNorm) {
      bnSaved_[i].allocate(2 * size_t(lp.inC), "allocating batchnorm's statistics");
      track(bnSaved_[i].bytes());
      workspace = std::max(workspace, batchnorm_workspace(maxBatch_, lp.inC, lp.spatial));
    }
    if (!trainable) continue;
    switch (lp.kind) {
      case LayerKind::Dense:
        weightGradientNeeds(dense_weights_workspace(maxBatch_, int(lp.outSize)));
        break;
      case LayerKind::Conv2D:
        weightGradientNeeds(conv2d_weights_workspace(maxBatch_, convGeom_[i], precision_));
        if (poolFused_[i])
          workspace = std::max(workspace, conv2d_maxpool_weights_workspace(maxBatch_, convGeom_[i], poolGeom_[i + 1]));
        break;
      case LayerKind::Dropout:
        mask_[i].allocate(size);
        track(mask_[i].bytes());
        break;
      case LayerKind::Residual:
        if (!lp.blockEnd) break;
        if (needInputGrad_[size_t(lp.blockBegin)]) {
          shortcutGrad_[i].allocate(size_t(maxBatch_) * size_t(plan_.layers[size_t(lp.blockBegin)].inSize),
                                    "allocating the layers' activations");
          track(shortcutGrad_[i].bytes());
        }
        if (lp.projection) weightGradientNeeds(conv2d_weights_workspace(maxBatch_, convGeom_[i], precision_));
        break;
      default:
        break;
    }
  }
  allocateWindowBytes(overrides);
  for (size_t i = 0; i < L; ++i)
    if (plan_.layers[i].kind == LayerKind::MaxPool2D && (i == 0 || !windows_[i - 1].get())) {
      argmax_[i].allocate(size_t(maxBatch_) * size_t(plan_.layers[i].outSize));
      track(argmax_[i].bytes());
    }
  // the head: a dense layer with an elementwise activation (Linear when folded into the loss)
  const LayerPlan& head = plan_.layers.back();
  // (its loss math is the classifier's: labels, unweighted, no huber)
  const bool headLoss = !plan_.regression() && plan_.loss != LossKind::Huber && !weightedLoss;
  headFused_ = trainable && head.kind == LayerKind::Dense && headLoss && !gelu(head.activation) &&
               chooseDenseHeadFusion(caps, overrides, maxBatch_, head.inSize, head.outSize, head.activation);

  workspace_.allocate(workspace);
  track(workspace_.bytes());
  if (weightStream_) {
    weightsWorkspace_.allocate(weightsWorkspace, "allocating the weight gradients' partial sums");
    track(weightsWorkspace_.bytes());
  }
  if (trainable) {  // the spread loss's counter starts at zero (its last block resets it)
    lossPartials_.allocate(1, "allocating the loss's block sums");
    check(cudaMemset(lossPartials_.get(), 0, sizeof(LossPartials)), "clearing the loss's block sums");
    track(lossPartials_.bytes());
  }

  // activation fusion: a dense/conv layer's elementwise activation is differentiated by the next
  // non-flatten layer's input-gradient kernel when that layer takes a gate
  for (size_t i = 0; i < L; ++i) {
    const LayerPlan& lp = plan_.layers[i];
    if (lp.kind != LayerKind::Dense && lp.kind != LayerKind::Conv2D) continue;
    if (lp.activation == ActivationFn::Linear || !elementwise(lp.activation) || gelu(lp.activation)) continue;
    size_t next = i + 1;
    while (next < L && plan_.layers[next].kind == LayerKind::Flatten) ++next;
    if (next >= L || !takesGate(plan_.layers[next].kind) || !needInputGrad_[next]) continue;
    gatedByNext_[i] = true;
    inAct_[next] = lp.activation;
    inAlpha_[next] = lp.alpha;
  }
}

// A fused conv + max pool whose input gradient nobody needs (a first layer): the forward writes each window's
// argmax as a byte for the thin weight gradient instead of the int32 argmax, which is then not allocated (an
// evaluation network keeps the int32s: it trains nothing)
void Network::allocateWindowBytes(const KernelOverrides& overrides) {
  windows_.resize(plan_.layers.size());
  for (size_t i = 0; trainable_ && i + 1 < plan_.layers.size(); ++i) {
    if (!poolFused_[i] || needInputGrad_[i] || !chooseConvPoolWindowBytes(overrides, convGeom_[i], poolGeom_[i + 1]))
      continue;
    windows_[i].allocate(size_t(maxBatch_) * size_t(plan_.layers[i + 1].outSize), "allocating the pool's windows");
    bytes_ += windows_[i].bytes();
  }
}

// ---- forward ----

const float* Network::forward(cudaStream_t stream, const float* params, const float* input, int n, bool training,
                              uint64_t runSeed, const StepState* state, float* stats) {
  // the buffers hold maxBatch rows, and an evaluation network has no dropout masks
  if (n > maxBatch_ || (training && !trainable_))
    throw EngineError("network: a " + std::string(training ? "training" : "evaluation") + " batch of " + std::to_string(n) +
                      " rows for " + std::to_string(maxBatch_) + (trainable_ ? "" : ", evaluation only") + " (internal error)");
  input_ = input;
  lastTraining_ = training;
  headPending_ = training && headFused_;
  const float* x = input;
  for (size_t i = 0; i < plan_.layers.size(); ++i) {
    const LayerPlan& lp = plan_.layers[i];
    if (lp.kind == LayerKind::Flatten || (lp.kind == LayerKind::Residual && !lp.blockEnd)) {
      out_[i] = const_cast<float*>(x);  // same memory (new shape); never written through
      continue;
    }
    if (headPending_ && i + 1 == plan_.layers.size()) return out_[i];  // backward() runs the fused head
    float* y = out_[i];
    float* pre = pre_[i].get();  // dense/conv2d with gelu: the linear part goes here, then gelu into y
    switch (lp.kind) {
      case LayerKind::Dense:
        if (pre) {
          dense_forward(stream, pre, x, params + lp.weightOffset, params + lp.biasOffset, n, int(lp.inSize),
                        int(lp.outSize), ActivationFn::Linear, lp.alpha);
          activation_forward(stream, y, pre, n, lp.outSize, lp.activation, lp.alpha);
          break;
        }
        dense_forward(stream, y, x, params + lp.weightOffset, params + lp.biasOffset, n, int(lp.inSize),
                      int(lp.outSize), elementwise(lp.activation) ? lp.activation : ActivationFn::Linear, lp.alpha);
        if (!elementwise(lp.activation)) activation_forward(stream, y, y, n, lp.outSize, lp.activation, lp.alpha);
        break;
      case LayerKind::Conv2D:
        if (poolFused_[i]) {
          // conv + bias + activation + max pool: layer i+1 is done with it
          ++i;
          y = out_[i];
          uint8_t* windows = windows_[i - 1].get();
          conv2d_maxpool_forward(stream, y, windows ? nullptr : argmax_[i].get(), x, params + lp.weightOffset,
                                 params + lp.biasOffset, n, convGeom_[i - 1], poolGeom_[i], lp.activation, lp.alpha,
                                 windows);
          break;
        }
        if (pre) {
          conv2d_forward(stream, pre, x, params + lp.weightOffset, params + lp.biasOffset, n, convGeom_[i],
                         ActivationFn::Linear, lp.alpha, precision_);
          activation_forward(stream, y, pre, n, lp.outSize, lp.activation, lp.alpha);
          break;
        }
        conv2d_forward(stream, y, x, params + lp.weightOffset, params + lp.biasOffset, n, convGeom_[i],
                       elementwise(lp.activation) ? lp.activation : ActivationFn::Linear, lp.alpha, precision_);
        if (!elementwise(lp.activation)) activation_forward(stream, y, y, n, lp.outSize, lp.activation, lp.alpha);
        break;
      case LayerKind::MaxPool2D:
        maxpool_forward(stream, y, argmax_[i].get(), x, n, poolGeom_[i]);
        break;
      case LayerKind::AvgPool2D:
        avgpool_forward(stream, y, x, n, poolGeom_[i]);
        break;
      case LayerKind::Dropout:
        if (training) {
          // rate 0 draws a mask of ones, as the CPU's
          dropout_forward(stream, y, mask_[i].get(), x, n, lp.outSize, lp.rate, runSeed, uint64_t(i), state);
        } else {
          check(cudaMemcpyAsync(y, x, sizeof(float) * size_t(n) * size_t(lp.outSize), cudaMemcpyDeviceToDevice, stream),
                "dropout (evaluation)");
        }
        break;
      case LayerKind::Activation:
        activation_forward(stream, y, x, n, lp.outSize, lp.activation, lp.alpha);
        break;
      case LayerKind::BatchNorm: {
        const BatchNormArgs a = batchNormArgs(lp, params, n);
        float* saved = bnSaved_[i].get();
        BatchNormActivation act;
        const BatchNormPool pool = fusedPool(i);
        if (bnPoolFused_[i]) act.pool = &pool;  // so is the max pool i+2
        if (bnActFused_[i]) {  // the activation layer i+1 is done with it
          const LayerPlan& next = plan_.layers[++i];
          act.fn = next.activation;
          act.alpha = next.alpha;
          y = out_[i];
        }
        if (act.pool) y = out_[++i];
        if (training)
          batchnorm_forward_train(stream, y, x, saved, stats ? stats + lp.statsOffset : nullptr,
                                  stats ? stats + lp.statsOffset + lp.inC : nullptr, a, maxBatch_, workspace_.get(), act);
        else
          batchnorm_forward_eval(stream, y, x, saved, params + lp.statsOffset, params + lp.statsOffset + lp.inC, a, act);
        break;
      }
      case LayerKind::GlobalAvgPool:
        global_avgpool_forward(stream, y, x, n, lp.inC, lp.spatial);
        break;
      case LayerKind::Residual:
        if (resActFused_[i]) {  // the activation layer i+1 is done with it
          const LayerPlan& next = plan_.layers[i + 1];
          residualForward(stream, i, params, out_[i + 1], x, n, next.activation, next.alpha);
          y = out_[++i];
          break;
        }
        residualForward(stream, i, params, y, x, n, ActivationFn::Linear, 0.0f);
        break;
      case LayerKind::Flatten:
        break;
    }
    x = y;
  }
  return x;
}

void Network::loss(cudaStream_t stream, const LossTargets& targets, int n, StepState* state) {
  if (headPending_) {
    if (targets.classWeights || !targets.labels)
      throw EngineError("the fused head cannot take class weights or targets (internal error)");
    headLabels_ = targets.labels;
    headState_ = state;
    return;
  }
  const LossConfig config{plan_.loss, plan_.huberDelta, plan_.regression(), plan_.labelSmoothing};
  loss_forward_backward(stream, config, out_.back(), targets, n, int(plan_.outputWidth), grad_.back(), state,
                        lossPartials_.get());
}

void Network::loss(cudaStream_t stream, const int32_t* labels, int n, StepState* state) {
  LossTargets targets;
  targets.labels = labels;
  loss(stream, targets, n, state);
}

// ---- backward ----

void Network::backward(cudaStream_t stream, const float* params, float* grads, int n) {
  // batchnorm's running statistics are not trained: their gradient is 0 (the optimizers leave them be)
  for (const LayerPlan& lp : plan_.layers)
    if (lp.statsSize)
      check(cudaMemsetAsync(grads + lp.statsOffset, 0, sizeof(float) * lp.statsSize, stream),
            "zeroing batchnorm's statistics' gradients");
  forked_ = false;
  backwardLayers(stream, params, grads, n);
  if (forked_) {  // the weight stream's gradients are done before the step goes on
    check(cudaEventRecord(join_, weights_), "joining the weight gradients' stream");
    check(cudaStreamWaitEvent(stream, join_, 0), "joining the weight gradients' stream");
  }
}

cudaStream_t Network::weightGradientStream(cudaStream_t stream) {
  if (!weightStream_) return stream;
  check(cudaEventRecord(fork_, stream), "forking the weight gradients' stream");
  check(cudaStreamWaitEvent(weights_, fork_, 0), "forking the weight gradients' stream");
  forked_ = true;
  return weights_;
}

void Network::backwardLayers(cudaStream_t stream, const float* params, float* grads, int n) {
  for (size_t li = plan_.layers.size(); li-- > 0;) {
    const LayerPlan& lp = plan_.layers[li];
    if (!lp.hasParams && !needInputGrad_[li]) continue;  // nothing before it needs a gradient
    if (li > 0 && poolFused_[li - 1]) continue;          // the fused conv before runs this pool's backward
    if (li > 0 && bnActFused_[li - 1]) continue;         // the batchnorm before differentiates this activation
    if (li > 0 && resActFused_[li - 1]) continue;        // so does a residual block's end before
    if (li > 1 && bnPoolFused_[li - 2]) continue;        // a batchnorm two layers before runs this max pool's
    if (li + 1 < plan_.layers.size() && bnConvWgrad_[li + 1]) continue;  // the batchnorm after: its weight gradient
    const float* x = li == 0 ? input_ : out_[li - 1];
    float* dIn = needInputGrad_[li] ? (li == 0 ? inputGrad_.get() : grad_[li - 1]) : nullptr;
    float* dOut = grad_[li];
    const float* y = out_[li];
    if (headPending_ && li + 1 == plan_.layers.size()) {
      dense_head_fused(stream, plan_.loss, out_[li], grads + lp.weightOffset, grads + lp.biasOffset, dIn, x,
                       params + lp.weightOffset, params + lp.biasOffset, headLabels_, n, int(lp.inSize),
                       int(lp.outSize), lp.activation, lp.alpha, inAct_[li], inAlpha_[li], headState_, 0,
                       plan_.labelSmoothing);
      continue;
    }
    if (pre_[li].get()) gelu_backward(stream, dOut, dOut, pre_[li].get(), int64_t(n) * lp.outSize);  // d(pre-act.)
    const ActivationFn act = pre_[li].get() ? ActivationFn::Linear : lp.activation;
    switch (lp.kind) {
      case LayerKind::Dense:
        if (!gatedByNext_[li]) activation_backward(stream, dOut, dOut, y, n, lp.outSize, act, lp.alpha);
        dense_backward_weights(weightGradientStream(stream), grads + lp.weightOffset, grads + lp.biasOffset, dOut, x,
                               n, int(lp.inSize), int(lp.outSize), weightGradientWorkspace());
        if (dIn)
          dense_backward_input(stream, dIn, dOut, params + lp.weightOffset, x, n, int(lp.inSize), int(lp.outSize),
                               inAct_[li], inAlpha_[li]);
        break;
      case LayerKind::Conv2D:
        if (poolFused_[li]) {
          const float* pooled = out_[li + 1];
          const int32_t* argmax = argmax_[li + 1].get();
          if (!dIn) {
            // the pre-activation gradient is one value per window: the weight gradient reads it sparsely
            conv2d_maxpool_backward_weights(stream, grads + lp.weightOffset, grads + lp.biasOffset, grad_[li + 1],
                                            pooled, argmax, x, n, convGeom_[li], poolGeom_[li + 1], lp.activation,
                                            lp.alpha, workspace_.get(), windows_[li].get());
            break;
          }
          maxpool_backward_from_output(stream, dOut, grad_[li + 1], argmax, pooled, n, poolGeom_[li + 1],
                                       lp.activation, lp.alpha);
        } else if (!gatedByNext_[li]) {
          activation_backward(stream, dOut, dOut, y, n, lp.outSize, act, lp.alpha);
        }
        conv2d_backward_weights(weightGradientStream(stream), grads + lp.weightOffset, grads + lp.biasOffset, dOut, x,
                                n, convGeom_[li], weightGradientWorkspace(), precision_);
        if (dIn)
          conv2d_backward_input(stream, dIn, dOut, params + lp.weightOffset, x, n, convGeom_[li], inAct_[li],
                                inAlpha_[li], precision_);
        break;
      case LayerKind::MaxPool2D:
        // the gate act'(input) is needed only at each window's argmax, where the input equals the pooled
        // output: reading that instead of the (4x larger) input saves a pass over it
        maxpool_backward_from_output(stream, dIn, dOut, argmax_[li].get(), y, n, poolGeom_[li], inAct_[li],
                                     inAlpha_[li]);
        break;
      case LayerKind::AvgPool2D:
        avgpool_backward(stream, dIn, dOut, x, n, poolGeom_[li], inAct_[li], inAlpha_[li]);
        break;
      case LayerKind::Dropout:
        dropout_backward(stream, dIn, dOut, mask_[li].get(), n, lp.outSize);
        break;
      case LayerKind::Activation:
        if (gelu(lp.activation)) gelu_backward(stream, dIn, dOut, x, int64_t(n) * lp.outSize);
        else activation_backward(stream, dIn, dOut, y, n, lp.outSize, lp.activation, lp.alpha);
        break;
      case LayerKind::BatchNorm: {
        BatchNormActivation act;
        if (bnActFused_[li]) {  // the gradient arrives at the fused activation's output
          const LayerPlan& next = plan_.layers[li + 1];
          act = BatchNormActivation{next.activation, next.alpha, out_[li + 1]};
          dOut = grad_[li + 1];
        }
        const BatchNormPool pool = fusedPool(li);
        if (bnPoolFused_[li]) act.pool = &pool;  // or at the fused max pool's
        const BatchNormConvWgrad conv = fusedConvWgrad(li, grads);
        if (bnConvWgrad_[li]) {  // dx goes into the conv's weight gradient, not to memory
          act.convWgrad = &conv;
          dIn = nullptr;
        }
        batchnorm_backward(stream, dIn, lp.affine ? grads + lp.weightOffset : nullptr,
                           lp.affine ? grads + lp.biasOffset : nullptr, dOut, x, bnSaved_[li].get(),
                           batchNormArgs(lp, params, n), lastTraining_, maxBatch_, workspace_.get(), act);
        break;
      }
      case LayerKind::GlobalAvgPool:
        global_avgpool_backward(stream, dIn, dOut, n, lp.inC, lp.spatial);
        break;
      case LayerKind::Residual:
        if (lp.blockEnd)
          residualBackward(stream, li, params, grads, dIn, n);
        else if (dIn)  // dIn is dOut's memory (the begin aliases its input): add the shortcut's gradient
          residual_add(stream, dIn, dIn, shortcutGrad_[endOf_[li]].get(), int64_t(n) * lp.outSize);
        break;
      case LayerKind::Flatten:
        break;  // dIn and dOut are the same memory
    }
  }
}

// batchnorm i's fused conv weight gradient (network.h)
BatchNormConvWgrad Network::fusedConvWgrad(size_t i, float* grads) const {
  if (!bnConvWgrad_[i]) return {};
  const LayerPlan& lp = plan_.layers[i - 1];
  const ConvGeometry& g = convGeom_[i - 1];
  BatchNormConvWgrad conv;
  conv.image = i == 1 ? input_ : out_[i - 2];
  conv.dWeight = grads + lp.weightOffset;
  conv.dBias = grads + lp.biasOffset;
  conv.H = g.H;
  conv.W = g.W;
  conv.OW = g.OW;
  conv.padTop = g.padTop;
  conv.padLeft = g.padLeft;
  return conv;
}

// batchnorm i's fused max pool (network.h)
BatchNormPool Network::fusedPool(size_t i) const {
  if (!bnPoolFused_[i]) return {};
  BatchNormPool pool;
  pool.geometry = poolGeom_[i + 2];
  pool.pooled = out_[i + 2];
  pool.argmax = argmax_[i + 2].get();
  pool.dPooled = grad_[i + 2];  // read by the backward only
  return pool;
}

// ---- residual blocks ----

// The end marker i: y = act(x (the block's layers' output) + the shortcut of the block's input).
void Network::residualForward(cudaStream_t stream, size_t i, const float* params, float* y, const float* x, int n,
                              ActivationFn act, float alpha) {
  const LayerPlan& lp = plan_.layers[i];
  const size_t begin = size_t(lp.blockBegin);
  const float* blockIn = begin == 0 ? input_ : out_[begin - 1];
  const int64_t count = int64_t(n) * lp.outSize;
  if (!lp.projection) return residual_add(stream, y, x, blockIn, count, act, alpha);
  conv2d_forward(stream, y, blockIn, params + lp.weightOffset, params + lp.biasOffset, n, convGeom_[i],
                 ActivationFn::Linear, 0.0f, precision_);
  residual_add(stream, y, y, x, count, act, alpha);
}

// Its backward: dOut goes unchanged to the block's layers (dIn) and to the shortcut: kept as is for the
// identity, through the projection's kernels otherwise (its weight and bias gradients, and its input
// gradient when the begin marker needs one). With the activation after the block fused, dOut is first
// differentiated through it.
void Network::residualBackward(cudaStream_t stream, size_t i, const float* params, float* grads, float* dIn, int n) {
  const LayerPlan& lp = plan_.layers[i];
  const float* dOut = grad_[i];
  float* keep = shortcutGrad_[i].get();
  if (resActFused_[i]) {
    // the fused activation's backward writes dOut where it goes: the block's layers and the shortcut (its
    // kept gradient; for a projection, this marker's own gradient, which the projection's kernels read)
    const LayerPlan& next = plan_.layers[i + 1];
    residual_activation_backward(stream, dIn, lp.projection ? grad_[i] : keep, grad_[i + 1], out_[i + 1],
                                 int64_t(n) * lp.outSize, next.activation, next.alpha);
    if (!lp.projection) return;
  } else {
    const size_t bytes = sizeof(float) * size_t(n) * size_t(lp.outSize);
    if (dIn) check(cudaMemcpyAsync(dIn, dOut, bytes, cudaMemcpyDeviceToDevice, stream), "residual backward");
    if (!lp.projection) {
      if (keep) check(cudaMemcpyAsync(keep, dOut, bytes, cudaMemcpyDeviceToDevice, stream), "residual backward");
      return;
    }
  }
  const size_t begin = size_t(lp.blockBegin);
  const float* blockIn = begin == 0 ? input_ : out_[begin - 1];
  conv2d_backward_weights(weightGradientStream(stream), grads + lp.weightOffset, grads + lp.biasOffset, dOut, blockIn,
                          n, convGeom_[i], weightGradientWorkspace(), precision_);
  if (keep)
    conv2d_backward_input(stream, keep, dOut, params + lp.weightOffset, blockIn, n, convGeom_[i], ActivationFn::Linear,
                          0.0f, precision_);
}

}  // namespace nnstudio::cuda
