// Model spec: parsing (parseModelSpec), shape inference (inferShapes, planNetwork), the parameter
// table and the seeded initial weights. Field names and defaults follow app/core/model/spec.ts.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "nnstudio/engine.h"
#include "spec/json.h"
#include "spec/model.h"
#include "spec/rng.h"

namespace nnstudio {

// ---- names ----

const char* layerKindName(LayerKind kind) {
  switch (kind) {
    case LayerKind::Dense: return "dense";
    case LayerKind::Conv2D: return "conv2d";
    case LayerKind::MaxPool2D: return "maxpool2d";
    case LayerKind::AvgPool2D: return "avgpool2d";
    case LayerKind::Flatten: return "flatten";
    case LayerKind::Dropout: return "dropout";
    case LayerKind::Activation: return "activation";
    case LayerKind::BatchNorm: return "batchnorm";
    case LayerKind::GlobalAvgPool: return "global_avgpool";
    case LayerKind::Residual: return "residual";
  }
  return "layer";
}

const char* activationName(ActivationFn fn) {
  switch (fn) {
    case ActivationFn::Linear: return "linear";
    case ActivationFn::ReLU: return "relu";
    case ActivationFn::LeakyReLU: return "leaky_relu";
    case ActivationFn::Sigmoid: return "sigmoid";
    case ActivationFn::Tanh: return "tanh";
    case ActivationFn::Softplus: return "softplus";
    case ActivationFn::Softmax: return "softmax";
    case ActivationFn::GELU: return "gelu";
  }
  return "linear";
}

const char* lossName(LossKind loss) {
  switch (loss) {
    case LossKind::SoftmaxCrossEntropy: return "softmax_cross_entropy";
    case LossKind::BinaryCrossEntropy: return "binary_cross_entropy";
    case LossKind::MSE: return "mse";
    case LossKind::MAE: return "mae";
    case LossKind::Huber: return "huber";
  }
  return "loss";
}

std::string shapeText(const std::vector<int>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += "x";
    s += std::to_string(shape[i]);
  }
  return s;
}

// ---- parsing ----

namespace {

using json::Value;

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// Reads fields of one JSON object, naming `where` in every error; rejects unknown keys (as zod's
// strictObject does) so that a typo like "unit" is reported rather than silently ignored.
struct Fields {
  const Value& object;
  std::string where;
  std::set<std::string> known;

  Fields(const Value& v, std::string w) : object(v), where(std::move(w)) {
    if (!v.isObject()) fail("expected an object, got " + std::string(json::typeName(v.type)));
  }

  [[noreturn]] void fail(const std::string& what) const { throw SpecError(where + ": " + what); }

  const Value* get(const std::string& key) {
    known.insert(key);
    return object.find(key);
  }

  const Value& required(const std::string& key) {
    const Value* v = get(key);
    if (!v) fail("missing " + quoted(key));
    return *v;
  }

  double number(const std::string& key, const Value& v) {
    if (!v.isNumber()) fail(quoted(key) + " must be a number, got " + json::typeName(v.type));
    return v.number;
  }

  int positiveInt(const std::string& key, const Value& v) {
    double d = number(key, v);
    if (d != std::floor(d) || d < 1 || d > 2147483647.0)
      fail(quoted(key) + " must be a positive integer, got " + numberText(d));
    return int(d);
  }

  int positiveInt(const std::string& key) { return positiveInt(key, required(key)); }

  static std::string numberText(double d) {
    if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string(int64_t(d));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
  }

  // A number in [lo, hi) (hiOpen) or [lo, hi]; `what` describes the range for the message.
  float ranged(const std::string& key, double lo, double hi, bool loOpen, bool hiOpen, const char* what) {
    const Value& v = required(key);
    double d = number(key, v);
    bool ok = std::isfinite(d) && (loOpen ? d > lo : d >= lo) && (hiOpen ? d < hi : d <= hi);
    if (!ok) fail(quoted(key) + " must be " + what + ", got " + numberText(d));
    return float(d);
  }

  bool boolean(const std::string& key) {
    const Value& v = required(key);
    if (v.type != Value::Type::Bool) fail(quoted(key) + " must be true or false, got " + json::typeName(v.type));
    return v.boolean;
  }

  bool has(const std::string& key) {
    known.insert(key);
    return object.find(key) != nullptr;
  }

  std::string string(const std::string& key, const Value& v) {
    if (!v.isString()) fail(quoted(key) + " must be a string, got " + json::typeName(v.type));
    return v.string;
  }

