// Finite-difference gradient checks of the CPU backend: for small networks, the analytic gradients of
// forwardBackwardCpu (parameters) and of cpu::Network (inputs) against double-sided differences
//   (L(x + h) - L(x - h)) / ((x + h) - (x - h))      (the denominator as actually stored in float)
// with h = 1e-3. The forward pass runs in float32 (loss reduced in double), so the difference quotient
// carries ~1e-4 of rounding noise at most. Tolerance (documented, checked per element):
//   |analytic - numeric| <= 2e-4 + 1e-2 * |numeric|,   and over the whole vector
//   ||analytic - numeric||_2 <= 1e-2 * ||numeric||_2 + 1e-4.
// Kinks (ReLU at 0, max-pool ties, |x| of MAE) are detected by comparing the one-sided differences; the
// step then shrinks to h/8 and h/64 with the tolerance scaled by 8 and 64 (noise grows as 1/h), and an
// element still at a kink is skipped (at most 5 % of them, 25 % for ReLU/max-pool after a conv).
// A bug (wrong index, missing term, wrong scale) gives errors of order the gradient itself, far above
// the tolerance; the negative control at the end shows that a 5 % error on one element is caught.
// Data and weights come from a fixed seed, so the run is deterministic (GRADCHECK_SEED=n draws other
// data; every n in 0..60 passes).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <vector>

#include "cpu/network.h"
#include "nnstudio/engine.h"
#include "spec/rng.h"
#include "test_util.h"

using namespace nnstudio;

