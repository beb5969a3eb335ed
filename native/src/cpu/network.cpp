// The CPU network (see network.h).
#include "cpu/network.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "spec/rng.h"

namespace nnstudio::cpu {

namespace {

// a residual block's projection: a 1x1 convolution, no padding, from the block's input to its output
ConvGeometry projectionGeometry(const LayerPlan& lp) {
  ConvGeometry g;
  g.C = lp.inC; g.H = lp.inH; g.W = lp.inW;
  g.F = lp.outC; g.OH = lp.outH; g.OW = lp.outW;
  g.kh = g.kw = 1;
  g.stride = lp.stride;
  return g;
}

}  // namespace

Network::Network(const ModelSpec& spec, int maxBatch, ThreadPool& pool, bool inputGradient)
    : plan_(planNetwork(spec)), pool_(pool), maxBatch_(std::max(maxBatch, 1)), inputGradient_(inputGradient) {
  const size_t L = plan_.layers.size();
  out_.assign(L, nullptr);
  grad_.assign(L, nullptr);
  needInputGrad_.assign(L, false);
  poolFused_.assign(L, false);
  argmax_.resize(L);
  mask_.resize(L);
  pre_.resize(L);
  bnSaved_.resize(L);
  shortcutGrad_.resize(L);
  endOf_.assign(L, 0);
  for (size_t i = 0; i < L; ++i)
    if (plan_.layers[i].blockEnd) endOf_[size_t(plan_.layers[i].blockBegin)] = i;
  convScratch_.resize(L);
  convGeom_.resize(L);
  poolGeom_.resize(L);
  if (inputGradient_) inputGrad_.assign(size_t(maxBatch_) * size_t(plan_.inputSize), 0.0f);

  bool paramsBefore = false;
  for (size_t i = 0; i < L; ++i) {
    const LayerPlan& lp = plan_.layers[i];
    needInputGrad_[i] = inputGradient_ || paramsBefore;
    paramsBefore = paramsBefore || lp.hasParams;
    const size_t size = size_t(maxBatch_) * size_t(lp.outSize);
    const bool begin = lp.kind == LayerKind::Residual && !lp.blockEnd;
    if (lp.kind == LayerKind::Flatten || begin) {
      // same memory, new shape (a block's begin: the same tensor)
      out_[i] = nullptr;  // resolved in forward (layer 0 aliases the caller's input)
      grad_[i] = i == 0 ? (inputGradient_ ? inputGrad_.data() : nullptr) : grad_[i - 1];
    } else {
      storage_.emplace_back(size, 0.0f);
      out_[i] = storage_.back().data();
      storage_.emplace_back(size, 0.0f);
      grad_[i] = storage_.back().data();
    }
    switch (lp.kind) {
      case LayerKind::Conv2D: {
        ConvGeometry& g = convGeom_[i];
        g.C = lp.inC; g.H = lp.inH; g.W = lp.inW;
        g.F = lp.outC; g.OH = lp.outH; g.OW = lp.outW;
        g.kh = lp.kh; g.kw = lp.kw; g.stride = lp.stride; g.padTop = lp.padTop; g.padLeft = lp.padLeft;
        convScratch_[i].reserve(g, pool_.size(), needInputGrad_[i]);
        break;
      }
      case LayerKind::MaxPool2D:
      case LayerKind::AvgPool2D: {
        PoolGeometry& g = poolGeom_[i];
        g.C = lp.inC; g.H = lp.inH; g.W = lp.inW; g.OH = lp.outH; g.OW = lp.outW;
        g.size = lp.kh; g.stride = lp.stride;
        if (lp.kind == LayerKind::MaxPool2D) argmax_[i].assign(size, 0);
        break;
      }
      case LayerKind::Dropout:
        mask_[i].assign(size, 1.0f);
        break;
      case LayerKind::BatchNorm:
        bnSaved_[i].assign(2 * size_t(lp.inC), 0.0f);
        break;
      case LayerKind::Residual:
        if (!lp.blockEnd) break;
        // the shortcut's input gradient has the block's input shape
        if (needInputGrad_[size_t(lp.blockBegin)])
          shortcutGrad_[i].assign(size_t(maxBatch_) * size_t(plan_.layers[size_t(lp.blockBegin)].inSize), 0.0f);
        if (lp.projection) {
          convGeom_[i] = projectionGeometry(lp);
          convScratch_[i].reserve(convGeom_[i], pool_.size(), needInputGrad_[size_t(lp.blockBegin)]);
        }
        break;
      default:
        break;
    }
    if ((lp.kind == LayerKind::Dense || lp.kind == LayerKind::Conv2D) && lp.activation == ActivationFn::GELU)
      pre_[i].assign(size, 0.0f);
  }
  // (a gelu conv keeps its pre-activation, which the fused pool would never see: no fusion then)
  for (size_t i = 0; i + 1 < L; ++i)
    poolFused_[i] = plan_.layers[i].kind == LayerKind::Conv2D && plan_.layers[i].activation != ActivationFn::GELU &&
                    (plan_.layers[i + 1].kind == LayerKind::MaxPool2D || plan_.layers[i + 1].kind == LayerKind::AvgPool2D);
}

// ---- forward ----

const float* Network::forward(const float* params, const float* input, int n, bool training, uint64_t dropoutSeed,
                              float* stats) {
  // the buffers hold maxBatch rows
  if (n > maxBatch_)
    throw EngineError("network: a batch of " + std::to_string(n) + " rows for " + std::to_string(maxBatch_) + " (internal error)");
  input_ = input;
  lastTraining_ = training;
  const float* x = input;
  for (size_t i = 0; i < plan_.layers.size(); ++i) {
    const LayerPlan& lp = plan_.layers[i];
    if (lp.kind == LayerKind::Flatten || (lp.kind == LayerKind::Residual && !lp.blockEnd)) {
      out_[i] = const_cast<float*>(x);  // never written through: flatten and a block's begin are the identity
      continue;
    }
    float* y = out_[i];
    const bool gelu = !pre_[i].empty();  // dense/conv2d with gelu: the linear part into pre_, then gelu
    switch (lp.kind) {
      case LayerKind::Dense: {
        float* z = gelu ? pre_[i].data() : y;
        dense_forward(pool_, z, x, params + lp.weightOffset, params + lp.biasOffset, n, int(lp.inSize), int(lp.outSize));
        activation_forward(y, z, n, lp.outSize, lp.activation, lp.alpha);
        break;
      }
      case LayerKind::Conv2D:
        if (poolFused_[i]) {
          // conv + activation + pool per sample; the pool layer i+1 is done with it
          FusedPool fused;
          fused.kind = plan_.layers[i + 1].kind;
          fused.geometry = poolGeom_[i + 1];
          fused.out = out_[i + 1];
          fused.argmax = argmax_[i + 1].data();
          conv2d_forward(pool_, convScratch_[i], y, x, params + lp.weightOffset, params + lp.biasOffset, n,
                         convGeom_[i], lp.activation, lp.alpha, &fused);
          ++i;
          y = out_[i];
        } else if (gelu) {
          conv2d_forward(pool_, convScratch_[i], pre_[i].data(), x, params + lp.weightOffset, params + lp.biasOffset, n,
                         convGeom_[i], ActivationFn::Linear, lp.alpha);
          activation_forward(y, pre_[i].data(), n, lp.outSize, ActivationFn::GELU, lp.alpha);
        } else {
          conv2d_forward(pool_, convScratch_[i], y, x, params + lp.weightOffset, params + lp.biasOffset, n,
                         convGeom_[i], lp.activation, lp.alpha);
        }
        break;
      case LayerKind::MaxPool2D:
        maxpool_forward(pool_, y, argmax_[i].data(), x, n, poolGeom_[i]);
        break;
      case LayerKind::AvgPool2D:
        avgpool_forward(pool_, y, x, n, poolGeom_[i]);
        break;
      case LayerKind::Dropout:
        if (training && lp.rate > 0.0f) {
          dropout_forward(pool_, y, mask_[i].data(), x, n, lp.outSize, lp.rate, mixSeed(dropoutSeed, uint64_t(i)));
        } else {
          std::fill(mask_[i].begin(), mask_[i].begin() + int64_t(n) * lp.outSize, 1.0f);
          std::memcpy(y, x, sizeof(float) * size_t(n) * size_t(lp.outSize));
        }
        break;
      case LayerKind::Activation:
        activation_forward(y, x, n, lp.outSize, lp.activation, lp.alpha);
        break;
      case LayerKind::BatchNorm: {
        const BatchNormArgs a = batchNormArgs(lp, params, n);
        const float* running = params + lp.statsOffset;
        if (training)
          batchnorm_forward_train(pool_, y, x, bnSaved_[i].data(), stats ? stats + lp.statsOffset : nullptr,
                                  stats ? stats + lp.statsOffset + lp.inC : nullptr, a);
        else
          batchnorm_forward_eval(pool_, y, x, bnSaved_[i].data(), running, running + lp.inC, a);
        break;
      }
      case LayerKind::GlobalAvgPool:
        global_avgpool_forward(pool_, y, x, n, lp.inC, lp.spatial);
        break;
      case LayerKind::Residual:
        residualForward(lp, params, y, x, n);
        break;
      case LayerKind::Flatten:
        break;
    }
    x = y;
  }
  return x;
}

double Network::loss(const LossTargets& targets, int n, bool gradient, LossCounts* counts) {
  float* head = grad_.back();
  if (gradient && !head) gradient = false;  // a network of flatten layers only: nothing to train
  return loss_forward_backward(plan_, out_.back(), targets, n, int(plan_.outputWidth), gradient ? head : nullptr,
                               counts);
}

// A block's end: y = x (its layers' output) + the shortcut of the block's input.
void Network::residualForward(const LayerPlan& lp, const float* params, float* y, const float* x, int n) {
  const size_t begin = size_t(lp.blockBegin);
  const float* blockIn = begin == 0 ? input_ : out_[begin - 1];
  const int64_t count = int64_t(n) * lp.outSize;
  if (lp.projection) {
    const size_t li = size_t(&lp - plan_.layers.data());
    conv2d_forward(pool_, convScratch_[li], y, blockIn, params + lp.weightOffset, params + lp.biasOffset, n,
                   convGeom_[li], ActivationFn::Linear, lp.alpha);
    for (int64_t k = 0; k < count; ++k) y[k] += x[k];
  } else {
    for (int64_t k = 0; k < count; ++k) y[k] = x[k] + blockIn[k];
  }
}

// The end's backward: dOut goes unchanged to the block's layers and to the shortcut; the projection's
// weight and bias gradients, and its input gradient (kept for the begin marker).
void Network::residualBackward(const LayerPlan& lp, const float* params, float* dParams, float* dIn, float* dOut,
                               int n) {
  const size_t li = size_t(&lp - plan_.layers.data());
  const size_t begin = size_t(lp.blockBegin);
  const int64_t count = int64_t(n) * lp.outSize;
  if (dIn) std::memcpy(dIn, dOut, sizeof(float) * size_t(count));
  float* keep = shortcutGrad_[li].empty() ? nullptr : shortcutGrad_[li].data();
  if (!lp.projection) {
    if (keep) std::memcpy(keep, dOut, sizeof(float) * size_t(count));
    return;
  }
  const float* blockIn = begin == 0 ? input_ : out_[begin - 1];
  conv2d_backward(pool_, convScratch_[li], keep, dParams + lp.weightOffset, dParams + lp.biasOffset, dOut, out_[li],
                  blockIn, params + lp.weightOffset, n, convGeom_[li], ActivationFn::Linear, lp.alpha);
}

// ---- backward ----

void Network::backward(const float* params, float* grads, int n) {
  float* dParams = grads;
  // batchnorm's running statistics are not trained: their gradient is 0 (the optimizers leave them be)
  for (const LayerPlan& lp : plan_.layers)
    if (lp.statsSize) std::fill_n(dParams + lp.statsOffset, lp.statsSize, 0.0f);
  for (size_t li = plan_.layers.size(); li-- > 0;) {
    const LayerPlan& lp = plan_.layers[li];
    if (!lp.hasParams && !needInputGrad_[li]) continue;  // nothing before it needs a gradient
    if (li > 0 && poolFused_[li - 1]) continue;          // the conv before runs this pool's backward
    const float* x = li == 0 ? input_ : out_[li - 1];
    float* dIn = needInputGrad_[li] ? (li == 0 ? inputGrad_.data() : grad_[li - 1]) : nullptr;
    float* dOut = grad_[li];
    const float* y = out_[li];
    const bool gelu = !pre_[li].empty();
    if (gelu) gelu_backward(dOut, dOut, pre_[li].data(), int64_t(n) * lp.outSize);  // now d(pre-activation)
    const ActivationFn act = gelu ? ActivationFn::Linear : lp.activation;
    switch (lp.kind) {
      case LayerKind::Dense:
        activation_backward(dOut, dOut, y, n, lp.outSize, act, lp.alpha);
        dense_backward_weights(pool_, dParams + lp.weightOffset, dParams + lp.biasOffset, dOut, x, n, int(lp.inSize),
                               int(lp.outSize));
        if (dIn) dense_backward_input(pool_, dIn, dOut, params + lp.weightOffset, n, int(lp.inSize), int(lp.outSize));
        break;
      case LayerKind::Conv2D: {
        FusedPool fused;
        if (poolFused_[li]) {
          fused.kind = plan_.layers[li + 1].kind;
          fused.geometry = poolGeom_[li + 1];
          fused.argmax = argmax_[li + 1].data();
          fused.dOut = grad_[li + 1];
        }
        conv2d_backward(pool_, convScratch_[li], dIn, dParams + lp.weightOffset, dParams + lp.biasOffset, dOut, y, x,
                        params + lp.weightOffset, n, convGeom_[li], act, lp.alpha,
                        poolFused_[li] ? &fused : nullptr);
        break;
      }
      case LayerKind::MaxPool2D:
        maxpool_backward(pool_, dIn, dOut, argmax_[li].data(), n, poolGeom_[li]);
        break;
      case LayerKind::AvgPool2D:
        avgpool_backward(pool_, dIn, dOut, n, poolGeom_[li]);
        break;
      case LayerKind::Dropout:
        dropout_backward(pool_, dIn, dOut, mask_[li].data(), n, lp.outSize);
        break;
      case LayerKind::Activation:
        if (lp.activation == ActivationFn::GELU) gelu_backward(dIn, dOut, x, int64_t(n) * lp.outSize);
        else activation_backward(dIn, dOut, y, n, lp.outSize, lp.activation, lp.alpha);
        break;
      case LayerKind::BatchNorm:
        batchnorm_backward(pool_, dIn, lp.affine ? dParams + lp.weightOffset : nullptr,
                           lp.affine ? dParams + lp.biasOffset : nullptr, dOut, x, bnSaved_[li].data(),
                           batchNormArgs(lp, params, n), lastTraining_);
        break;
      case LayerKind::GlobalAvgPool:
        global_avgpool_backward(pool_, dIn, dOut, n, lp.inC, lp.spatial);
        break;
      case LayerKind::Residual:
        if (lp.blockEnd) {
          residualBackward(lp, params, dParams, dIn, dOut, n);
        } else if (dIn) {
          // dIn is dOut's memory (the begin aliases its input): add what the shortcut sent back
          const float* shortcut = shortcutGrad_[endOf_[li]].data();
          for (int64_t k = 0, count = int64_t(n) * lp.outSize; k < count; ++k) dIn[k] += shortcut[k];
        }
        break;
      case LayerKind::Flatten:
        break;  // dIn and dOut are the same memory
    }
  }
}

}  // namespace nnstudio::cpu