  void rejectUnknown() const {
    for (const auto& member : object.object)
      if (!known.count(member.first)) fail("unknown field " + quoted(member.first));
  }
};

ActivationFn parseActivation(Fields& f, const std::string& key, const Value& v) {
  std::string name = f.string(key, v);
  static const std::pair<const char*, ActivationFn> names[] = {
      {"linear", ActivationFn::Linear},   {"relu", ActivationFn::ReLU},         {"leaky_relu", ActivationFn::LeakyReLU},
      {"sigmoid", ActivationFn::Sigmoid}, {"tanh", ActivationFn::Tanh},         {"softplus", ActivationFn::Softplus},
      {"softmax", ActivationFn::Softmax}, {"gelu", ActivationFn::GELU}};
  for (const auto& n : names)
    if (name == n.first) return n.second;
  f.fail("unknown activation " + quoted(name) + " (expected linear, relu, leaky_relu, sigmoid, tanh, softplus, softmax or gelu)");
}

void parseActivationFields(Fields& f, LayerSpec& layer, const char* key, bool required) {
  const Value* v = required ? &f.required(key) : f.get(key);
  if (v) layer.activation = parseActivation(f, key, *v);
  if (f.has("alpha")) layer.alpha = f.ranged("alpha", 0, std::numeric_limits<double>::max(), false, false, "a finite number >= 0");
}

LayerSpec parseLayer(const Value& v, int position, int kindCounts[kLayerKindCount], const std::string& outer = "");

// A residual block's fields: its layers (named "layer 3 (residual), its layer 2 (conv2d)") and shortcut.
void parseResidual(Fields& f, LayerSpec& layer, const std::string& blockWhere) {
  const Value& inner = f.required("layers");
  if (!inner.isArray()) f.fail("\"layers\" must be an array");
  if (inner.array.empty()) f.fail("\"layers\" is empty: a residual block needs at least one layer");
  int innerCounts[kLayerKindCount] = {};
  for (size_t j = 0; j < inner.array.size(); ++j)
    layer.layers.push_back(parseLayer(inner.array[j], int(j), innerCounts, blockWhere));
  if (const Value* sc = f.get("shortcut")) {
    if (f.string("shortcut", *sc) != "auto") f.fail("unknown shortcut " + quoted(sc->string) + " (expected auto)");
  }
}

// `outer` is empty at the top level; inside a block it is "layer 3 (residual)", and the layer's errors
// read "layer 3 (residual), its layer 2 (conv2d): ...".
LayerSpec parseLayer(const Value& v, int position, int kindCounts[kLayerKindCount], const std::string& outer) {
  LayerSpec layer;
  std::string where = (outer.empty() ? "layer " : outer + ", its layer ") + std::to_string(position + 1);
  if (!v.isObject()) throw SpecError(where + ": expected an object, got " + json::typeName(v.type));
  const Value* kindValue = v.find("kind");
  if (!kindValue) throw SpecError(where + ": missing \"kind\"");
  if (!kindValue->isString()) throw SpecError(where + ": \"kind\" must be a string");
  const std::string& kind = kindValue->string;
  static const std::pair<const char*, LayerKind> kinds[] = {
      {"dense", LayerKind::Dense},         {"conv2d", LayerKind::Conv2D},   {"maxpool2d", LayerKind::MaxPool2D},
      {"avgpool2d", LayerKind::AvgPool2D}, {"flatten", LayerKind::Flatten}, {"dropout", LayerKind::Dropout},
      {"activation", LayerKind::Activation}, {"batchnorm", LayerKind::BatchNorm},
      {"global_avgpool", LayerKind::GlobalAvgPool}, {"residual", LayerKind::Residual}};
  bool found = false;
  for (const auto& k : kinds)
    if (kind == k.first) { layer.kind = k.second; found = true; }
  if (!found)
    throw SpecError(where + ": unknown kind " + quoted(kind) +
                    " (expected dense, conv2d, maxpool2d, avgpool2d, flatten, dropout, activation, batchnorm, "
                    "global_avgpool or residual)");
  if (!outer.empty() && layer.kind == LayerKind::Residual)
    throw SpecError(where + ": a residual block cannot hold another residual block");
  int& count = kindCounts[int(layer.kind)];
  ++count;
  Fields f(v, outer.empty() ? std::string(layerKindName(layer.kind)) + " #" + std::to_string(count)
                            : where + " (" + layerKindName(layer.kind) + ")");
  f.get("kind");
  switch (layer.kind) {
    case LayerKind::Dense:
      layer.units = f.positiveInt("units");
      parseActivationFields(f, layer, "activation", false);
      break;
    case LayerKind::Conv2D: {
      layer.filters = f.positiveInt("filters");
      const Value& kernel = f.required("kernel");
      if (!kernel.isArray() || kernel.array.size() != 2) f.fail("\"kernel\" must be [height, width]");
      layer.kernelH = f.positiveInt("kernel", kernel.array[0]);
      layer.kernelW = f.positiveInt("kernel", kernel.array[1]);
      if (const Value* s = f.get("stride")) layer.stride = f.positiveInt("stride", *s);
      if (const Value* p = f.get("padding")) {
        std::string pad = f.string("padding", *p);
        if (pad == "valid") layer.padding = Padding::Valid;
        else if (pad == "same") layer.padding = Padding::Same;
        else if (pad == "full") layer.padding = Padding::Full;
        else f.fail("unknown padding " + quoted(pad) + " (expected valid, same or full)");
      }
      parseActivationFields(f, layer, "activation", false);
      break;
    }
    case LayerKind::MaxPool2D:
    case LayerKind::AvgPool2D:
      layer.poolSize = f.positiveInt("size");
      layer.stride = layer.poolSize;
      if (const Value* s = f.get("stride")) layer.stride = f.positiveInt("stride", *s);
      break;
    case LayerKind::Flatten:
      break;
    case LayerKind::Dropout:
      layer.rate = f.ranged("rate", 0, 1, false, true, "in [0, 1)");
      break;
    case LayerKind::Activation:
      parseActivationFields(f, layer, "fn", true);
      break;
    case LayerKind::BatchNorm:
      if (f.has("momentum")) layer.momentum = f.ranged("momentum", 0, 1, false, false, "in [0, 1]");
      if (f.has("eps"))
        layer.eps = f.ranged("eps", 0, std::numeric_limits<double>::max(), true, false, "a finite number > 0");
      if (const Value* a = f.get("affine")) {
        if (a->type != json::Value::Type::Bool) f.fail("\"affine\" must be true or false, got " + std::string(json::typeName(a->type)));
        layer.affine = a->boolean;
      }
      break;
    case LayerKind::GlobalAvgPool:
      break;
    case LayerKind::Residual:
      parseResidual(f, layer, where + " (residual)");
      break;
  }
  f.rejectUnknown();
  return layer;
}

}  // namespace

