// Training tests of the CPU backend: synthetic separable problems reach high accuracy; the same seed
// gives bit-identical weights; cancel and pause act within one step; a huge learning rate ends as
// Diverged with the last finite weights; invalid inputs raise EngineError with a clear message;
// evaluation's predictions and probabilities; one trainer step equals forwardBackwardCpu + the optimizer.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "nnstudio/engine.h"
#include "spec/rng.h"
#include "test_util.h"

using namespace nnstudio;

namespace {

struct Data {
  std::vector<float> x;
  std::vector<int32_t> y;
  int64_t featureSize = 0;
  DatasetView view() const { return DatasetView{x.data(), y.data(), int64_t(y.size()), featureSize}; }
};

float gaussian(Rng& rng) {
  // Box-Muller on the portable RNG
  const double u1 = (rng.next() >> 11) * (1.0 / 9007199254740992.0) + 1e-300, u2 = rng.uniform();
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

// `classes` Gaussian blobs in 2-D: centres on a circle of radius 3, spread 0.5
Data blobs(int count, int classes, uint64_t seed) {
  Data d;
  d.featureSize = 2;
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const int c = int(rng.below(uint32_t(classes)));
    const double angle = 6.283185307179586 * c / classes;
    d.x.push_back(float(3 * std::cos(angle)) + 0.5f * gaussian(rng));
    d.x.push_back(float(3 * std::sin(angle)) + 0.5f * gaussian(rng));
    d.y.push_back(c);
  }
  return d;
}

// 1x8x8 images: a horizontal (class 0) or vertical (class 1) bar at a random place, plus noise
Data bars(int count, uint64_t seed) {
  Data d;
  d.featureSize = 64;
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const int c = int(rng.below(2)), at = int(rng.below(8));
    for (int r = 0; r < 8; ++r)
      for (int k = 0; k < 8; ++k) {
        const bool on = c == 0 ? r == at : k == at;
        d.x.push_back((on ? 1.0f : 0.0f) + 0.2f * (rng.uniform() - 0.5f));
      }
    d.y.push_back(c);
  }
  return d;
}

const char* kBlobsSpec =
    "{\"input\":[2],\"layers\":[{\"kind\":\"dense\",\"units\":16,\"activation\":\"relu\"},{\"kind\":\"dense\",\"units\":4}],"
    "\"loss\":\"softmax_cross_entropy\",\"optimizer\":{\"kind\":\"adam\",\"lr\":0.01},\"seed\":1}";
const char* kBarsSpec =
    "{\"input\":[1,8,8],\"layers\":[{\"kind\":\"conv2d\",\"filters\":4,\"kernel\":[3,3],\"padding\":\"same\","
    "\"activation\":\"relu\"},{\"kind\":\"maxpool2d\",\"size\":2},{\"kind\":\"dropout\",\"rate\":0.1},"
    "{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":2}],"
    "\"loss\":\"softmax_cross_entropy\",\"optimizer\":{\"kind\":\"sgd\",\"lr\":0.1,\"momentum\":0.9},\"seed\":2}";

struct Recorder : ProgressSink {
  std::vector<StepProgress> steps;
  std::vector<EpochStats> epochs;
  std::function<void(const StepProgress&)> onEachStep;
  void onStep(const StepProgress& s) override {
    steps.push_back(s);
    if (onEachStep) onEachStep(s);
  }
  void onEpoch(const EpochStats& e) override { epochs.push_back(e); }
};

bool allFinite(const std::vector<float>& v) {
  for (float f : v)
    if (!std::isfinite(f)) return false;
  return true;
}

TrainOptions options(int epochs, int batch, int threads = 2) {
  TrainOptions o;
  o.epochs = epochs;
  o.batchSize = batch;
  o.threads = threads;
  o.seed = 7;
  o.progressIntervalSeconds = 0;  // every step reports, so sinks can act at an exact step
  return o;
}

}  // namespace