namespace {

static double kStep = 1e-3;
static uint64_t dataSeed = 0;
constexpr double kAbsTol = 2e-4, kRelTol = 1e-2;

struct Comparison {
  double maxAbsErr = 0, normErr = 0, normRef = 0;
  int worst = -1, bad = 0, skipped = 0, count = 0;
  double kinkBudget = 0.05;  // fraction of elements that may be skipped for sitting at a kink
  bool ok() const { return bad == 0 && normErr <= 1e-2 * normRef + 1e-4 && skipped <= kinkBudget * count; }
  std::string text() const {
    return "max |err| " + nnstudio_test::num(maxAbsErr) + " (at " + std::to_string(worst) + "), ||err|| " +
           nnstudio_test::num(normErr) + " / ||grad|| " + nnstudio_test::num(normRef) +
           (skipped ? ", " + std::to_string(skipped) + " at a kink skipped" : "") +
           (bad ? ", " + std::to_string(bad) + " elements out of tolerance" : "");
  }
};

// A numeric derivative: the central difference, and whether the step crossed a kink (ReLU at 0, a
// max-pool tie): then the one-sided differences disagree by more than twice the tolerance (for a smooth
// function they differ by h |f''| + noise). At a kink the step shrinks (h/8, h/64) and the tolerance
// grows as the rounding noise does (x8, x64); if every step straddles the kink the element is skipped.
struct Numeric {
  double central = 0;
  double tolScale = 1;  // the tolerance multiplier for the step that was used
  bool kink = false;
};

template <class Loss>
Numeric differentiate(float& x, Loss&& loss) {
  const float orig = x;
  const double l0 = loss();
  Numeric d;
  for (double scale : {1.0, 8.0, 64.0}) {
    const double h = kStep / scale;
    const float up = float(orig + h), down = float(orig - h);
    x = up;
    const double lUp = loss();
    x = down;
    const double lDown = loss();
    x = orig;
    d.central = (lUp - lDown) / (double(up) - double(down));
    d.tolScale = scale;
    const double forward = (lUp - l0) / (double(up) - orig), backward = (l0 - lDown) / (orig - double(down));
    d.kink = std::fabs(forward - backward) > 2 * scale * (kAbsTol + kRelTol * std::fabs(d.central));
    if (!d.kink) break;
  }
  return d;
}

Comparison compare(const std::vector<double>& analytic, const std::vector<double>& numeric,
                   const std::vector<Numeric>* info = nullptr) {
  Comparison c;
  for (size_t i = 0; i < analytic.size(); ++i) {
    ++c.count;
    const double scale = info ? (*info)[i].tolScale : 1.0;
    if (info && (*info)[i].kink) { ++c.skipped; continue; }
    const double err = std::fabs(analytic[i] - numeric[i]);
    if (err > c.maxAbsErr) { c.maxAbsErr = err; c.worst = int(i); }
    if (!(err <= scale * (kAbsTol + kRelTol * std::fabs(numeric[i])))) ++c.bad;
    c.normErr += err * err;
    c.normRef += numeric[i] * numeric[i];
  }
  c.normErr = std::sqrt(c.normErr);
  c.normRef = std::sqrt(c.normRef);
  return c;
}

std::string spec(const std::string& input, const std::string& layers, const std::string& loss = "softmax_cross_entropy",
                 const std::string& extra = "") {
  return "{\"input\":" + input + ",\"layers\":[" + layers + "],\"loss\":\"" + loss +
         "\",\"optimizer\":{\"kind\":\"sgd\",\"lr\":0.1},\"seed\":3" + extra + "}";
}

struct Options {
  bool training = false;     // dropout on
  uint64_t dropoutSeed = 11;
  float headBias = 0.0f;     // added to the head's biases (MAE: keep outputs away from the targets)
  int batch = 3;
  bool distinctInputs = false;  // inputs a shuffled grid at least 2e-3 apart: no max-pool tie within a step
  double kinkBudget = 0.05;     // ReLU or max-pool after a conv: a weight moves many units, some cross a kink
  std::vector<float> classWeights;  // classification: weighted loss (empty: none)
  float targetOffset = 0.0f;        // regression: added to the random targets (MAE: away from the kink)
};

// Checks parameter gradients (forwardBackwardCpu) and input gradients (cpu::Network) of one network.
void check(const std::string& name, const std::string& json, Options opt = {}) {
  ModelSpec s = parseModelSpec(json);
  const NetworkPlan plan = planNetwork(s);
  const int classes = classCount(s);
  const int B = opt.batch;
  Rng rng(mixSeed(0xC0FFEE + dataSeed, std::hash<std::string>{}(name)));

  // weights: the seeded init plus small random biases (zero biases would hide bias bugs)
  std::vector<float> params = initialParameters(s, 5);
  for (const auto& t : parameterTable(s))
    if (t.name.find("bias") != std::string::npos)
      for (size_t i = 0; i < t.size; ++i) params[t.offset + i] = 0.2f * (2 * rng.uniform() - 1);
  if (opt.headBias != 0.0f) {
    const auto table = parameterTable(s);
    const auto& headBias = table.back();
    for (size_t i = 0; i < headBias.size; ++i) params[headBias.offset + i] += opt.headBias;
  }
  std::vector<float> inputs(size_t(B) * size_t(plan.inputSize));
  for (auto& v : inputs) v = 2 * rng.uniform() - 1;  // continuous values: ties (max-pool) have probability 0
  if (opt.distinctInputs) {
    for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = -1.0f + 2.0f * float(i) / float(inputs.size());
    for (size_t i = inputs.size() - 1; i > 0; --i) std::swap(inputs[i], inputs[rng.below(uint32_t(i + 1))]);
  }
  std::vector<int32_t> labels(static_cast<size_t>(B), 0);
  if (!plan.regression())
    for (auto& y : labels) y = int32_t(rng.below(uint32_t(classes)));
  // a regression's targets: continuous values around the outputs' scale
  // batchnorm: gamma near 1, beta random (as a bias), running statistics away from 0 and 1 so that an
  // evaluation-mode check sees them
  for (const auto& t : parameterTable(s)) {
    const auto ends = [&](const std::string& suffix) {
      return t.name.size() > suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    for (size_t i = 0; i < t.size; ++i) {
      if (ends(".gamma")) params[t.offset + i] = 1.0f + 0.3f * (2 * rng.uniform() - 1);
      if (ends(".beta") || ends(".running_mean")) params[t.offset + i] = 0.2f * (2 * rng.uniform() - 1);
      if (ends(".running_var")) params[t.offset + i] = 0.5f + rng.uniform();
    }
  }
  std::vector<float> targets(plan.regression() ? size_t(B) * size_t(plan.outputWidth) : 0);
  for (auto& t : targets) t = 2 * rng.uniform() - 1 + opt.targetOffset;
  const float* targetData = targets.empty() ? nullptr : targets.data();
  const float* weights = opt.classWeights.empty() ? nullptr : opt.classWeights.data();
  LossTargets lossTargets;
  lossTargets.labels = plan.regression() ? nullptr : labels.data();
  lossTargets.targets = targetData;
  lossTargets.classWeights = weights;

  // ---- parameter gradients ----
  std::vector<float> outputs, grads, scratch;
  forwardBackwardCpu(s, params, inputs.data(), labels.data(), B, opt.training, outputs, grads, opt.dropoutSeed,
                     targetData, weights);
  auto lossAt = [&](const std::vector<float>& p) {
    return forwardBackwardCpu(s, p, inputs.data(), labels.data(), B, opt.training, outputs, scratch, opt.dropoutSeed,
                              targetData, weights);
  };
  std::vector<double> analytic(grads.begin(), grads.end()), numeric(grads.size());
  std::vector<Numeric> info(grads.size());
  std::vector<float> p = params;
  // batchnorm's running statistics are buffers: their gradient is 0 by definition. In training the loss
  // does not depend on them (the difference quotient checks that); in evaluation it does, and they are
  // left out of the comparison (their analytic 0 is checked exactly instead).
  std::vector<bool> buffer(p.size(), false);
  for (const auto& t : parameterTable(s))
    if (t.name.find(".running_") != std::string::npos)
      for (size_t i = 0; i < t.size; ++i) buffer[t.offset + i] = true;
  bool buffersZero = true;
  for (size_t i = 0; i < p.size(); ++i) {
    if (buffer[i]) buffersZero = buffersZero && grads[i] == 0.0f;
    if (buffer[i] && !opt.training) continue;  // numeric 0 = analytic 0
    info[i] = differentiate(p[i], [&] { return lossAt(p); });
    numeric[i] = info[i].central;
  }
  if (std::find(buffer.begin(), buffer.end(), true) != buffer.end())
    CHECK_MSG(buffersZero, name + ": the running statistics' gradients are 0");
  Comparison c = compare(analytic, numeric, &info);
  c.kinkBudget = opt.kinkBudget;
  CHECK_MSG(c.ok(), name + ": d/dparameters (" + std::to_string(p.size()) + "): " + c.text());

  // ---- input gradients ----
  cpu::ThreadPool pool(1);
  cpu::Network net(s, B, pool, true);
  net.forward(params.data(), inputs.data(), B, opt.training, opt.dropoutSeed);
  net.loss(lossTargets, B, true, nullptr);
  std::vector<float> g(plan.parameterCount);
  net.backward(params.data(), g.data(), B);
  std::vector<double> analyticIn(net.inputGradient(), net.inputGradient() + inputs.size()), numericIn(inputs.size());
  std::vector<Numeric> infoIn(inputs.size());
  std::vector<float> x = inputs;
  auto lossOfInputs = [&] {
    net.forward(params.data(), x.data(), B, opt.training, opt.dropoutSeed);
    return net.loss(lossTargets, B, false, nullptr);
  };
  for (size_t i = 0; i < x.size(); ++i) {
    infoIn[i] = differentiate(x[i], lossOfInputs);
    numericIn[i] = infoIn[i].central;
  }
  Comparison ci = compare(analyticIn, numericIn, &infoIn);
  ci.kinkBudget = opt.kinkBudget;
  CHECK_MSG(ci.ok(), name + ": d/dinputs (" + std::to_string(x.size()) + "): " + ci.text());
  // the network's own gradients agree with forwardBackwardCpu's
  double maxDiff = 0;
  for (size_t i = 0; i < g.size(); ++i) maxDiff = std::max(maxDiff, double(std::fabs(g[i] - grads[i])));
  CHECK_MSG(maxDiff == 0.0, name + ": Network::backward == forwardBackwardCpu");
}

std::string dense(int units, const std::string& act = "linear") {
  return "{\"kind\":\"dense\",\"units\":" + std::to_string(units) + ",\"activation\":\"" + act + "\"}";
}
std::string conv(int filters, int kh, int kw, int stride, const std::string& padding, const std::string& act = "tanh") {
  return "{\"kind\":\"conv2d\",\"filters\":" + std::to_string(filters) + ",\"kernel\":[" + std::to_string(kh) + "," +
         std::to_string(kw) + "],\"stride\":" + std::to_string(stride) + ",\"padding\":\"" + padding +
         "\",\"activation\":\"" + act + "\"}";
}
Options afterConvKinks() {
  Options o;
  o.kinkBudget = 0.25;
  return o;
}
std::string batchnorm(const std::string& fields = "") { return "{\"kind\":\"batchnorm\"" + fields + "}"; }
const std::string gap = "{\"kind\":\"global_avgpool\"}";
std::string pool(const std::string& kind, int size, int stride) {
  return "{\"kind\":\"" + kind + "\",\"size\":" + std::to_string(size) + ",\"stride\":" + std::to_string(stride) + "}";
}
const std::string flatten = "{\"kind\":\"flatten\"}";
std::string residual(const std::string& layers) { return "{\"kind\":\"residual\",\"layers\":[" + layers + "]}"; }

}  // namespace

int main() {
  if (const char* h = std::getenv("GRADCHECK_STEP")) kStep = std::atof(h);
  if (const char* d = std::getenv("GRADCHECK_SEED")) dataSeed = std::strtoull(d, nullptr, 10);
  const char* activations[] = {"linear", "relu", "leaky_relu", "sigmoid", "tanh", "softplus", "softmax", "gelu"};

  std::printf("dense, each activation (hidden, then as the head under mse)\n");
  for (const char* act : activations) {
    check(std::string("dense ") + act, spec("[5]", dense(4, act) + "," + dense(3)));
    check(std::string("dense head ") + act + " + mse", spec("[5]", dense(4, "tanh") + "," + dense(3, act), "mse"));
  }
  check("dense leaky_relu alpha 0.3",
        spec("[5]", "{\"kind\":\"dense\",\"units\":6,\"activation\":\"leaky_relu\",\"alpha\":0.3}," + dense(3)));

  std::printf("activation layers, each fn\n");
  for (const char* act : activations)
    check(std::string("activation ") + act,
          spec("[4]", dense(5) + ",{\"kind\":\"activation\",\"fn\":\"" + act + "\",\"alpha\":0.2}," + dense(3)));

  std::printf("conv2d: padding x stride, non-square kernels, several channels\n");
  for (const char* padding : {"valid", "same", "full"})
    for (int stride : {1, 2}) {
      check(std::string("conv2d 3x2 ") + padding + " stride " + std::to_string(stride),
            spec("[2,7,6]", conv(3, 3, 2, stride, padding) + "," + flatten + "," + dense(3)));
      // a second conv so the first one's input gradient path (col2im) is inside the parameter check
      check(std::string("conv2d 2x3 -> conv2d ") + padding + " stride " + std::to_string(stride),
            spec("[3,6,7]", conv(2, 2, 3, 1, "same") + "," + conv(3, 3, 2, stride, padding) + "," + flatten + "," + dense(2)));
    }
  check("conv2d even kernel 2x2 same", spec("[2,5,5]", conv(3, 2, 2, 1, "same") + "," + flatten + "," + dense(3)));
  check("conv2d even kernel 4x2 same stride 2", spec("[1,7,6]", conv(2, 4, 2, 2, "same") + "," + flatten + "," + dense(3)));
  check("conv2d 1x1 (pointwise)", spec("[3,4,4]", conv(2, 1, 1, 1, "valid", "sigmoid") + "," + flatten + "," + dense(3)));
  Options kinky;
  kinky.kinkBudget = 0.25;
  check("conv2d relu, leaky_relu",
        spec("[2,6,6]", conv(3, 3, 3, 1, "same", "relu") + "," + conv(2, 3, 3, 1, "valid", "leaky_relu") + "," + flatten + "," + dense(3)),
        kinky);
  check("conv2d gelu -> conv2d gelu (pre-activations kept)",
        spec("[2,5,5]", conv(3, 3, 3, 1, "same", "gelu") + "," + conv(2, 2, 2, 1, "valid", "gelu") + "," + flatten + "," + dense(3)));
  check("conv2d gelu -> maxpool (no conv+pool fusion)",
        spec("[1,6,6]", conv(2, 3, 3, 1, "same", "gelu") + "," + pool("maxpool2d", 2, 2) + "," + flatten + "," + dense(3)),
        afterConvKinks());
  check("conv2d kernel as large as the input", spec("[2,3,4]", conv(3, 3, 4, 1, "valid") + "," + flatten + "," + dense(2)));

  std::printf("pools\n");
  // the pool first, on inputs without near-ties: a strict check of its backward (routing, overlaps,
  // dropped border); then after a conv, where a weight moves every pixel and ties get crossed
  Options distinct;
  distinct.distinctInputs = true;
  Options afterConv;
  afterConv.kinkBudget = 0.25;
  for (const char* kind : {"maxpool2d", "avgpool2d"}) {
    const std::string k = kind;
    check(k + " size 2 = stride", spec("[2,6,6]", pool(k, 2, 2) + "," + flatten + "," + dense(3)), distinct);
    check(k + " size 3 stride 2 (overlapping)", spec("[2,7,7]", pool(k, 3, 2) + "," + flatten + "," + dense(3)), distinct);
    check(k + " size 3 stride 1 (overlapping)", spec("[2,5,6]", pool(k, 3, 1) + "," + flatten + "," + dense(3)), distinct);
    check(k + " 7x7 input, size 2 (last row/column dropped)", spec("[2,7,7]", pool(k, 2, 2) + "," + flatten + "," + dense(3)),
          distinct);
    check(k + " 7x5 input, size 3 stride 2", spec("[1,7,5]", pool(k, 3, 2) + "," + flatten + "," + dense(3)), distinct);
    check("conv2d -> " + k + " size 2", spec("[2,6,6]", conv(2, 3, 3, 1, "same") + "," + pool(k, 2, 2) + "," + flatten + "," + dense(3)),
          afterConv);
    check("conv2d -> " + k + " size 3 stride 2", spec("[1,7,7]", conv(2, 3, 3, 1, "same") + "," + pool(k, 3, 2) + "," + flatten + "," + dense(3)),
          afterConv);
  }

  std::printf("max-pool forward against a naive scan (ties: the first in row-major order)\n");
  {
    // values on a coarse grid so that windows hold ties; every stride and window path of pool.cpp
    Rng rng(77);
    bool same = true;
    int cases = 0;
    for (int size : {1, 2, 3, 4, 9})
      for (int stride : {1, 2, 3, 4, 5})
        for (int H : {9, 26, 37}) {
          cpu::PoolGeometry g;
          g.C = 3; g.H = H; g.W = H + 2; g.size = size; g.stride = stride;
          if (size > g.H) continue;
          g.OH = (g.H - size) / stride + 1;
          g.OW = (g.W - size) / stride + 1;
          std::vector<float> x(size_t(g.C) * g.H * g.W);
          for (auto& v : x) v = float(rng.below(5));
          if (cases % 7 == 3) x[x.size() / 2] = NAN;  // a NaN wins its windows
          std::vector<float> out(size_t(g.C) * g.OH * g.OW);
          std::vector<int32_t> idx(out.size());
          cpu::maxpool_forward_sample(out.data(), idx.data(), x.data(), g);
          for (int c = 0; c < g.C; ++c)
            for (int oy = 0; oy < g.OH; ++oy)
              for (int ox = 0; ox < g.OW; ++ox) {
                int best = -1;
                for (int ky = 0; ky < size; ++ky)
                  for (int kx = 0; kx < size; ++kx) {
                    const int i = (c * g.H + oy * stride + ky) * g.W + ox * stride + kx;
                    if (best < 0 || x[i] > x[best] || (std::isnan(x[i]) && !std::isnan(x[best]))) best = i;
                  }
                const size_t o = (size_t(c) * g.OH + oy) * g.OW + ox;
                const bool valueOk = std::isnan(x[best]) ? std::isnan(out[o]) : out[o] == x[best];
                same = same && valueOk && idx[o] == best;
              }
          ++cases;
        }
    CHECK_MSG(same, "max-pool values and argmax match the naive scan in " + std::to_string(cases) + " geometries");
  }

  std::printf("batchnorm (training: through the batch statistics; evaluation: running statistics)\n");
  {
    Options train;
    train.training = true;
    train.batch = 5;
    Options eval = train;
    eval.training = false;
    const std::string flat = spec("[4]", dense(6) + "," + batchnorm() + ",{\"kind\":\"activation\",\"fn\":\"tanh\"}," + dense(3));
    check("batchnorm flat, training", flat, train);
    check("batchnorm flat, evaluation", flat, eval);
    check("batchnorm flat, not affine, training",
          spec("[4]", dense(6) + "," + batchnorm(",\"affine\":false") + ",{\"kind\":\"activation\",\"fn\":\"tanh\"}," + dense(3)),
          train);
    check("batchnorm first (input gradient through the batch statistics), eps 0.1",
          spec("[5]", batchnorm(",\"eps\":0.1") + "," + dense(3, "tanh") + "," + dense(3)), train);
    Options image = train;
    image.batch = 3;
    const std::string conv2 = spec("[2,5,4]", conv(3, 3, 3, 1, "same", "linear") + "," + batchnorm() + "," +
                                                  "{\"kind\":\"activation\",\"fn\":\"gelu\"}," + flatten + "," + dense(3));
    check("conv2d -> batchnorm over channels -> gelu, training", conv2, image);
    Options imageEval = image;
    imageEval.training = false;
    check("conv2d -> batchnorm over channels -> gelu, evaluation", conv2, imageEval);
    check("batchnorm over channels, not affine, training",
          spec("[3,4,4]", batchnorm(",\"affine\":false,\"momentum\":0.5") + "," + conv(2, 3, 3, 1, "valid", "tanh") + "," +
                              flatten + "," + dense(3)),
          image);
  }
  {
    // the running statistics: training moves them by momentum (the unbiased variance, as PyTorch);
    // evaluation normalises with them and leaves them be
    ModelSpec s = parseModelSpec(spec("[2]", batchnorm(",\"momentum\":0.25") + "," + dense(2)));
    cpu::ThreadPool pool1(1);
    cpu::Network net(s, 4, pool1);
    std::vector<float> params = initialParameters(s, 0);
    const auto table = parameterTable(s);
    CHECK_MSG(table.size() == 6 && table[0].name == "layers.0.gamma" && table[1].name == "layers.0.beta" &&
                  table[2].name == "layers.0.running_mean" && table[3].name == "layers.0.running_var",
              "batchnorm's tensors: gamma, beta, running_mean, running_var");
    CHECK_MSG(params[0] == 1 && params[1] == 1 && params[2] == 0 && params[3] == 0 && params[4] == 0 && params[5] == 0 &&
                  params[6] == 1 && params[7] == 1,
              "batchnorm starts at gamma 1, beta 0, running mean 0, running variance 1");
    const std::vector<float> x = {1, 10, 2, 20, 3, 30, 6, 40};  // feature 0: mean 3, var 3.5 (unbiased 14/3)
    net.forward(params.data(), x.data(), 4, true, 0, params.data());
    CHECK_NEAR(params[4], 0.25 * 3, 1e-6);
    CHECK_NEAR(params[5], 0.25 * 25, 1e-6);
    CHECK_NEAR(params[6], 0.75 + 0.25 * (14.0 / 3), 1e-5);
    CHECK_NEAR(params[7], 0.75 + 0.25 * (500.0 / 3), 1e-4);
    const std::vector<float> before = params;
    net.forward(params.data(), x.data(), 4, false, 0, params.data());
    CHECK_MSG(params == before, "an evaluation forward leaves the running statistics as they are");
    // the head's input in evaluation is (x - running mean) / sqrt(running var + eps): check through a
    // dense layer set to pick feature 0
    std::fill(params.begin() + 8, params.end(), 0.0f);
    params[8] = 1.0f;  // output 0 = feature 0
    const float* out = net.forward(params.data(), x.data(), 4, false, 0);
    CHECK_NEAR(out[0], (1 - params[4]) / std::sqrt(params[6] + 1e-5), 1e-5);
    const float* outTrain = net.forward(params.data(), x.data(), 4, true, 0);
    CHECK_NEAR(outTrain[0], (1 - 3) / std::sqrt(3.5 + 1e-5), 1e-5);
  }

  std::printf("global average pool\n");
  check("global_avgpool first", spec("[3,4,5]", gap + "," + dense(3)), distinct);
  check("conv2d -> global_avgpool -> dense", spec("[2,5,5]", conv(4, 3, 3, 1, "same") + "," + gap + "," + dense(3)));

  std::printf("residual blocks (identity and 1x1 projection shortcuts)\n");
  {
    check("residual identity, flat, first (input gradient through both branches)",
          spec("[4]", residual(dense(4, "tanh") + "," + dense(4)) + "," + dense(3)));
    check("residual identity, conv -> conv",
          spec("[2,4,4]", conv(2, 3, 3, 1, "same") + "," + residual(conv(2, 3, 3, 1, "same") + "," + conv(2, 3, 3, 1, "same", "linear")) +
                              ",{\"kind\":\"activation\",\"fn\":\"tanh\"}," + flatten + "," + dense(3)));
    check("residual projection: channels 2 -> 3, stride 2 (5x5 -> 3x3)",
          spec("[2,5,5]", residual(conv(3, 3, 3, 2, "same") + "," + conv(3, 3, 3, 1, "same", "linear")) + "," + flatten + "," + dense(3)));
    check("residual projection: channels only (stride 1), after a conv",
          spec("[1,4,4]", conv(2, 2, 2, 1, "same") + "," + residual(conv(3, 3, 3, 1, "same")) + "," + gap + "," + dense(3)));
    Options train;
    train.training = true;
    train.batch = 4;
    check("residual with batchnorm inside, projection, training",
          spec("[2,4,4]", residual(conv(3, 3, 3, 2, "same", "linear") + "," + batchnorm() + ",{\"kind\":\"activation\",\"fn\":\"tanh\"}," +
                                   conv(3, 3, 3, 1, "same", "linear") + "," + batchnorm()) +
                              "," + gap + "," + dense(3)),
          train);
    check("two blocks, batchnorm inside, identity then projection, training",
          spec("[2,4,4]", residual(conv(2, 3, 3, 1, "same", "linear") + "," + batchnorm()) + "," +
                              residual(conv(4, 3, 3, 2, "same") + "," + conv(4, 3, 3, 1, "same", "linear")) + "," + gap + "," +
                              dense(3)),
          train);
    Options eval = train;
    eval.training = false;
    check("residual with batchnorm inside, evaluation",
          spec("[2,4,4]", residual(conv(2, 3, 3, 1, "same", "linear") + "," + batchnorm()) + "," + gap + "," + dense(3)), eval);
    check("residual holding only a flatten-free dropout (x + x at evaluation)",
          spec("[4]", dense(4, "tanh") + "," + residual("{\"kind\":\"dropout\",\"rate\":0.5}") + "," + dense(3)));
    // the tensors' names and order: the block's layers, then its projection
    ModelSpec s = parseModelSpec(spec("[2,4,4]", residual(conv(3, 3, 3, 2, "same") + "," + batchnorm()) + "," + gap + "," + dense(3)));
    const auto table = parameterTable(s);
    std::string names;
    for (const auto& t : table) names += t.name + " ";
    CHECK_MSG(names == "layers.0.layers.0.weight layers.0.layers.0.bias layers.0.layers.1.gamma layers.0.layers.1.beta "
                       "layers.0.layers.1.running_mean layers.0.layers.1.running_var layers.0.shortcut.weight "
                       "layers.0.shortcut.bias layers.2.weight layers.2.bias ",
              "a block's tensors: its layers', then the shortcut's; got " + names);
    CHECK_MSG(table[6].shape == std::vector<int>({3, 2, 1, 1}), "the projection's weight is (out, in, 1, 1)");
  }

  std::printf("flatten, dropout\n");
  check("flatten first", spec("[2,3,3]", flatten + "," + dense(4, "tanh") + "," + dense(3)));
  check("conv -> flatten -> dense", spec("[1,4,4]", conv(2, 2, 2, 1, "valid") + "," + flatten + "," + dense(2)));
  Options drop;
  drop.training = true;
  check("dropout 0.5 (fixed seed mask)",
        spec("[6]", dense(8, "tanh") + ",{\"kind\":\"dropout\",\"rate\":0.5}," + dense(3)), drop);
  check("dropout at evaluation", spec("[6]", dense(8, "tanh") + ",{\"kind\":\"dropout\",\"rate\":0.5}," + dense(3)));
  {
    // the mask really drops values, scales the rest by 1/(1-rate), and is a function of the seed
    ModelSpec s = parseModelSpec(spec("[1,1,200]", "{\"kind\":\"dropout\",\"rate\":0.25}," + flatten + "," + dense(1), "mse"));
    cpu::ThreadPool pool1(1);
    cpu::Network net(s, 1, pool1);
    std::vector<float> x(200, 1.0f), params = initialParameters(s, 0);
    net.forward(params.data(), x.data(), 1, true, 99);
    const float* dropped = nullptr;
    (void)dropped;
    std::vector<float> out1(net.outputs(), net.outputs() + 1);
    net.forward(params.data(), x.data(), 1, false, 99);
    std::vector<float> evalOut(net.outputs(), net.outputs() + 1);
    CHECK_MSG(out1 != evalOut, "dropout changes the training output, not the evaluation one");
  }

  std::printf("losses\n");
  check("softmax_cross_entropy K=4", spec("[4]", dense(5, "tanh") + "," + dense(4)));
  check("softmax_cross_entropy, trailing softmax folded", spec("[4]", dense(5, "tanh") + "," + dense(4, "softmax")));
  check("binary_cross_entropy K=1", spec("[4]", dense(5, "tanh") + "," + dense(1), "binary_cross_entropy"));
  check("binary_cross_entropy K=1, sigmoid folded", spec("[4]", dense(5, "tanh") + "," + dense(1, "sigmoid"), "binary_cross_entropy"));
  check("binary_cross_entropy K=3", spec("[4]", dense(5, "tanh") + "," + dense(3), "binary_cross_entropy"));
  check("mse K=1", spec("[4]", dense(5, "tanh") + "," + dense(1), "mse"));
  check("mse K=3", spec("[4]", dense(5, "tanh") + "," + dense(3), "mse"));
  Options away;
  away.headBias = 3.0f;  // outputs near 3, targets 0/1: |y - t| stays far from the kink at 0
  check("mae K=1 (away from the kink)", spec("[4]", dense(5, "tanh") + "," + dense(1), "mae"), away);
  check("mae K=3 (away from the kink)", spec("[4]", dense(5, "tanh") + "," + dense(3), "mae"), away);

  std::printf("regression heads (float targets), class weights\n");
  const std::string regression = ",\"task\":\"regression\"";
  Options wide;
  wide.batch = 5;
  check("regression mse K=1", spec("[4]", dense(5, "tanh") + "," + dense(1), "mse", regression), wide);
  check("regression mse K=3", spec("[4]", dense(5, "tanh") + "," + dense(3), "mse", regression), wide);
  Options offset = wide;
  offset.targetOffset = 4.0f;  // targets near 4, outputs near 0: away from MAE's kink
  check("regression mae K=2 (away from the kink)", spec("[4]", dense(5, "tanh") + "," + dense(2), "mae", regression), offset);
  // huber: delta 0.4 with targets in [-1, 1]: some elements in the quadratic zone, some in the linear one
  check("regression huber K=3 delta 0.4",
        spec("[4]", dense(5, "tanh") + "," + dense(3), "huber", regression + ",\"huberDelta\":0.4"), wide);
  check("regression huber K=2 delta 1 (quadratic zone)", spec("[4]", dense(5, "tanh") + "," + dense(2), "huber", regression),
        wide);
  check("regression huber K=1 delta 0.05 (linear zone)",
        spec("[4]", dense(5, "tanh") + "," + dense(1), "huber", regression + ",\"huberDelta\":0.05"), offset);
  Options weighted;
  weighted.batch = 6;
  weighted.classWeights = {0.5f, 2.0f, 1.25f, 3.0f};
  check("softmax_cross_entropy K=4, class weights", spec("[4]", dense(5, "tanh") + "," + dense(4)), weighted);
  Options weightedBinary;
  weightedBinary.batch = 6;
  weightedBinary.classWeights = {0.3f, 2.5f};
  check("binary_cross_entropy K=1, class weights", spec("[4]", dense(5, "tanh") + "," + dense(1), "binary_cross_entropy"),
        weightedBinary);
  {
    // the weighted loss is the hand formula sum(w_y * l) / sum(w_y), and weights all 1 change no bit
    ModelSpec s = parseModelSpec(spec("[2]", dense(3)));
    std::vector<float> params = initialParameters(s, 2), x = {0.3f, -0.7f, 1.1f, 0.2f, -0.4f, 0.9f};
    std::vector<int32_t> y = {2, 0, 2};
    std::vector<float> w = {0.5f, 1.0f, 3.0f}, ones = {1.0f, 1.0f, 1.0f};
    std::vector<float> out, g, out1, g1, out0, g0;
    const double weightedLoss = forwardBackwardCpu(s, params, x.data(), y.data(), 3, false, out, g, 0, nullptr, w.data());
    double num = 0, den = 0;
    for (int n = 0; n < 3; ++n) {
      double se = 0;
      for (int k = 0; k < 3; ++k) se += std::exp(double(out[n * 3 + k]));
      num += w[y[n]] * (std::log(se) - out[n * 3 + y[n]]);
      den += w[y[n]];
    }
    CHECK_NEAR(weightedLoss, num / den, 1e-6);
    const double l1 = forwardBackwardCpu(s, params, x.data(), y.data(), 3, false, out1, g1, 0, nullptr, ones.data());
    const double l0 = forwardBackwardCpu(s, params, x.data(), y.data(), 3, false, out0, g0);
    CHECK_MSG(l1 == l0 && g1 == g0, "class weights all 1 give the unweighted loss and gradients bit for bit");
  }
  {
    // folding: with a trailing softmax the outputs are still the logits and nothing changes
    ModelSpec a = parseModelSpec(spec("[4]", dense(3, "softmax")));
    ModelSpec b = parseModelSpec(spec("[4]", dense(3)));
    std::vector<float> params = initialParameters(a, 1), x = {0.1f, -0.2f, 0.3f, 0.5f, 1, 2, -1, 0};
    std::vector<int32_t> y = {2, 0};
    std::vector<float> oa, ob, ga, gb;
    double la = forwardBackwardCpu(a, params, x.data(), y.data(), 2, false, oa, ga);
    double lb = forwardBackwardCpu(b, params, x.data(), y.data(), 2, false, ob, gb);
    CHECK_MSG(la == lb && oa == ob && ga == gb, "a trailing softmax is folded into softmax_cross_entropy");
    // and the loss is the hand formula: mean of logsumexp(z) - z_y
    double expected = 0;
    for (int n = 0; n < 2; ++n) {
      double se = 0;
      for (int k = 0; k < 3; ++k) se += std::exp(double(ob[n * 3 + k]));
      expected += std::log(se) - ob[n * 3 + y[n]];
    }
    CHECK_NEAR(lb, expected / 2, 1e-6);
  }

  std::printf("negative control\n");
  {
    // the comparison must reject a gradient that is 5 % off on a single element
    std::vector<double> a = {0.5, -0.25, 0.125, 0.01}, n = a;
    a[1] *= 1.05;
    CHECK_MSG(!compare(a, n).ok(), "a 5 % error on one element fails the check");
    a = n;
    a[3] = -a[3];
    CHECK_MSG(!compare(a, n).ok(), "a sign error on a small element fails the check");
    CHECK_MSG(compare(n, n).ok(), "identical vectors pass");
  }
  return nnstudio_test::summary();
}