ModelSpec parseModelSpec(const std::string& text) {
  Value root = json::parse(text);
  ModelSpec spec;
  Fields top(root, "spec");

  const Value& input = top.required("input");
  if (!input.isArray() || (input.array.size() != 1 && input.array.size() != 3))
    top.fail("\"input\" must be [features] or [channels, height, width]");
  for (const Value& d : input.array) spec.input.push_back(top.positiveInt("input", d));

  const Value& layers = top.required("layers");
  if (!layers.isArray()) top.fail("\"layers\" must be an array");
  if (layers.array.empty()) top.fail("\"layers\" is empty: add at least one layer");
  int kindCounts[kLayerKindCount] = {};
  for (size_t i = 0; i < layers.array.size(); ++i) spec.layers.push_back(parseLayer(layers.array[i], int(i), kindCounts));

  std::string loss = top.string("loss", top.required("loss"));
  if (loss == "softmax_cross_entropy") spec.loss = LossKind::SoftmaxCrossEntropy;
  else if (loss == "binary_cross_entropy") spec.loss = LossKind::BinaryCrossEntropy;
  else if (loss == "mse") spec.loss = LossKind::MSE;
  else if (loss == "mae") spec.loss = LossKind::MAE;
  else if (loss == "huber") spec.loss = LossKind::Huber;
  else top.fail("unknown loss " + quoted(loss) + " (expected softmax_cross_entropy, binary_cross_entropy, mse, mae or huber)");
  if (top.has("huberDelta"))
    spec.huberDelta = top.ranged("huberDelta", 0, std::numeric_limits<double>::max(), true, false, "a finite number > 0");
  if (top.has("labelSmoothing")) {
    spec.labelSmoothing = top.ranged("labelSmoothing", 0, 0.5, false, false, "in [0, 0.5]");
    if (spec.labelSmoothing > 0 && spec.loss != LossKind::SoftmaxCrossEntropy)
      top.fail("labelSmoothing needs loss softmax_cross_entropy, got " + quoted(loss));
  }

  if (const Value* task = top.get("task")) {
    const std::string name = top.string("task", *task);
    if (name == "classification") spec.task = TaskKind::Classification;
    else if (name == "regression") spec.task = TaskKind::Regression;
    else top.fail("unknown task " + quoted(name) + " (expected classification or regression)");
  }
  if (spec.task == TaskKind::Regression && spec.loss != LossKind::MSE && spec.loss != LossKind::MAE &&
      spec.loss != LossKind::Huber)
    top.fail("a regression needs loss mse, mae or huber, got " + quoted(loss));

  Fields opt(top.required("optimizer"), "optimizer");
  const Value& kindValue = opt.required("kind");
  std::string kind = opt.string("kind", kindValue);
  if (kind == "sgd") {
    spec.optimizer.kind = OptimizerKind::SGD;
    spec.optimizer.lr = opt.ranged("lr", 0, std::numeric_limits<double>::max(), true, false, "a finite number > 0");
    spec.optimizer.momentum = 0;
    if (opt.has("momentum")) spec.optimizer.momentum = opt.ranged("momentum", 0, 1, false, true, "in [0, 1)");
    if (opt.has("nesterov")) spec.optimizer.nesterov = opt.boolean("nesterov");
    if (spec.optimizer.nesterov && spec.optimizer.momentum <= 0) opt.fail("nesterov needs a momentum > 0 (as PyTorch)");
    if (opt.has("decoupledWeightDecay")) spec.optimizer.decoupledWeightDecay = opt.boolean("decoupledWeightDecay");
  } else if (kind == "adam" || kind == "adamw") {
    spec.optimizer.kind = kind == "adam" ? OptimizerKind::Adam : OptimizerKind::AdamW;
    spec.optimizer.lr = opt.ranged("lr", 0, std::numeric_limits<double>::max(), true, false, "a finite number > 0");
    if (opt.has("beta1")) spec.optimizer.beta1 = opt.ranged("beta1", 0, 1, false, true, "in [0, 1)");
    if (opt.has("beta2")) spec.optimizer.beta2 = opt.ranged("beta2", 0, 1, false, true, "in [0, 1)");
    if (opt.has("eps")) spec.optimizer.eps = opt.ranged("eps", 0, std::numeric_limits<double>::max(), true, false, "a finite number > 0");
  } else {
    opt.fail("unknown kind " + quoted(kind) + " (expected sgd, adam or adamw)");
  }
  if (opt.has("weightDecay"))
    spec.optimizer.weightDecay =
        opt.ranged("weightDecay", 0, std::numeric_limits<double>::max(), false, false, "a finite number >= 0");
  opt.rejectUnknown();

  const Value& seed = top.required("seed");
  double s = top.number("seed", seed);
  if (s != std::floor(s) || s < 0 || s > 9007199254740991.0) top.fail("\"seed\" must be a non-negative integer");
  spec.seed = uint64_t(s);
  top.rejectUnknown();
  return spec;
}

