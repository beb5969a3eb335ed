// The training recipe's pieces on the CPU: label smoothing (a value worked out by hand, PyTorch's
// CrossEntropyLoss(label_smoothing) formula, and its gradient against central differences), the spec's
// optimizer and smoothing fields, augmentation (determinism per seed and step, what each transform does),
// the option checks, and the weight average (EMA) of a run. Exact resume with all of them on is in
// train_control_checks.h (test_train_control).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "nnstudio/engine.h"
#include "spec/augment.h"
#include "spec/model.h"
#include "test_util.h"
#include "train_control_checks.h"

using namespace nnstudio;

namespace {

double smoothedLoss(const std::vector<float>& z, const std::vector<int32_t>& y, int K, float s, float* dz) {
  NetworkPlan plan;
  plan.loss = LossKind::SoftmaxCrossEntropy;
  plan.labelSmoothing = s;
  LossTargets targets;
  targets.labels = y.data();
  LossCounts counts;
  return cpu::loss_forward_backward(plan, z.data(), targets, int(y.size()), K, dz, &counts);
}

void checkLabelSmoothing() {
  std::printf("label smoothing\n");
  // z = [1, 0], label 0, s = 0.2: q = [0.9, 0.1]; PyTorch's -sum q log softmax(z)
  //   = 0.9 * 0.3132617 + 0.1 * 1.3132617 = 0.4132617; grad = softmax(z) - q = [0.7310586 - 0.9, 0.2689414 - 0.1]
  std::vector<float> dz(2);
  CHECK_NEAR(smoothedLoss({1.0f, 0.0f}, {0}, 2, 0.2f, dz.data()), 0.4132617, 1e-6);
  CHECK_NEAR(dz[0], 0.7310586 - 0.9, 1e-6);
  CHECK_NEAR(dz[1], 0.2689414 - 0.1, 1e-6);
  // s = 0: the plain loss, bit for bit
  std::vector<float> plain(2), zero(2);
  const double a = cpu::loss_forward_backward(LossKind::SoftmaxCrossEntropy, std::vector<float>{1.0f, 0.0f}.data(),
                                              std::vector<int32_t>{0}.data(), 1, 2, plain.data(), nullptr);
  const double b = smoothedLoss({1.0f, 0.0f}, {0}, 2, 0.0f, zero.data());
  CHECK_MSG(a == b && plain == zero, "label smoothing 0 is the plain cross-entropy (bits)");

  // the gradient against central differences of the loss, 3 rows of 5 classes, s = 0.1
  const int N = 3, K = 5;
  std::vector<float> z(N * K);
  Rng rng(7);
  for (float& v : z) v = 4.0f * (rng.uniform() - 0.5f);
  const std::vector<int32_t> y = {4, 0, 2};
  std::vector<float> grad(N * K);
  smoothedLoss(z, y, K, 0.1f, grad.data());
  double worst = 0;
  for (int i = 0; i < N * K; ++i) {
    const float h = 1e-2f;
    std::vector<float> up = z, down = z;
    up[i] += h;
    down[i] -= h;
    const double numeric = (smoothedLoss(up, y, K, 0.1f, nullptr) - smoothedLoss(down, y, K, 0.1f, nullptr)) /
                           (double(up[i]) - double(down[i]));
    worst = std::max(worst, std::fabs(numeric - grad[i]));
  }
  CHECK_MSG(worst < 1e-4, "label smoothing's gradient matches central differences (worst " +
                              nnstudio_test::num(worst) + ")");
}

void checkSpecFields() {
  std::printf("spec fields\n");
  const std::string base = "{\"input\":[4],\"layers\":[{\"kind\":\"dense\",\"units\":3}],\"loss\":";
  auto spec = [&](const std::string& loss, const std::string& optimizer, const std::string& extra = "") {
    return parseModelSpec(base + "\"" + loss + "\",\"optimizer\":" + optimizer + extra + ",\"seed\":0}");
  };
  const ModelSpec adamw = spec("softmax_cross_entropy", "{\"kind\":\"adamw\",\"lr\":0.001,\"weightDecay\":0.05}",
                               ",\"labelSmoothing\":0.1");
  CHECK(adamw.optimizer.kind == OptimizerKind::AdamW && adamw.optimizer.decoupled());
  CHECK_NEAR(adamw.labelSmoothing, 0.1, 1e-7);
  const ModelSpec nesterov =
      spec("mse", "{\"kind\":\"sgd\",\"lr\":0.1,\"momentum\":0.9,\"nesterov\":true,\"decoupledWeightDecay\":true}");
  CHECK(nesterov.optimizer.nesterov && nesterov.optimizer.decoupled());
  CHECK_THROWS(spec("softmax_cross_entropy", "{\"kind\":\"sgd\",\"lr\":0.1,\"nesterov\":true}"), SpecError,
               "nesterov needs a momentum > 0");
  CHECK_THROWS(spec("softmax_cross_entropy", "{\"kind\":\"sgd\",\"lr\":0.1,\"nesterov\":1}"), SpecError,
               "\"nesterov\" must be true or false");
  CHECK_THROWS(spec("mse", "{\"kind\":\"adam\",\"lr\":0.1}", ",\"labelSmoothing\":0.1"), SpecError,
               "labelSmoothing needs loss softmax_cross_entropy");
  CHECK_THROWS(spec("softmax_cross_entropy", "{\"kind\":\"adam\",\"lr\":0.1}", ",\"labelSmoothing\":0.6"), SpecError,
               "\"labelSmoothing\" must be in [0, 0.5]");
  CHECK_THROWS(spec("softmax_cross_entropy", "{\"kind\":\"lamb\",\"lr\":0.1}"), SpecError, "expected sgd, adam or adamw");
}

// ---- augmentation ----

std::vector<float> ramp(int n, int C, int H, int W) {
  std::vector<float> x(size_t(n) * C * H * W);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + float(i % 997) / 997.0f;  // never 0: padding shows as 0
  return x;
}

std::vector<float> augmented(const std::vector<float>& in, int n, int C, int H, int W, const Augmentation& a,
                             uint64_t seed, int64_t step) {
  std::vector<float> out(in.size(), -1.0f);
  cpu::augment_batch(nullptr, out.data(), in.data(), n, C, H, W, a, seed, step);
  return out;
}

void checkAugmentation() {
  std::printf("augmentation\n");
  const int n = 16, C = 3, H = 12, W = 10;
  const std::vector<float> x = ramp(n, C, H, W);
  Augmentation all;
  all.translate = 2;
  all.flip = true;
  all.rotate = 15;
  all.scale = 0.1f;
  all.erase = 0.5f;
  const std::vector<float> a = augmented(x, n, C, H, W, all, 5, 40);
  CHECK_MSG(nnstudio_test::sameBits(a, augmented(x, n, C, H, W, all, 5, 40)), "same seed and step: the same batch");
  CHECK_MSG(a != augmented(x, n, C, H, W, all, 5, 41), "another step: another batch");
  CHECK_MSG(a != augmented(x, n, C, H, W, all, 6, 40), "another seed: another batch");
  CHECK_MSG(a != x, "the batch changed");
  // the pool's split does not change a value
  cpu::ThreadPool pool(2);
  std::vector<float> pooled(x.size());
  cpu::augment_batch(&pool, pooled.data(), x.data(), n, C, H, W, all, 5, 40);
  CHECK_MSG(nnstudio_test::sameBits(a, pooled), "two threads give the same batch as one");

  // translation alone: each sample is its input shifted by whole pixels (dy, dx in [-2, 2]), zeros padded
  Augmentation shift;
  shift.translate = 2;
  const std::vector<float> s = augmented(x, n, C, H, W, shift, 5, 3);
  bool shifted = true, someMoved = false;
  for (int i = 0; i < n; ++i) {
    const SampleTransform t = drawTransform(shift, 5, 3, i, H, W);
    shifted = shifted && std::abs(t.shiftY) <= 2 && std::abs(t.shiftX) <= 2 && !t.flip && !t.erase && !t.affine;
    someMoved = someMoved || t.shiftY != 0 || t.shiftX != 0;
    for (int c = 0; c < C; ++c)
      for (int yy = 0; yy < H; ++yy)
        for (int xx = 0; xx < W; ++xx) {
          const int sy = yy - t.shiftY, sx = xx - t.shiftX;
          const size_t o = ((size_t(i) * C + c) * H + yy) * W + xx;
          const float want = sy >= 0 && sy < H && sx >= 0 && sx < W ? x[((size_t(i) * C + c) * H + sy) * W + sx] : 0.0f;
          shifted = shifted && s[o] == want;
        }
  }
  CHECK_MSG(shifted && someMoved, "translate: whole-pixel shifts within +-2 with zero padding");

  // flip alone: about half the samples mirrored, the others untouched
  Augmentation flip;
  flip.flip = true;
  const std::vector<float> f = augmented(x, n, C, H, W, flip, 5, 3);
  int mirrored = 0;
  bool exact = true;
  for (int i = 0; i < n; ++i) {
    const bool m = drawTransform(flip, 5, 3, i, H, W).flip;
    mirrored += m;
    for (int c = 0; c < C; ++c)
      for (int yy = 0; yy < H; ++yy)
        for (int xx = 0; xx < W; ++xx) {
          const size_t base = (size_t(i) * C + c) * H + yy;
          exact = exact && f[base * W + xx] == x[base * W + (m ? W - 1 - xx : xx)];
        }
  }
  CHECK_MSG(exact && mirrored > 0 && mirrored < n, "flip: mirrored samples are exact mirror images, some are not flipped (" +
                                                       std::to_string(mirrored) + " of 16)");

  // erase with probability 1: every sample has one zero rectangle of 2 % to 33 % of the image, in every channel
  Augmentation erase;
  erase.erase = 1.0f;
  const std::vector<float> e = augmented(x, n, C, H, W, erase, 5, 3);
  bool rectangles = true;
  for (int i = 0; i < n; ++i) {
    const SampleTransform t = drawTransform(erase, 5, 3, i, H, W);
    const int area = t.eraseH * t.eraseW;
    int zeros = 0;
    for (size_t k = 0; k < size_t(C) * H * W; ++k) zeros += e[size_t(i) * C * H * W + k] == 0.0f;
    rectangles = rectangles && t.erase && zeros == C * area && area >= 1 && area <= H * W * 0.34 + 2 &&
                 t.eraseTop + t.eraseH <= H && t.eraseLeft + t.eraseW <= W;
  }
  CHECK_MSG(rectangles, "erase: one zero rectangle per sample, inside the image, in every channel");

  // rotation by 0 and scale 1 sample the grid itself: the bilinear path returns the input
  SampleTransform identity;
  identity.affine = true;
  bool same = true;
  for (int yy = 0; yy < H; ++yy)
    for (int xx = 0; xx < W; ++xx) same = same && augmentedPixel(x.data(), H, W, yy, xx, identity) == x[yy * W + xx];
  CHECK_MSG(same, "the bilinear path at angle 0, scale 1 is the identity");
  // rotation by 90 degrees of a square image maps pixels onto pixels (up to float rounding)
  SampleTransform quarter;
  quarter.affine = true;
  quarter.cosA = 0.0f;
  quarter.sinA = 1.0f;
  const int S = 6;
  std::vector<float> sq(S * S);
  for (int i = 0; i < S * S; ++i) sq[i] = float(i);
  double err = 0;
  for (int yy = 0; yy < S; ++yy)
    for (int xx = 0; xx < S; ++xx) err = std::max(err, (double)std::fabs(augmentedPixel(sq.data(), S, S, yy, xx, quarter) -
                                                                  sq[(S - 1 - xx) * S + yy]));
  CHECK_MSG(err < 1e-4, "a quarter turn maps the grid onto itself");
}

void checkOptionErrors() {
  std::printf("option checks\n");
  auto backend = createBackend(DeviceKind::CPU, 1);
  const nnstudio_test::ControlData d = nnstudio_test::controlBars(48, 3);
  const DatasetView view = d.view();
  const ModelSpec images = parseModelSpec(nnstudio_test::controlSpec("{\"kind\":\"adam\",\"lr\":0.01}"));
  TrainOptions o = nnstudio_test::controlOptions(1);
  o.ema = 1.0;
  CHECK_THROWS(backend->train(images, view, nullptr, o, nullptr, nullptr), EngineError, "ema must be a decay in [0, 1)");
  o.ema = 0;
  o.augment.translate = 5;
  CHECK_THROWS(backend->train(images, view, nullptr, o, nullptr, nullptr), EngineError, "translate must be 0..4");
  o.augment.translate = 1;
  o.augment.scale = 0.9f;
  CHECK_THROWS(backend->train(images, view, nullptr, o, nullptr, nullptr), EngineError, "scale must be a fraction");
  o.augment.scale = 0;
  const ModelSpec flat = parseModelSpec(
      "{\"input\":[64],\"layers\":[{\"kind\":\"dense\",\"units\":2}],\"loss\":\"softmax_cross_entropy\","
      "\"optimizer\":{\"kind\":\"adam\",\"lr\":0.01},\"seed\":0}");
  CHECK_THROWS(backend->train(flat, view, nullptr, o, nullptr, nullptr), EngineError, "augmentation needs image inputs");
}

// The weight average: the result is the average, validated each epoch; with decay d after one step from w0
// it is d w0 + (1 - d) w1.
void checkEma() {
  std::printf("ema\n");
  auto backend = createBackend(DeviceKind::CPU, 1);
  const nnstudio_test::ControlData d = nnstudio_test::controlBars(24, 4), v = nnstudio_test::controlBars(40, 5);
  const DatasetView view = d.view(), val = v.view();
  const ModelSpec spec = parseModelSpec(nnstudio_test::controlSpec("{\"kind\":\"sgd\",\"lr\":0.1,\"momentum\":0.9}"));
  TrainOptions o = nnstudio_test::controlOptions(1);  // one step: 24 samples, batch 24
  const TrainResult plain = backend->train(spec, view, &val, o, nullptr, nullptr);
  o.ema = 0.75;
  nnstudio_test::CheckpointRecorder rec;
  const TrainResult averaged = backend->train(spec, view, &val, o, &rec, nullptr);
  const std::vector<float> w0 = initialParameters(spec, spec.seed);
  double worst = 0;
  for (size_t i = 0; i < w0.size(); ++i)
    worst = std::max(worst, std::fabs(double(averaged.parameters[i]) - (0.75 * w0[i] + 0.25 * plain.parameters[i])));
  CHECK_MSG(worst < 1e-6, "after one step the result is 0.75 w0 + 0.25 w1 (worst " + nnstudio_test::num(worst) + ")");
  CHECK_MSG(rec.states.size() == 1 && nnstudio_test::sameBits(rec.states[0].parameters, plain.parameters) &&
                nnstudio_test::sameBits(rec.states[0].emaParameters, averaged.parameters),
            "the checkpoint keeps the trained weights and the average apart");
  const EvalResult eval = backend->evaluate(spec, averaged.parameters, val);
  CHECK_NEAR(averaged.history[0].validationLoss, eval.loss, 1e-6);
}

// TTA: the average of the five views' probabilities, each view built here by hand.
void checkTta() {
  std::printf("test-time augmentation\n");
  auto backend = createBackend(DeviceKind::CPU, 1);
  const nnstudio_test::ControlData d = nnstudio_test::controlBars(30, 8);
  const DatasetView view = d.view();
  const ModelSpec spec = parseModelSpec(nnstudio_test::controlSpec("{\"kind\":\"adam\",\"lr\":0.01}"));
  const std::vector<float> w = initialParameters(spec, 1);
  const EvalResult tta = evaluateWithTta(*backend, spec, w, view, 7, true);
  std::vector<double> sum(size_t(view.count) * 2, 0.0);
  const int shifts[5][3] = {{0, 0, 0}, {0, 1, 0}, {0, -1, 0}, {1, 0, 0}, {-1, 0, 0}};
  for (int v = 0; v < 6; ++v) {
    const int dy = v < 5 ? shifts[v][0] : 0, dx = v < 5 ? shifts[v][1] : 0;
    const bool flip = v == 5;
    std::vector<float> x(d.x.size());
    for (int64_t i = 0; i < view.count; ++i)
      for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 8; ++c) {
          const int sr = r - dy, sc0 = c - dx, sc = flip ? 7 - sc0 : sc0;
          x[size_t(i * 64 + r * 8 + c)] = sr >= 0 && sr < 8 && sc >= 0 && sc < 8 ? d.x[size_t(i * 64 + sr * 8 + sc)] : 0.0f;
        }
    DatasetView shifted = view;
    shifted.features = x.data();
    const EvalResult r = backend->evaluate(spec, w, shifted, 7);
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += r.probabilities[k] / 6.0;
  }
  double worst = 0;
  for (size_t k = 0; k < sum.size(); ++k) worst = std::max(worst, std::fabs(sum[k] - tta.probabilities[k]));
  CHECK_MSG(worst < 1e-6, "the probabilities are the mean over the input, 4 shifts and the mirror (worst " +
                              nnstudio_test::num(worst) + ")");
  int64_t diagonal = 0, total = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) (a == b ? diagonal : total) += tta.confusion[size_t(a * 2 + b)];
  total += diagonal;
  CHECK_MSG(total == view.count && std::fabs(double(diagonal) / double(total) - tta.accuracy) < 1e-12,
            "accuracy and confusion come from the averaged predictions");
  const ModelSpec flat = parseModelSpec(
      "{\"input\":[64],\"layers\":[{\"kind\":\"dense\",\"units\":2}],\"loss\":\"softmax_cross_entropy\","
      "\"optimizer\":{\"kind\":\"adam\",\"lr\":0.01},\"seed\":0}");
  CHECK_THROWS(evaluateWithTta(*backend, flat, initialParameters(flat, 1), view), EngineError, "needs image inputs");
}

}  // namespace

int main() {
  try {
    checkLabelSmoothing();
    checkSpecFields();
    checkAugmentation();
    checkOptionErrors();
    checkEma();
    checkTta();
  } catch (const std::exception& e) {
    std::printf("  FAIL  unexpected exception: %s\n", e.what());
    ++nnstudio_test::failed();
  }
  return nnstudio_test::summary();
}