int main() {
  auto backend = createBackend(DeviceKind::CPU, 2);

  // ---- learns separable problems ----
  std::printf("learning\n");
  {
    ModelSpec spec = parseModelSpec(kBlobsSpec);
    Data train = blobs(800, 4, 1), val = blobs(200, 4, 2);
    DatasetView tv = train.view(), vv = val.view();
    Recorder rec;
    TrainResult r = backend->train(spec, tv, &vv, options(8, 32), &rec, nullptr);
    CHECK(r.status == TrainStatus::Completed);
    CHECK(r.history.size() == 8 && rec.epochs.size() == 8);
    CHECK_MSG(r.history.back().hasValidation && r.history.back().validationAccuracy > 0.95,
              "blobs (dense): validation accuracy " + nnstudio_test::num(r.history.back().validationAccuracy) + " > 0.95");
    CHECK_MSG(r.history.back().trainLoss < r.history.front().trainLoss, "train loss falls over the epochs");
    CHECK(r.steps == 8 * 25);
    CHECK(r.device == "cpu (2 threads)");
    CHECK(rec.steps.size() == 8 * 25 && rec.steps.back().globalStep == 200 && rec.steps.back().totalSteps == 200 &&
          rec.steps.back().stepsPerEpoch == 25 && rec.steps.back().etaSeconds == 0);
    EvalResult e = backend->evaluate(spec, r.parameters, vv, 64);
    CHECK_NEAR(e.accuracy, r.history.back().validationAccuracy, 1e-12);
    CHECK_NEAR(e.loss, r.history.back().validationLoss, 1e-6);
  }
  {
    ModelSpec spec = parseModelSpec(kBarsSpec);
    Data train = bars(600, 3), val = bars(200, 4);
    DatasetView tv = train.view(), vv = val.view();
    TrainResult r = backend->train(spec, tv, &vv, options(4, 20), nullptr, nullptr);
    CHECK_MSG(r.status == TrainStatus::Completed && r.history.back().validationAccuracy > 0.95,
              "bars (conv, maxpool, dropout): validation accuracy " +
                  nnstudio_test::num(r.history.back().validationAccuracy) + " > 0.95");
  }
  {
    // one sigmoid output with binary cross-entropy: probabilities [1-p, p]
    ModelSpec spec = parseModelSpec(
        "{\"input\":[2],\"layers\":[{\"kind\":\"dense\",\"units\":8,\"activation\":\"tanh\"},{\"kind\":\"dense\",\"units\":1,"
        "\"activation\":\"sigmoid\"}],\"loss\":\"binary_cross_entropy\",\"optimizer\":{\"kind\":\"adam\",\"lr\":0.02},\"seed\":0}");
    Data train = blobs(400, 2, 5), test = blobs(200, 2, 6);
    DatasetView tv = train.view(), sv = test.view();
    TrainResult r = backend->train(spec, tv, nullptr, options(5, 16), nullptr, nullptr);
    EvalResult e = backend->evaluate(spec, r.parameters, sv, 50);
    CHECK_MSG(e.accuracy > 0.95, "binary (1 output, BCE): test accuracy " + nnstudio_test::num(e.accuracy) + " > 0.95");
    CHECK(e.classes == 2 && e.probabilities.size() == 400);
    bool consistent = true;
    for (size_t i = 0; i < 200; ++i) {
      const float p0 = e.probabilities[2 * i], p1 = e.probabilities[2 * i + 1];
      consistent = consistent && std::fabs(p0 + p1 - 1) < 1e-6f && e.predictions[i] == (p1 >= 0.5f ? 1 : 0);
    }
    CHECK_MSG(consistent, "probabilities are [1-p, p] and predictions p >= 0.5");
  }

  // ---- determinism ----
  std::printf("determinism\n");
  {
    ModelSpec spec = parseModelSpec(kBarsSpec);
    Data train = bars(300, 9);
    DatasetView tv = train.view();
    TrainResult a = backend->train(spec, tv, nullptr, options(2, 16), nullptr, nullptr);
    TrainResult b = backend->train(spec, tv, nullptr, options(2, 16), nullptr, nullptr);
    CHECK_MSG(a.parameters == b.parameters, "same seed, 2 threads: bit-identical weights (conv + dropout)");
    CHECK(a.history[1].trainLoss == b.history[1].trainLoss);
    TrainOptions other = options(2, 16);
    other.seed = 8;
    TrainResult c = backend->train(spec, tv, nullptr, other, nullptr, nullptr);
    CHECK_MSG(a.parameters != c.parameters, "another data seed, other weights");
    ModelSpec blobsSpec = parseModelSpec(kBlobsSpec);
    Data bt = blobs(500, 4, 3);
    DatasetView bv = bt.view();
    TrainResult d = backend->train(blobsSpec, bv, nullptr, options(2, 32, 1), nullptr, nullptr);
    TrainResult e = backend->train(blobsSpec, bv, nullptr, options(2, 32, 1), nullptr, nullptr);
    CHECK_MSG(d.parameters == e.parameters, "same seed, 1 thread: bit-identical weights (dense)");
  }

  // ---- one step of the trainer == forwardBackwardCpu + optimizerStepCpu ----
  std::printf("trainer step\n");
  {
    ModelSpec spec = parseModelSpec(kBlobsSpec);
    Data train = blobs(40, 4, 11);
    DatasetView tv = train.view();
    TrainOptions o = options(1, 40, 1);
    o.shuffle = false;
    TrainResult r = backend->train(spec, tv, nullptr, o, nullptr, nullptr);
    std::vector<float> params = initialParameters(spec, spec.seed), outputs, grads, state;
    double loss = forwardBackwardCpu(spec, params, train.x.data(), train.y.data(), 40, true, outputs, grads);
    optimizerStepCpu(spec.optimizer, params, grads, state, 1);
    CHECK_MSG(r.parameters == params, "one full-batch step matches forwardBackwardCpu + optimizerStepCpu bit for bit");
    CHECK_NEAR(r.history[0].trainLoss, loss, 1e-12);
  }

  // ---- cancel ----
  std::printf("cancel and pause\n");
  {
    ModelSpec spec = parseModelSpec(kBlobsSpec);
    Data train = blobs(640, 4, 12);
    DatasetView tv = train.view();
    TrainControl control;
    Recorder rec;
    rec.onEachStep = [&](const StepProgress& s) {
      if (s.globalStep == 5) control.cancel = true;
    };
    TrainResult r = backend->train(spec, tv, nullptr, options(3, 32), &rec, &control);
    CHECK(r.status == TrainStatus::Cancelled);
    CHECK_MSG(r.steps == 5, "cancel requested after step 5: stops before step 6 (steps = " + std::to_string(r.steps) + ")");
    CHECK_MSG(r.message.find("cancelled at epoch 1, step 6") != std::string::npos, "message: " + r.message);
    CHECK(allFinite(r.parameters) && r.parameters != initialParameters(spec, spec.seed));
    CHECK(r.history.empty());
    // the weights are those of the last completed step: a 5-step run from the same seed ends there too
    TrainControl control2;
    Recorder rec2;
    rec2.onEachStep = [&](const StepProgress& s) {
      if (s.globalStep == 5) control2.cancel = true;
    };
    TrainResult again = backend->train(spec, tv, nullptr, options(3, 32), &rec2, &control2);
    CHECK(again.parameters == r.parameters);
    TrainControl early;
    early.cancel = true;
    TrainResult none = backend->train(spec, tv, nullptr, options(3, 32), nullptr, &early);
    CHECK_MSG(none.status == TrainStatus::Cancelled && none.steps == 0 && none.parameters == initialParameters(spec, spec.seed),
              "cancelled before the first step: the initial weights");
  }
  {
    // the faults of docs/RELIABILITY.md: a cancel during the first step stops after it (status Cancelled,
    // the weights of that one step); a cancel during the last step comes too late to skip anything: the
    // run completes (all epochs, validation, the uninterrupted run's weights)
    ModelSpec spec = parseModelSpec(kBlobsSpec);
    Data train = blobs(640, 4, 12);
    DatasetView tv = train.view();
    auto cancelAt = [&](int64_t globalStep) {
      TrainControl control;
      Recorder rec;
      rec.onEachStep = [&](const StepProgress& s) {
        if (s.globalStep == globalStep) control.cancel = true;
      };
      TrainOptions o = options(3, 32);
      o.progressIntervalSeconds = 0;
      return backend->train(spec, tv, &tv, o, &rec, &control);
    };
    const TrainResult first = cancelAt(1);
    CHECK_MSG(first.status == TrainStatus::Cancelled && first.steps == 1 && first.history.empty() &&
                  first.message.find("cancelled at epoch 1, step 2 of 20") != std::string::npos,
              "a cancel during the first step stops after it: " + first.message);
    CHECK_MSG(allFinite(first.parameters) && first.parameters != initialParameters(spec, spec.seed) &&
                  cancelAt(1).parameters == first.parameters,
              "the first step's weights, the same on every run");
    const TrainResult last = cancelAt(60);
    TrainOptions o = options(3, 32);
    const TrainResult whole = backend->train(spec, tv, &tv, o, nullptr, nullptr);
    CHECK_MSG(last.status == TrainStatus::Completed && last.steps == 60 && last.history.size() == 3 &&
                  last.history[2].hasValidation && last.parameters == whole.parameters,
              "a cancel during the last step: the run completes with the uninterrupted run's weights");
  }
  {
    // pause at step 2 for ~150 ms, then resume: the run completes and the pause is not counted in the epoch
    ModelSpec spec = parseModelSpec(kBlobsSpec);
    Data train = blobs(320, 4, 13);
    DatasetView tv = train.view();
    TrainControl control;
    std::thread resumer;
    std::atomic<int64_t> stepsWhilePaused{-1};
    Recorder rec;
    rec.onEachStep = [&](const StepProgress& s) {
      if (s.globalStep == 2) {
        control.pause = true;
        resumer = std::thread([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(150));
          stepsWhilePaused = int64_t(rec.steps.size());
          control.pause = false;
        });
      }
    };
    auto t0 = std::chrono::steady_clock::now();
    TrainResult r = backend->train(spec, tv, nullptr, options(1, 32), &rec, &control);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    resumer.join();
    CHECK(r.status == TrainStatus::Completed && r.steps == 10);
    CHECK_MSG(stepsWhilePaused == 2, "no step ran while paused (steps seen at resume: " + std::to_string(stepsWhilePaused.load()) + ")");
    CHECK_MSG(wall >= 0.15 && r.history[0].seconds < wall - 0.1,
              "pause held the run (" + nnstudio_test::num(wall) + " s) and is not in the epoch time (" +
                  nnstudio_test::num(r.history[0].seconds) + " s)");
    // pause, then cancel while paused
    TrainControl control2;
    std::thread canceller;
    Recorder rec2;
    rec2.onEachStep = [&](const StepProgress& s) {
      if (s.globalStep == 3) {
        control2.pause = true;
        canceller = std::thread([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          control2.cancel = true;
        });
      }
    };
    TrainResult c = backend->train(spec, tv, nullptr, options(1, 32), &rec2, &control2);
    canceller.join();
    CHECK_MSG(c.status == TrainStatus::Cancelled && c.steps == 3, "cancel while paused stops the run");
  }

  // ---- divergence ----
  std::printf("divergence\n");
  {
    ModelSpec spec = parseModelSpec(
        "{\"input\":[2],\"layers\":[{\"kind\":\"dense\",\"units\":16,\"activation\":\"relu\"},{\"kind\":\"dense\",\"units\":4}],"
        "\"loss\":\"mse\",\"optimizer\":{\"kind\":\"sgd\",\"lr\":1000},\"seed\":1}");
    Data train = blobs(640, 4, 14);
    DatasetView tv = train.view();
    TrainResult r = backend->train(spec, tv, nullptr, options(3, 32), nullptr, nullptr);
    CHECK(r.status == TrainStatus::Diverged);
    CHECK_MSG(r.message.find("training diverged at epoch ") == 0 && r.message.find(", step ") != std::string::npos &&
                  (r.message.find("NaN") != std::string::npos || r.message.find("infinite") != std::string::npos) &&
                  r.message.find("lower learning rate") != std::string::npos,
              "message: " + r.message);
    CHECK_MSG(allFinite(r.parameters), "the returned weights are all finite");
    // they are the weights of the last step whose loss was finite: the run cancelled one step earlier
    // (before that step's update) holds the same weights
    const int64_t keep = r.steps - 1;
    TrainControl control;
    if (keep <= 0) control.cancel = true;
    Recorder rec;
    rec.onEachStep = [&](const StepProgress& s) {
      if (s.globalStep == keep) control.cancel = true;
    };
    TrainResult earlier = backend->train(spec, tv, nullptr, options(3, 32), &rec, &control);
    CHECK_MSG(earlier.status == TrainStatus::Cancelled && earlier.parameters == r.parameters,
              "loss not finite at step " + std::to_string(r.steps + 1) + ": kept the weights after " + std::to_string(keep) +
                  " updates (the last with a finite loss)");
  }

  // ---- invalid inputs ----
  std::printf("invalid inputs\n");
  {
    ModelSpec spec = parseModelSpec(kBlobsSpec);
    Data d = blobs(50, 4, 15);
    DatasetView v = d.view();
    TrainOptions o = options(1, 10);
    d.y[17] = 4;
    CHECK_THROWS(backend->train(spec, v, nullptr, o, nullptr, nullptr), EngineError,
                 "training data: label 4 of sample 17 (0-based) is outside [0, 4)");
    d.y[17] = -1;
    CHECK_THROWS(backend->train(spec, v, nullptr, o, nullptr, nullptr), EngineError, "label -1 of sample 17");
    d.y[17] = 0;
    DatasetView wrong = v;
    wrong.featureSize = 3;
    CHECK_THROWS(backend->train(spec, wrong, nullptr, o, nullptr, nullptr), EngineError,
                 "training data: each sample has 3 features but the model expects 2 (input 2)");
    DatasetView noFeatures = v;
    noFeatures.features = nullptr;
    CHECK_THROWS(backend->train(spec, noFeatures, nullptr, o, nullptr, nullptr), EngineError, "no features");
    DatasetView noLabels = v;
    noLabels.labels = nullptr;
    CHECK_THROWS(backend->train(spec, noLabels, nullptr, o, nullptr, nullptr), EngineError, "no labels");
    DatasetView empty = v;
    empty.count = 0;
    CHECK_THROWS(backend->train(spec, empty, nullptr, o, nullptr, nullptr), EngineError, "training data is empty");
    TrainOptions badBatch = o;
    badBatch.batchSize = 0;
    CHECK_THROWS(backend->train(spec, v, nullptr, badBatch, nullptr, nullptr), EngineError, "batch size must be positive");
    TrainOptions badEpochs = o;
    badEpochs.epochs = 0;
    CHECK_THROWS(backend->train(spec, v, nullptr, badEpochs, nullptr, nullptr), EngineError, "epochs must be positive");
    Data bad = blobs(10, 4, 16);
    bad.y[3] = 9;
    DatasetView bv = bad.view();
    CHECK_THROWS(backend->train(spec, v, &bv, o, nullptr, nullptr), EngineError, "validation data: label 9 of sample 3");
    std::vector<float> shortStart(10, 0.0f);
    CHECK_THROWS(backend->train(spec, v, nullptr, o, nullptr, nullptr, &shortStart), EngineError,
                 "starting parameters: 10 values for a model with 116 parameters");
    CHECK_THROWS(backend->evaluate(spec, shortStart, v, 32), EngineError, "parameters: 10 values");
  }

  // ---- evaluation ----
  std::printf("evaluate\n");
  {
    ModelSpec spec = parseModelSpec(kBlobsSpec);
    Data d = blobs(70, 4, 17);
    DatasetView v = d.view();
    std::vector<float> params = initialParameters(spec, 3), outputs, grads;
    EvalResult e = backend->evaluate(spec, params, v, 32);  // 32 + 32 + 6
    double loss = forwardBackwardCpu(spec, params, d.x.data(), d.y.data(), 70, false, outputs, grads);
    CHECK_NEAR(e.loss, loss, 1e-6);
    bool ok = e.classes == 4 && e.predictions.size() == 70 && e.probabilities.size() == 280;
    int correct = 0;
    for (int i = 0; i < 70 && ok; ++i) {
      double sum = 0;
      int best = 0;
      for (int k = 0; k < 4; ++k) {
        sum += e.probabilities[i * 4 + k];
        if (outputs[i * 4 + k] > outputs[i * 4 + best]) best = k;
      }
      ok = ok && std::fabs(sum - 1) < 1e-5 && e.predictions[i] == best;
      correct += e.predictions[i] == d.y[i];
    }
    CHECK_MSG(ok, "softmax probabilities sum to 1, predictions are the argmax of the logits");
    CHECK_NEAR(e.accuracy, correct / 70.0, 1e-12);
    // without labels: predictions only
    DatasetView unlabeled = v;
    unlabeled.labels = nullptr;
    EvalResult u = backend->evaluate(spec, params, unlabeled, 32);
    CHECK(u.predictions == e.predictions && u.loss == 0);
  }

  // ---- devices ----
  std::printf("devices\n");
  {
    auto devices = listDevices();
    CHECK(!devices.empty() && devices[0].kind == DeviceKind::CPU && devices[0].threads > 0 && !devices[0].name.empty());
    std::printf("  cpu: %s, %d threads, %.1f GiB\n", devices[0].name.c_str(), devices[0].threads,
                devices[0].memoryBytes / 1073741824.0);
    CHECK(backend->device().kind == DeviceKind::CPU && backend->device().threads == 2);
#ifndef NNSTUDIO_WITH_CUDA
    CHECK(!cudaAvailable());
    CHECK(devices.size() == 1);
    CHECK_THROWS(createBackend(DeviceKind::CUDA), EngineError,
                 "no CUDA device is available: this build of NN Studio has no CUDA backend");
#endif
  }
  return nnstudio_test::summary();
}