// ---- shape inference ----

void convAxis(int in, int k, int stride, Padding padding, int& out, int& padBefore) {
  // In 64 bits: sizes up to 2^31 - 1 each overflow int here; an output too large for an int is reported
  // as -1 (the caller refuses it).
  const int64_t in64 = in, k64 = k, stride64 = stride;
  int64_t padTotal = 0;
  if (padding == Padding::Same) {
    const int64_t target = (in64 + stride64 - 1) / stride64;  // ceil(in / stride), as TensorFlow
    padTotal = std::max<int64_t>((target - 1) * stride64 + k64 - in64, 0);
  } else if (padding == Padding::Full) {
    padTotal = 2 * (k64 - 1);
  }
  const int64_t before = padding == Padding::Full ? k64 - 1 : padTotal / 2;
  const int64_t size = in64 + padTotal < k64 ? 0 : (in64 + padTotal - k64) / stride64 + 1;
  const bool fits = size <= std::numeric_limits<int>::max() && before <= std::numeric_limits<int>::max();
  out = fits ? int(size) : -1;
  padBefore = fits ? int(before) : 0;
}

namespace {

bool isReluFamily(ActivationFn fn) { return fn == ActivationFn::ReLU || fn == ActivationFn::LeakyReLU; }

// The product of positive sizes, saturating at 2^62 (three sizes below 2^31 overflow int64).
int64_t product(const std::vector<int>& shape) {
  constexpr int64_t kSaturated = int64_t(1) << 62;
  int64_t p = 1;
  for (int d : shape) p = p > kSaturated / std::max(d, 1) ? kSaturated : p * d;
  return p;
}

}  // namespace

namespace {

constexpr int64_t kMaxElements = int64_t(1) << 31;  // per sample, per layer; parameters per layer

// Walks the spec's layers (and a residual block's, between its two markers) into plan layers, carrying
// the shape and the parameter offset.
struct Planner {
  NetworkPlan& plan;
  std::vector<int> shape;
  size_t offset = 0;
  int kindCounts[kLayerKindCount] = {};

