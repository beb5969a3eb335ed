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

LayerSpec parseLayer(const Value& v, int position, int kindCounts[kLayerKindCount]) {
  LayerSpec layer;
  std::string where = "layer " + std::to_string(position + 1);
  if (!v.isObject()) throw SpecError(where + ": expected an object, got " + json::typeName(v.type));
  const Value* kindValue = v.find("kind");
  if (!kindValue) throw SpecError(where + ": missing \"kind\"");
  if (!kindValue->isString()) throw SpecError(where + ": \"kind\" must be a string");
  const std::string& kind = kindValue->string;
  static const std::pair<const char*, LayerKind> kinds[] = {
      {"dense", LayerKind::Dense},         {"conv2d", LayerKind::Conv2D},   {"maxpool2d", LayerKind::MaxPool2D},
      {"avgpool2d", LayerKind::AvgPool2D}, {"flatten", LayerKind::Flatten}, {"dropout", LayerKind::Dropout},
      {"activation", LayerKind::Activation}, {"batchnorm", LayerKind::BatchNorm},
      {"global_avgpool", LayerKind::GlobalAvgPool}};
  bool found = false;
  for (const auto& k : kinds)
    if (kind == k.first) { layer.kind = k.second; found = true; }
  if (!found)
    throw SpecError(where + ": unknown kind " + quoted(kind) +
                    " (expected dense, conv2d, maxpool2d, avgpool2d, flatten, dropout, activation, batchnorm or global_avgpool)");
  int& count = kindCounts[int(layer.kind)];
  ++count;
  Fields f(v, std::string(layerKindName(layer.kind)) + " #" + std::to_string(count));
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
  constexpr int64_t kMaxElements = int64_t(1) << 31;  // per sample, per layer; parameters per layer

  std::vector<int> shape = spec.input;
  plan.inputSize = product(shape);
  if (plan.inputSize >= kMaxElements)
    throw SpecError("input: " + shapeText(spec.input) + " is too large (2^31 values or more per sample)");
  int kindCounts[kLayerKindCount] = {};
  size_t offset = 0;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& ls = spec.layers[i];
    LayerPlan lp;
    lp.kind = ls.kind;
    lp.index = int(i);
    lp.label = std::string(layerKindName(ls.kind)) + " #" + std::to_string(++kindCounts[int(ls.kind)]);
    lp.inShape = shape;
    lp.inSize = product(shape);
    lp.activation = ls.activation;
    lp.alpha = ls.alpha;
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
      case LayerKind::GlobalAvgPool:
        needImage();
        lp.outC = lp.inC;
        lp.outH = lp.outW = 1;
        lp.spatial = lp.inH * lp.inW;
        lp.activation = ActivationFn::Linear;
        shape = {lp.inC};
        break;
    }
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
  for (const LayerPlan& lp : plan.layers) {
    LayerInfo info;
    info.label = lp.label;
    info.outputShape = lp.outShape;
    info.parameters = int64_t(lp.weightSize + lp.biasSize + lp.statsSize);  // as Keras counts batchnorm's
    info.multiplyAdds = lp.multiplyAdds;
    infos.push_back(std::move(info));
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
    if (lp.kind == LayerKind::Dense || lp.kind == LayerKind::Conv2D) std::fill(mask.begin() + int64_t(lp.weightOffset), mask.begin() + int64_t(lp.weightOffset + lp.weightSize), 1);
  return mask;
}

std::vector<ParamTensor> parameterTable(const ModelSpec& spec) {
  NetworkPlan plan = planNetwork(spec);
  std::vector<ParamTensor> table;
  for (const LayerPlan& lp : plan.layers) {
    std::string prefix = "layers." + std::to_string(lp.index) + ".";
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
    else w.shape = {lp.outC, lp.inC, lp.kh, lp.kw};
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
    bool relu = isReluFamily(spec.layers[i].activation);
    if (i + 1 < spec.layers.size() && spec.layers[i + 1].kind == LayerKind::Activation &&
        isReluFamily(spec.layers[i + 1].activation))
      relu = true;
    double limit = relu ? std::sqrt(6.0 / lp.fanIn) : std::sqrt(6.0 / (lp.fanIn + lp.fanOut));
    // one stream per layer, so a layer's init does not depend on the layers before it
    Rng rng(mixSeed(seed, uint64_t(i) + 1, 0x1417));
    float* w = params.data() + lp.weightOffset;
    for (size_t k = 0; k < lp.weightSize; ++k) w[k] = float((2.0 * rng.uniform() - 1.0) * limit);
  }
  return params;
}

}  // namespace nnstudio
