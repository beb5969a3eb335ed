// Internal helpers shared by shape inference and the backends: geometry of each layer, resolved once
// from the spec so that every backend walks the same plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nnstudio/engine.h"

namespace nnstudio {

// One layer with its shapes resolved (per sample).
struct LayerPlan {
  LayerKind kind = LayerKind::Dense;
  std::string label;                  // "conv2d #1"
  int index = 0;                      // position in spec.layers (0-based)
  ActivationFn activation = ActivationFn::Linear;  // dense/conv2d/activation; after folding into the loss
  float alpha = 0.01f;
  std::vector<int> inShape, outShape; // [C,H,W] or [F]
  int64_t inSize = 0, outSize = 0;    // per-sample element counts
  // conv2d: (filters, C, kh, kw); pools: kh = kw = size
  int inC = 0, inH = 0, inW = 0, outC = 0, outH = 0, outW = 0;
  int kh = 0, kw = 0, stride = 1, padTop = 0, padLeft = 0;
  float rate = 0;                     // dropout
  // batchnorm: channels = inC (an image's channels, or a flat input's features), each normalised over
  // the batch and `spatial` = inH * inW values (1 for a flat input). Its gamma is the weight, its beta the
  // bias (hasParams when affine); running mean then running variance (C each) start at statsOffset.
  float momentum = 0.1f, eps = 1e-5f;
  bool affine = true;
  int spatial = 1;
  size_t statsOffset = 0, statsSize = 0;
  // parameters (dense, conv2d), offsets in floats into the flat vector
  bool hasParams = false;
  size_t weightOffset = 0, weightSize = 0, biasOffset = 0, biasSize = 0;
  int fanIn = 0, fanOut = 0;
  int64_t multiplyAdds = 0;
  // Residual blocks are flattened into the plan: a begin marker (kind Residual, blockEnd false; an
  // identity), the block's layers (inner = their position in it), an end marker (blockEnd true: adds the
  // shortcut of the begin marker's input, plan index blockBegin; `projection`: a 1x1 convolution with
  // stride `stride` from inC,inH,inW (the block's input) to outC,outH,outW, its weight and bias the
  // marker's parameters).
  int inner = -1;                     // position inside a residual block, -1 outside
  bool blockEnd = false;
  int blockBegin = -1;
  bool projection = false;
  std::string prefix;                 // tensor names: "layers.3." or "layers.3.layers.1." or "layers.3.shortcut."
};

struct NetworkPlan {
  std::vector<LayerPlan> layers;
  int64_t inputSize = 0;
  int64_t outputWidth = 0;            // the head's width (last layer's per-sample size)
  size_t parameterCount = 0;          // every float of the flat vector, batchnorm's running statistics included
  LossKind loss = LossKind::SoftmaxCrossEntropy;
  TaskKind task = TaskKind::Classification;
  float huberDelta = 1.0f;
  float labelSmoothing = 0.0f;        // softmax cross-entropy: (1 - s) one-hot + s / K
  bool regression() const { return task == TaskKind::Regression; }
  // a trailing softmax (softmax cross-entropy) or sigmoid (binary cross-entropy) folded into the loss
  bool foldedHeadActivation = false;
};

// What a loss compares the head's outputs (N, K) against, per batch row: the labels (classification,
// optionally weighted per class) or the float targets (regression). Host or device pointers, as the
// backend's loss needs them.
struct LossTargets {
  const int32_t* labels = nullptr;      // (N)
  const float* targets = nullptr;       // (N, K)
  const float* classWeights = nullptr;  // (classes) or null: every class weighs 1
};

// A batch's loss bookkeeping beyond the mean loss: right predictions (classification), the sum of
// squared errors over every element (regression, for R^2) and the sum of the samples' class weights
// (the denominator of a weighted mean; N without weights).
struct LossCounts {
  int64_t correct = 0;
  double squaredError = 0;
  double weightSum = 0;
};

// Resolves shapes, offsets and the folded head activation; throws SpecError naming the layer.
NetworkPlan planNetwork(const ModelSpec& spec);

// Convolution output size and leading pad for one axis (TensorFlow's 'same', 'full' = k-1 each side).
void convAxis(int in, int k, int stride, Padding padding, int& out, int& padBefore);

const char* layerKindName(LayerKind kind);
const char* activationName(ActivationFn fn);
const char* lossName(LossKind loss);

// "4x7x7" or "784"
std::string shapeText(const std::vector<int>& shape);

}  // namespace nnstudio