  // One layer of a spec (not a block): its shapes and sizes; returns whether softmax may follow it.
  bool body(const LayerSpec& ls, LayerPlan& lp) {
    auto fail = [&](const std::string& what) { throw SpecError(lp.label + ": " + what); };
    auto needImage = [&] {
      if (shape.size() != 3) fail("needs an image input [C,H,W], got " + shapeText(shape) + " (use it before flatten/dense)");
      lp.inC = shape[0];
      lp.inH = shape[1];
      lp.inW = shape[2];
    };
    bool softmaxAllowed = true;
    switch (ls.kind) {
      case LayerKind::Dense: {
        if (shape.size() != 1) fail("needs a flat input, got " + shapeText(shape) + " (add a flatten layer)");
        if (ls.units <= 0) fail("units must be a positive integer");
        lp.hasParams = true;
        if ((int64_t(ls.units) * shape[0] + ls.units) >= kMaxElements)
          fail(std::to_string(int64_t(ls.units) * shape[0] + ls.units) + " parameters is too many (2^31 or more in one layer)");
        lp.fanIn = shape[0];
        lp.fanOut = ls.units;
        lp.weightSize = size_t(ls.units) * size_t(shape[0]);
        lp.biasSize = size_t(ls.units);
        lp.multiplyAdds = int64_t(ls.units) * shape[0];
        shape = {ls.units};
        break;
      }
      case LayerKind::Conv2D: {
        needImage();
        if (ls.filters <= 0 || ls.kernelH <= 0 || ls.kernelW <= 0 || ls.stride <= 0)
          fail("filters, kernel and stride must be positive integers");
        if (ls.padding == Padding::Valid && (ls.kernelH > lp.inH || ls.kernelW > lp.inW))
          fail("kernel " + std::to_string(ls.kernelH) + "x" + std::to_string(ls.kernelW) + " larger than input " +
               std::to_string(lp.inH) + "x" + std::to_string(lp.inW) + " (padding valid)");
        lp.kh = ls.kernelH;
        lp.kw = ls.kernelW;
        lp.stride = ls.stride;
        convAxis(lp.inH, lp.kh, lp.stride, ls.padding, lp.outH, lp.padTop);
        convAxis(lp.inW, lp.kw, lp.stride, ls.padding, lp.outW, lp.padLeft);
        if (lp.outH < 0 || lp.outW < 0) fail("output is too large (kernel " + std::to_string(lp.kh) + "x" + std::to_string(lp.kw) + ")");
        lp.outC = ls.filters;
        lp.hasParams = true;
        {
          const int64_t weights = product({lp.outC, lp.inC, lp.kh, lp.kw});
          if (weights + lp.outC >= kMaxElements)
            fail(std::to_string(weights + lp.outC) + " parameters is too many (2^31 or more in one layer)");
        }
        lp.fanIn = lp.inC * lp.kh * lp.kw;
        lp.fanOut = lp.outC * lp.kh * lp.kw;
        lp.weightSize = size_t(lp.outC) * size_t(lp.fanIn);
        lp.biasSize = size_t(lp.outC);
        lp.multiplyAdds = int64_t(lp.fanIn) * lp.outC * lp.outH;
        lp.multiplyAdds = lp.multiplyAdds > (int64_t(1) << 62) / std::max(lp.outW, 1) ? (int64_t(1) << 62) : lp.multiplyAdds * lp.outW;
        shape = {lp.outC, lp.outH, lp.outW};
        softmaxAllowed = false;
        break;
      }
      case LayerKind::MaxPool2D:
      case LayerKind::AvgPool2D: {
        needImage();
        if (ls.poolSize <= 0 || ls.stride <= 0) fail("size and stride must be positive integers");
        if (ls.poolSize > lp.inH || ls.poolSize > lp.inW)
          fail("window " + std::to_string(ls.poolSize) + "x" + std::to_string(ls.poolSize) + " larger than input " +
               std::to_string(lp.inH) + "x" + std::to_string(lp.inW));
        lp.kh = lp.kw = ls.poolSize;
        lp.stride = ls.stride;
        lp.outC = lp.inC;
        lp.outH = (lp.inH - ls.poolSize) / ls.stride + 1;  // floor mode: windows that do not fit are dropped
        lp.outW = (lp.inW - ls.poolSize) / ls.stride + 1;
        lp.activation = ActivationFn::Linear;
        shape = {lp.outC, lp.outH, lp.outW};
        break;
      }
      case LayerKind::Flatten:
        lp.activation = ActivationFn::Linear;
        shape = {int(lp.inSize)};
        break;
      case LayerKind::Dropout:
        if (!(ls.rate >= 0 && ls.rate < 1)) fail("rate must be in [0, 1)");
        lp.rate = ls.rate;
        lp.activation = ActivationFn::Linear;
        break;
      case LayerKind::Activation:
        softmaxAllowed = shape.size() == 1;
        break;
      case LayerKind::BatchNorm: {
        if (!(ls.momentum >= 0 && ls.momentum <= 1)) fail("momentum must be in [0, 1]");
        if (!(ls.eps > 0 && std::isfinite(ls.eps))) fail("eps must be a finite number > 0");
        // channels of an image, or the features of a flat input (each its own channel)
        lp.inC = shape[0];
        lp.inH = shape.size() == 3 ? shape[1] : 1;
        lp.inW = shape.size() == 3 ? shape[2] : 1;
        lp.outC = lp.inC;
        lp.outH = lp.inH;
        lp.outW = lp.inW;
        lp.spatial = lp.inH * lp.inW;
        lp.momentum = ls.momentum;
        lp.eps = ls.eps;
        lp.affine = ls.affine;
        lp.activation = ActivationFn::Linear;
        lp.hasParams = ls.affine;
        lp.weightSize = ls.affine ? size_t(lp.inC) : 0;
        lp.biasSize = lp.weightSize;
        lp.statsSize = 2 * size_t(lp.inC);
        break;
      }
      case LayerKind::Residual:
        fail("a residual block cannot hold another residual block");
        break;
      case LayerKind::GlobalAvgPool:
        needImage();
        lp.outC = lp.inC;
        lp.outH = lp.outW = 1;
        lp.spatial = lp.inH * lp.inW;
        lp.activation = ActivationFn::Linear;
        shape = {lp.inC};
        break;
    }
    return softmaxAllowed;
  }

  // The checks every plan layer ends with, its output shape, and its offsets into the flat vector.
  void finish(LayerPlan& lp, bool softmaxAllowed) {
    auto fail = [&](const std::string& what) { throw SpecError(lp.label + ": " + what); };
    if (lp.activation == ActivationFn::Softmax && !softmaxAllowed)
      fail("softmax needs a flat input, got " + shapeText(shape) + " (add a flatten layer first)");
    if (!(lp.alpha >= 0 && std::isfinite(lp.alpha))) fail("alpha must be a finite number >= 0");
    for (int d : shape)
      if (d <= 0) fail("output is empty (" + shapeText(shape) + ")");
    lp.outShape = shape;
    lp.outSize = product(shape);
    if (lp.outSize >= kMaxElements) fail("output " + shapeText(shape) + " is too large");
    if (lp.hasParams) {
      lp.weightOffset = offset;
      offset += lp.weightSize;
      lp.biasOffset = offset;
      offset += lp.biasSize;
    }
    if (lp.statsSize) {
      lp.statsOffset = offset;
      offset += lp.statsSize;
    }
    plan.layers.push_back(std::move(lp));
  }

  LayerPlan start(LayerKind kind, int index, std::string label, std::string prefix) {
    LayerPlan lp;
    lp.kind = kind;
    lp.index = index;
    lp.label = std::move(label);
    lp.prefix = std::move(prefix);
    lp.inShape = shape;
    lp.inSize = product(shape);
    return lp;
  }

  void layer(const LayerSpec& ls, int index) {
    std::string label = std::string(layerKindName(ls.kind)) + " #" + std::to_string(++kindCounts[int(ls.kind)]);
    if (ls.kind == LayerKind::Residual) return block(ls, index, label);
    LayerPlan lp = start(ls.kind, index, label, "layers." + std::to_string(index) + ".");
    lp.activation = ls.activation;
    lp.alpha = ls.alpha;
    finish(lp, body(ls, lp));
  }

  // begin marker, the block's layers, end marker (with the projection when the shape changes)
  void block(const LayerSpec& ls, int index, const std::string& label) {
    const std::string prefix = "layers." + std::to_string(index) + ".";
    if (ls.layers.empty()) throw SpecError(label + ": a residual block needs at least one layer");
    const int begin = int(plan.layers.size());
    const std::vector<int> input = shape;
    LayerPlan marker = start(LayerKind::Residual, index, label, prefix);
    finish(marker, true);
    const std::string outer = "layer " + std::to_string(index + 1) + " (residual), its layer ";
    for (size_t j = 0; j < ls.layers.size(); ++j) {
      const LayerSpec& inner = ls.layers[j];
      const std::string innerLabel = outer + std::to_string(j + 1) + " (" + layerKindName(inner.kind) + ")";
      if (inner.kind == LayerKind::Residual) throw SpecError(innerLabel + ": a residual block cannot hold another residual block");
      LayerPlan lp = start(inner.kind, index, innerLabel, prefix + "layers." + std::to_string(j) + ".");
      lp.inner = int(j);
      lp.activation = inner.activation;
      lp.alpha = inner.alpha;
      finish(lp, body(inner, lp));
    }
    LayerPlan end = start(LayerKind::Residual, index, label, prefix + "shortcut.");
    end.blockEnd = true;
    end.blockBegin = begin;
    end.inner = int(ls.layers.size());
    if (shape != input) planProjection(end, input);
    finish(end, true);
  }

  // The 1x1 convolution from the block's input to its output's shape: the smallest stride that gives it.
  void planProjection(LayerPlan& end, const std::vector<int>& input) {
    auto fail = [&](const std::string& what) { throw SpecError(end.label + ": " + what); };
    const std::string turn = "its layers turn " + shapeText(input) + " into " + shapeText(shape);
    if (input.size() != 3 || shape.size() != 3)
      fail(turn + ": a shortcut that changes the shape needs an image on both sides (a flat block must keep its width)");
    int stride = 0;
    for (int s = 1; s <= std::max(input[1], input[2]) && !stride; ++s)
      if ((input[1] + s - 1) / s == shape[1] && (input[2] + s - 1) / s == shape[2]) stride = s;
    if (!stride) fail(turn + ": no stride of a 1x1 convolution maps " + std::to_string(input[1]) + "x" +
                      std::to_string(input[2]) + " to " + std::to_string(shape[1]) + "x" + std::to_string(shape[2]));
    end.projection = true;
    end.hasParams = true;
    end.inC = input[0];
    end.inH = input[1];
    end.inW = input[2];
    end.outC = shape[0];
    end.outH = shape[1];
    end.outW = shape[2];
    end.kh = end.kw = 1;
    end.stride = stride;
    end.fanIn = end.inC;
    end.fanOut = end.outC;
    end.weightSize = size_t(end.outC) * size_t(end.inC);
    end.biasSize = size_t(end.outC);
    end.multiplyAdds = int64_t(end.inC) * end.outC * end.outH * end.outW;
  }
};

}  // namespace

NetworkPlan planNetwork(const ModelSpec& spec) {
  NetworkPlan plan;
  plan.loss = spec.loss;
  plan.task = spec.task;
  plan.huberDelta = spec.huberDelta;
  if (spec.task == TaskKind::Regression && spec.loss != LossKind::MSE && spec.loss != LossKind::MAE &&
      spec.loss != LossKind::Huber)
    throw SpecError(std::string("spec: a regression needs loss mse, mae or huber, got ") + lossName(spec.loss));
  if (!(spec.huberDelta > 0 && std::isfinite(spec.huberDelta)))
    throw SpecError("spec: huberDelta must be a finite number > 0");
  if (!(spec.optimizer.weightDecay >= 0 && std::isfinite(spec.optimizer.weightDecay)))
    throw SpecError("optimizer: weightDecay must be a finite number >= 0");
  if (!(spec.labelSmoothing >= 0 && spec.labelSmoothing <= 0.5f))
    throw SpecError("spec: labelSmoothing must be in [0, 0.5]");
  if (spec.labelSmoothing > 0 && spec.loss != LossKind::SoftmaxCrossEntropy)
    throw SpecError("spec: labelSmoothing needs loss softmax_cross_entropy");
  plan.labelSmoothing = spec.labelSmoothing;
  if (spec.input.size() != 1 && spec.input.size() != 3)
    throw SpecError("input: expected [features] or [channels, height, width], got [" + shapeText(spec.input) + "]");
  for (int d : spec.input)
    if (d <= 0) throw SpecError("input: every dimension must be positive, got " + shapeText(spec.input));
  if (spec.layers.empty()) throw SpecError("spec: no layers: add at least one layer");

  Planner planner{plan, spec.input};
  plan.inputSize = product(spec.input);
  if (plan.inputSize >= kMaxElements)
    throw SpecError("input: " + shapeText(spec.input) + " is too large (2^31 values or more per sample)");
  for (size_t i = 0; i < spec.layers.size(); ++i) planner.layer(spec.layers[i], int(i));
  const size_t offset = planner.offset;
  plan.parameterCount = offset;
  plan.outputWidth = plan.layers.back().outSize;

  // ---- the head: one flat vector per sample, wide enough for the loss ----
  const LayerPlan& last = plan.layers.back();
  if (last.outShape.size() != 1)
    throw SpecError(last.label + ": the network must end with a flat output, got " + shapeText(last.outShape) +
                    " (end with flatten and a dense layer)");
  if (spec.loss == LossKind::SoftmaxCrossEntropy && plan.outputWidth < 2)
    throw SpecError("softmax_cross_entropy needs at least 2 outputs, the last layer " + last.label + " has " +
                    std::to_string(plan.outputWidth) + " (use binary_cross_entropy for a single output)");

  // ---- fold the head's activation into the loss (the loss works on logits) ----
  LayerPlan& head = plan.layers.back();
  if ((spec.loss == LossKind::SoftmaxCrossEntropy && head.activation == ActivationFn::Softmax) ||
      (spec.loss == LossKind::BinaryCrossEntropy && head.activation == ActivationFn::Sigmoid)) {
    head.activation = ActivationFn::Linear;
    plan.foldedHeadActivation = true;
  }
  return plan;
}

std::vector<LayerInfo> inferShapes(const ModelSpec& spec) {
  NetworkPlan plan = planNetwork(spec);
  std::vector<LayerInfo> infos;
  // one entry per spec layer: a residual block's (its begin marker) sums its layers and its projection
  for (const LayerPlan& lp : plan.layers) {
    const bool inBlock = lp.inner >= 0;
    if (!inBlock) {
      LayerInfo info;
      info.label = lp.label;
      infos.push_back(std::move(info));
    }
    LayerInfo& info = infos.back();
    info.outputShape = lp.outShape;
    info.parameters += int64_t(lp.weightSize + lp.biasSize + lp.statsSize);  // as Keras counts batchnorm's
    info.multiplyAdds += lp.multiplyAdds;
  }
  return infos;
}

int classCount(const ModelSpec& spec) {
  NetworkPlan plan = planNetwork(spec);
  if (plan.regression()) return 0;
  return plan.outputWidth == 1 ? 2 : int(plan.outputWidth);
}

std::vector<uint8_t> weightDecayMask(const ModelSpec& spec) {
  NetworkPlan plan = planNetwork(spec);
  std::vector<uint8_t> mask(plan.parameterCount, 0);
  // dense and conv2d weights only: biases, batchnorm's gamma and beta and its running statistics never decay
  for (const LayerPlan& lp : plan.layers)
    if (lp.kind == LayerKind::Dense || lp.kind == LayerKind::Conv2D || lp.projection) std::fill(mask.begin() + int64_t(lp.weightOffset), mask.begin() + int64_t(lp.weightOffset + lp.weightSize), 1);
  return mask;
}

std::vector<ParamTensor> parameterTable(const ModelSpec& spec) {
  NetworkPlan plan = planNetwork(spec);
  std::vector<ParamTensor> table;
  for (const LayerPlan& lp : plan.layers) {
    const std::string& prefix = lp.prefix;
    if (lp.kind == LayerKind::BatchNorm) {
      auto add = [&](const char* name, size_t offset) {
        ParamTensor t;
        t.name = prefix + name;
        t.shape = {lp.inC};
        t.offset = offset;
        t.size = size_t(lp.inC);
        table.push_back(std::move(t));
      };
      if (lp.affine) {
        add("gamma", lp.weightOffset);
        add("beta", lp.biasOffset);
      }
      add("running_mean", lp.statsOffset);
      add("running_var", lp.statsOffset + size_t(lp.inC));
      continue;
    }
    if (!lp.hasParams) continue;
    ParamTensor w, b;
    w.name = prefix + "weight";
    b.name = prefix + "bias";
    if (lp.kind == LayerKind::Dense) w.shape = {int(lp.fanOut), int(lp.fanIn)};
    else w.shape = {lp.outC, lp.inC, lp.kh, lp.kw};  // conv2d, a residual block's projection (1x1)
    b.shape = {int(lp.biasSize)};
    w.offset = lp.weightOffset;
    w.size = lp.weightSize;
    b.offset = lp.biasOffset;
    b.size = lp.biasSize;
    table.push_back(std::move(w));
    table.push_back(std::move(b));
  }
  return table;
}

size_t parameterCount(const ModelSpec& spec) { return planNetwork(spec).parameterCount; }

// ---- initial weights ----

std::vector<float> initialParameters(const ModelSpec& spec, uint64_t seed) {
  NetworkPlan plan = planNetwork(spec);
  std::vector<float> params(plan.parameterCount, 0.0f);
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& lp = plan.layers[i];
    if (lp.kind == LayerKind::BatchNorm) {
      // gamma 1, beta 0; running mean 0, running variance 1 (PyTorch's)
      std::fill_n(params.begin() + int64_t(lp.weightOffset), lp.weightSize, 1.0f);
      std::fill_n(params.begin() + int64_t(lp.statsOffset + size_t(lp.inC)), size_t(lp.inC), 1.0f);
      continue;
    }
    if (!lp.hasParams) continue;
    // He for layers feeding a ReLU (their own activation or an activation layer right after), else Glorot
    // (a projection: Glorot; its sum with the block's layers feeds whatever follows)
    bool relu = !lp.projection && isReluFamily(lp.activation);
    if (!lp.projection && i + 1 < plan.layers.size() && plan.layers[i + 1].kind == LayerKind::Activation &&
        isReluFamily(plan.layers[i + 1].activation))
      relu = true;
    double limit = relu ? std::sqrt(6.0 / lp.fanIn) : std::sqrt(6.0 / (lp.fanIn + lp.fanOut));
    // one stream per layer, so a layer's init does not depend on the layers before it (a block's layers
    // and projection: one stream each, from their block's)
    uint64_t stream = mixSeed(seed, uint64_t(lp.index) + 1, 0x1417);
    if (lp.inner >= 0) stream = mixSeed(stream, uint64_t(lp.inner) + 1, 0x2e51);
    Rng rng(stream);
    float* w = params.data() + lp.weightOffset;
    for (size_t k = 0; k < lp.weightSize; ++k) w[k] = float((2.0 * rng.uniform() - 1.0) * limit);
  }
  return params;
}

}  // namespace nnstudio
