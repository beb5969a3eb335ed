// Regression, class weights and weight decay on the CPU: the losses' values against numbers worked out by
// hand with PyTorch's definitions (MSELoss, L1Loss, HuberLoss, CrossEntropyLoss(weight), mean reduction),
// the metrics (train/regression_metrics.h) against hand-computed scikit-learn values, a small regression
// learnt to R^2 > 0.95 with the epoch fields set, evaluation's outputs, an exact resume of a regression run,
// early stopping on the validation R^2, weight decay shrinking weights but not biases, and the input checks.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "nnstudio/engine.h"
#include "spec/rng.h"
#include "train/regression_metrics.h"
#include "test_util.h"

using namespace nnstudio;

namespace {

// y = 2 x1 - 3 x2 + noise (0.1), the features uniform in [-1, 1]; a second target column 0.5 x1 + 1 when
// `two`. The targets are normalised by their own mean and std (as the app does on the training split);
// mean and std are returned for the metrics.
struct Table {
  std::vector<float> x, t;
  std::vector<float> mean, std;
  int width = 1;
  int64_t count = 0;
  DatasetView view() const {
    DatasetView v;
    v.features = x.data();
    v.count = count;
    v.featureSize = 2;
    v.targets = t.data();
    v.targetWidth = width;
    return v;
  }
};

Table linearTable(int count, uint64_t seed, bool two, const std::vector<float>* mean = nullptr,
                  const std::vector<float>* stdev = nullptr) {
  Table d;
  d.count = count;
  d.width = two ? 2 : 1;
  Rng rng(seed);
  std::vector<double> raw;
  for (int i = 0; i < count; ++i) {
    const double x1 = 2 * rng.uniform() - 1, x2 = 2 * rng.uniform() - 1;
    d.x.push_back(float(x1));
    d.x.push_back(float(x2));
    raw.push_back(2 * x1 - 3 * x2 + 0.1 * (2 * rng.uniform() - 1));
    if (two) raw.push_back(0.5 * x1 + 1);
  }
  for (int k = 0; k < d.width; ++k) {
    double m = 0, s = 0;
    for (int i = 0; i < count; ++i) m += raw[size_t(i * d.width + k)];
    m /= count;
    for (int i = 0; i < count; ++i) s += (raw[size_t(i * d.width + k)] - m) * (raw[size_t(i * d.width + k)] - m);
    s = std::sqrt(s / count);
    d.mean.push_back(mean ? (*mean)[size_t(k)] : float(m));
    d.std.push_back(stdev ? (*stdev)[size_t(k)] : float(s));
  }
  d.t.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i)
    d.t[i] = float((raw[i] - d.mean[i % size_t(d.width)]) / d.std[i % size_t(d.width)]);
  return d;
}

std::string regressionSpec(int width, const std::string& loss = "mse", const std::string& optimizer =
                                                                           "{\"kind\":\"adam\",\"lr\":0.01}") {
  return "{\"input\":[2],\"task\":\"regression\",\"layers\":[{\"kind\":\"dense\",\"units\":16,\"activation\":\"tanh\"},"
         "{\"kind\":\"dense\",\"units\":" +
         std::to_string(width) + "}],\"loss\":\"" + loss + "\",\"optimizer\":" + optimizer + ",\"seed\":4}";
}

TrainOptions options(int epochs, int batch) {
  TrainOptions o;
  o.epochs = epochs;
  o.batchSize = batch;
  o.threads = 2;
  o.seed = 9;
  o.progressIntervalSeconds = 0;
  return o;
}

struct Checkpoints : ProgressSink {
  std::vector<TrainState> states;
  bool wantsCheckpoints() const override { return true; }
  void onCheckpoint(const TrainState& s) override { states.push_back(s); }
};

double lossOf(const NetworkPlan& plan, const std::vector<float>& z, const LossTargets& t, int N, int K,
              std::vector<float>* grad = nullptr) {
  if (grad) grad->assign(z.size(), 0.0f);
  return cpu::loss_forward_backward(plan, z.data(), t, N, K, grad ? grad->data() : nullptr, nullptr);
}

bool near(const std::vector<float>& a, const std::vector<double>& b, double tol) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol)) return false;
  return true;
}

void lossValues() {
  std::printf("loss values (PyTorch's definitions, worked out by hand)\n");
  // outputs [[0.5, -1], [2, 0]], targets [[1, 1], [0, -0.5]]: d = [-0.5, -2, 2, 0.5]
  const std::vector<float> z = {0.5f, -1.0f, 2.0f, 0.0f}, t = {1.0f, 1.0f, 0.0f, -0.5f};
  LossTargets targets;
  targets.targets = t.data();
  NetworkPlan plan;
  plan.task = TaskKind::Regression;
  std::vector<float> g;
  plan.loss = LossKind::MSE;
  CHECK_NEAR(lossOf(plan, z, targets, 2, 2, &g), 8.5 / 4, 1e-12);  // (0.25 + 4 + 4 + 0.25) / 4
  CHECK_MSG(near(g, {-0.25, -1, 1, 0.25}, 1e-7), "mse gradient 2 d / 4");
  plan.loss = LossKind::MAE;
  CHECK_NEAR(lossOf(plan, z, targets, 2, 2, &g), 5.0 / 4, 1e-12);
  CHECK_MSG(near(g, {-0.25, -0.25, 0.25, 0.25}, 1e-7), "mae gradient sign(d) / 4");
  plan.loss = LossKind::Huber;
  plan.huberDelta = 1.0f;  // 0.125 twice (|d| < 1), 1 * (2 - 0.5) twice
  CHECK_NEAR(lossOf(plan, z, targets, 2, 2, &g), 3.25 / 4, 1e-12);
  CHECK_MSG(near(g, {-0.125, -0.25, 0.25, 0.125}, 1e-7), "huber gradient clamp(d, -1, 1) / 4");
  plan.huberDelta = 2.5f;  // every |d| < 2.5: half the mse
  CHECK_NEAR(lossOf(plan, z, targets, 2, 2), 8.5 / 8, 1e-12);
  plan.huberDelta = 0.5f;  // |d| = 0.5 is not < 0.5: linear, 0.5 (0.5 - 0.25) = 0.125 (the two branches meet)
  CHECK_NEAR(lossOf(plan, z, targets, 2, 2), (0.125 + 0.875 + 0.875 + 0.125) / 4, 1e-12);
  {
    LossCounts counts;
    plan.loss = LossKind::MAE;
    cpu::loss_forward_backward(plan, z.data(), targets, 2, 2, nullptr, &counts);
    CHECK_MSG(counts.squaredError == 8.5 && counts.correct == 0 && counts.weightSum == 2,
              "a regression counts its squared errors (8.5), no right predictions, weight sum N");
  }

  // CrossEntropyLoss(weight=[2, 0.5, 1]) on logits [[1, 2, 0], [0, 0, 0]], labels [1, 0]:
  // (0.5 (lse0 - 2) + 2 log 3) / 2.5 = 0.9604110238233637 (Python's math)
  const std::vector<float> logits = {1, 2, 0, 0, 0, 0}, weights = {2.0f, 0.5f, 1.0f};
  const std::vector<int32_t> labels = {1, 0};
  NetworkPlan ce;
  LossTargets weighted;
  weighted.labels = labels.data();
  weighted.classWeights = weights.data();
  CHECK_NEAR(lossOf(ce, logits, weighted, 2, 3, &g), 0.9604110238233637, 1e-12);
  CHECK_MSG(near({g[0], g[1], g[2]}, {0.048945694210959526, -0.06695180884503563, 0.018006114634076094}, 1e-8),
            "weighted cross-entropy gradient w_y (softmax - onehot) / sum(w)");
  LossTargets plain;
  plain.labels = labels.data();
  CHECK_NEAR(lossOf(ce, logits, plain, 2, 3), ((std::log(std::exp(1.0) + std::exp(2.0) + 1) - 2) + std::log(3.0)) / 2,
             1e-12);
  // BCEWithLogits, one unit, the label's class weight [0.25, 4] on logits [0.3, -1.2, 2], labels [1, 0, 1]:
  // (4 softplus(-0.3) + 0.25 softplus(-1.2) + 4 softplus(-2)) / 8.25 = 0.3382974107733947
  const std::vector<float> binLogits = {0.3f, -1.2f, 2.0f}, binWeights = {0.25f, 4.0f};
  const std::vector<int32_t> binLabels = {1, 0, 1};
  NetworkPlan bce;
  bce.loss = LossKind::BinaryCrossEntropy;
  LossTargets binary;
  binary.labels = binLabels.data();
  binary.classWeights = binWeights.data();
  CHECK_NEAR(lossOf(bce, binLogits, binary, 3, 1), 0.3382974107733947, 1e-7);  // the logits are floats
}

void metrics() {
  std::printf("regression metrics (scikit-learn's, by hand)\n");
  {
    // one column, identity: y = [1, 2, 4], p = [1.5, 2, 3]: MAE 0.5, RMSE sqrt(1.25/3),
    // R^2 1 - 1.25 / 4.6667, MAPE (0.5 + 0 + 0.25) / 3
    const std::vector<float> y = {1, 2, 4}, p = {1.5f, 2, 3};
    const RegressionMetrics m = regressionMetrics(p.data(), y.data(), 3, 1, {}, {});
    CHECK_NEAR(m.mae, 0.5, 1e-12);
    CHECK_NEAR(m.rmse, std::sqrt(1.25 / 3), 1e-12);
    CHECK_NEAR(m.r2, 1 - 1.25 / (14.0 / 3), 1e-12);
    CHECK_MSG(m.hasMape, "MAPE present without a zero target");
    CHECK_NEAR(m.mape, 0.75 / 3, 1e-12);
  }
  {
    // two columns in normalised units, mean [10, -1], std [2, 0.5]: originals
    //   y0 = [12, 8, 10], p0 = [11, 8, 13]   -> MAE 4/3, MSE 10/3, SST 8, R^2 1 - 10/8 = -0.25
    //   y1 = [-1, 0, -2], p1 = [-1.5, 0, -2] -> MAE 0.5/3, MSE 0.25/3, SST 2, R^2 1 - 0.25/2 = 0.875
    // uniform averages: MAE (4/3 + 1/6) / 2, RMSE (sqrt(10/3) + sqrt(1/12)) / 2, R^2 (-0.25 + 0.875) / 2;
    // y1 holds a 0: no MAPE
    const std::vector<float> mean = {10, -1}, stdev = {2, 0.5f};
    const std::vector<float> y = {1, 0, -1, 2, 0, -2}, p = {0.5f, -1, -1, 2, 1.5f, -2};
    const RegressionMetrics m = regressionMetrics(p.data(), y.data(), 3, 2, mean, stdev);
    CHECK_NEAR(m.mae, (4.0 / 3 + 1.0 / 6) / 2, 1e-9);
    CHECK_NEAR(m.rmse, (std::sqrt(10.0 / 3) + std::sqrt(1.0 / 12)) / 2, 1e-9);
    CHECK_NEAR(m.r2, (-0.25 + 0.875) / 2, 1e-9);
    CHECK_MSG(!m.hasMape, "MAPE is omitted when a target is 0 (in the original units)");
  }
  {
    // a constant column: R^2 1 when predicted exactly, 0 otherwise (r2_score's force_finite)
    const std::vector<float> y = {3, 3}, exact = {3, 3}, off = {3, 4};
    CHECK(regressionMetrics(exact.data(), y.data(), 2, 1, {}, {}).r2 == 1.0);
    CHECK(regressionMetrics(off.data(), y.data(), 2, 1, {}, {}).r2 == 0.0);
    CHECK(pooledR2(2.0, 8.0) == 0.75);
    const std::vector<float> t = {1, 10, 3, 20};  // columns [1, 3] and [10, 20]: 2 + 50
    CHECK_NEAR(totalSumOfSquares(t.data(), 2, 2), 52.0, 1e-12);
  }
}

void training(Backend& cpu) {
  std::printf("a regression learns\n");
  const Table train = linearTable(400, 1, false);
  const Table valid = linearTable(100, 2, false, &train.mean, &train.std);
  const ModelSpec spec = parseModelSpec(regressionSpec(1));
  TrainOptions o = options(40, 32);
  o.targetMean = train.mean;
  o.targetStd = train.std;
  const DatasetView tv = train.view(), vv = valid.view();
  const TrainResult r = cpu.train(spec, tv, &vv, o, nullptr, nullptr);
  CHECK(r.status == TrainStatus::Completed && r.history.size() == 40);
  const EpochStats& last = r.history.back();
  CHECK_MSG(last.hasRegression && last.validationR2 > 0.95 && last.trainR2 > 0.95,
            "y = 2 x1 - 3 x2 + noise: R^2 " + nnstudio_test::num(last.validationR2) + " (train " +
                nnstudio_test::num(last.trainR2) + ") > 0.95");
  CHECK_MSG(last.validationRmse < 0.5 && last.validationMae <= last.validationRmse && last.trainAccuracy == 0 &&
                last.validationAccuracy == 0,
            "RMSE " + nnstudio_test::num(last.validationRmse) + " in original units (targets spread ~2), MAE <= RMSE");
  CHECK_MSG(r.history.front().validationR2 < last.validationR2, "R^2 improves over the run");

  std::printf("evaluate a regression\n");
  const EvalResult e = cpu.evaluate(spec, r.parameters, vv);
  CHECK(e.outputs.size() == 100 && e.predictions.empty() && e.probabilities.empty() && e.confusion.empty() &&
        e.classes == 0);
  CHECK_NEAR(e.loss, last.validationLoss, 1e-9);
  const RegressionMetrics m = regressionMetrics(e.outputs.data(), valid.t.data(), 100, 1, train.mean, train.std);
  CHECK_NEAR(m.r2, last.validationR2, 1e-12);
  DatasetView unlabeled = vv;
  unlabeled.targets = nullptr;
  unlabeled.targetWidth = 0;
  const EvalResult u = cpu.evaluate(spec, r.parameters, unlabeled);
  CHECK_MSG(u.outputs == e.outputs && u.loss == 0, "evaluation without targets gives the same outputs, loss 0");

  std::printf("classification leaves the regression fields unset\n");
  {
    const ModelSpec cls = parseModelSpec(
        "{\"input\":[2],\"layers\":[{\"kind\":\"dense\",\"units\":2}],\"loss\":\"softmax_cross_entropy\","
        "\"optimizer\":{\"kind\":\"sgd\",\"lr\":0.1},\"seed\":0}");
    std::vector<int32_t> y(400);
    for (int i = 0; i < 400; ++i) y[size_t(i)] = train.x[size_t(2 * i)] > 0 ? 1 : 0;
    DatasetView c{train.x.data(), y.data(), 400, 2};
    const TrainResult rc = cpu.train(cls, c, &c, options(2, 32), nullptr, nullptr);
    CHECK(!rc.history.back().hasRegression && rc.history.back().validationAccuracy > 0.5);
  }

  std::printf("two target columns\n");
  {
    const Table t2 = linearTable(300, 3, true), v2 = linearTable(100, 4, true, &t2.mean, &t2.std);
    TrainOptions o2 = options(40, 32);
    o2.targetMean = t2.mean;
    o2.targetStd = t2.std;
    const DatasetView a = t2.view(), b = v2.view();
    const TrainResult r2 = cpu.train(parseModelSpec(regressionSpec(2, "huber")), a, &b, o2, nullptr, nullptr);
    CHECK_MSG(r2.history.back().validationR2 > 0.95, "huber, 2 columns: R^2 " + nnstudio_test::num(r2.history.back().validationR2));
  }

  std::printf("exact resume of a regression run\n");
  {
    TrainOptions full = options(6, 32);
    full.targetMean = train.mean;
    full.targetStd = train.std;
    const ModelSpec sgd = parseModelSpec(regressionSpec(1, "mae", "{\"kind\":\"sgd\",\"lr\":0.05,\"momentum\":0.9,\"weightDecay\":0.001}"));
    Checkpoints sink;
    const TrainResult whole = cpu.train(sgd, tv, &vv, full, &sink, nullptr);
    CHECK(sink.states.size() == 6);
    TrainOptions rest = full;
    rest.resume = &sink.states[2];
    const TrainResult resumed = cpu.train(sgd, tv, &vv, rest, nullptr, nullptr);
    bool sameHistory = resumed.history.size() == whole.history.size();
    for (size_t i = 0; sameHistory && i < whole.history.size(); ++i) {
      const EpochStats &a = whole.history[i], &b = resumed.history[i];
      sameHistory = a.trainLoss == b.trainLoss && a.trainR2 == b.trainR2 && a.validationLoss == b.validationLoss &&
                    a.validationR2 == b.validationR2 && a.validationRmse == b.validationRmse &&
                    a.hasValidationMape == b.hasValidationMape && a.validationMape == b.validationMape;
    }
    CHECK_MSG(resumed.parameters == whole.parameters && sameHistory,
              "resumed after epoch 3 of 6: the uninterrupted run's weights and history, bit for bit");
  }

  std::printf("early stopping on the validation R^2\n");
  {
    TrainOptions es = options(30, 32);
    es.earlyStopping.enabled = true;
    es.earlyStopping.monitor = MonitorKind::ValidationAccuracy;
    es.earlyStopping.patience = 2;
    es.earlyStopping.minDelta = 0.5;  // R^2 cannot improve by 0.5 twice after the first epoch
    es.earlyStopping.restoreBest = true;
    const TrainResult s = cpu.train(spec, tv, &vv, es, nullptr, nullptr);
    CHECK_MSG(s.stoppedEarly && s.history.size() < 30 && s.message.find("validation R^2") != std::string::npos,
              "stopped by the R^2: " + s.message);
  }
}

void weightDecay(Backend& cpu) {
  std::printf("weight decay\n");
  {
    // one step with zero gradients: every weight shrinks by (1 - lr wd), biases stay as they were
    const ModelSpec s = parseModelSpec(regressionSpec(1, "mse", "{\"kind\":\"sgd\",\"lr\":0.5,\"weightDecay\":0.1}"));
    std::vector<float> p = initialParameters(s, 1);
    for (const ParamTensor& t : parameterTable(s))
      if (t.name.find("bias") != std::string::npos)
        for (size_t i = 0; i < t.size; ++i) p[t.offset + i] = 0.25f;
    const std::vector<float> before = p, zero(p.size(), 0.0f);
    std::vector<float> state;
    const std::vector<uint8_t> mask = weightDecayMask(s);
    optimizerStepCpu(s.optimizer, p, zero, state, 1, &mask);
    bool weightsShrink = true, biasesKept = true;
    for (const ParamTensor& t : parameterTable(s))
      for (size_t i = t.offset; i < t.offset + t.size; ++i) {
        if (t.name.find("bias") != std::string::npos) biasesKept = biasesKept && p[i] == before[i];
        else weightsShrink = weightsShrink && std::fabs(p[i] - before[i] * 0.95f) <= 1e-7f;
      }
    CHECK_MSG(weightsShrink && biasesKept, "sgd, zero gradient: weights x 0.95, biases untouched");
    // Adam: the decayed gradient moves the weights, the biases' zero gradient leaves them
    ModelSpec adam = s;
    adam.optimizer.kind = OptimizerKind::Adam;
    adam.optimizer.lr = 0.01f;
    std::vector<float> q = before, adamState;
    optimizerStepCpu(adam.optimizer, q, zero, adamState, 1, &mask);
    bool moved = true, kept = true;
    for (size_t i = 0; i < q.size(); ++i) {
      if (mask[i]) moved = moved && (before[i] == 0 || std::fabs(q[i]) < std::fabs(before[i]));
      else kept = kept && q[i] == before[i];
    }
    CHECK_MSG(moved && kept, "adam, zero gradient: weights pulled to 0, biases untouched");
    std::vector<float> all = before, allState;
    optimizerStepCpu(s.optimizer, all, zero, allState, 1);
    CHECK_MSG(all[mask.size() - 1] == 0.25f * 0.95f, "without a mask every parameter decays (PyTorch's weight_decay)");
  }
  {
    // a whole run: decay ends with smaller weights than none
    const Table train = linearTable(200, 5, false);
    const DatasetView tv = train.view();
    auto weightNorm = [&](const std::string& optimizer) {
      const ModelSpec s = parseModelSpec(regressionSpec(1, "mse", optimizer));
      const TrainResult r = cpu.train(s, tv, nullptr, options(10, 20), nullptr, nullptr);
      const std::vector<uint8_t> mask = weightDecayMask(s);
      double norm = 0;
      for (size_t i = 0; i < mask.size(); ++i)
        if (mask[i]) norm += double(r.parameters[i]) * r.parameters[i];
      return std::sqrt(norm);
    };
    const double plain = weightNorm("{\"kind\":\"adam\",\"lr\":0.01}");
    const double decayed = weightNorm("{\"kind\":\"adam\",\"lr\":0.01,\"weightDecay\":0.5}");
    CHECK_MSG(decayed < 0.9 * plain, "weight decay 0.5: ||w|| " + nnstudio_test::num(decayed) + " < 0.9 x " +
                                         nnstudio_test::num(plain));
  }
}

void classWeights(Backend& cpu) {
  std::printf("class weights in training\n");
  // an imbalanced two-class problem: weights change the run and the validation loss is the weighted mean
  std::vector<float> x;
  std::vector<int32_t> y;
  Rng rng(11);
  for (int i = 0; i < 200; ++i) {
    const float a = float(2 * rng.uniform() - 1);
    x.push_back(a);
    x.push_back(float(rng.uniform()));
    y.push_back(a > 0.7f ? 1 : 0);
  }
  const DatasetView v{x.data(), y.data(), 200, 2};
  const ModelSpec s = parseModelSpec(
      "{\"input\":[2],\"layers\":[{\"kind\":\"dense\",\"units\":2}],\"loss\":\"softmax_cross_entropy\","
      "\"optimizer\":{\"kind\":\"sgd\",\"lr\":0.1},\"seed\":0}");
  TrainOptions o = options(3, 50);
  const TrainResult plain = cpu.train(s, v, &v, o, nullptr, nullptr);
  o.classWeights = {1.0f, 1.0f};
  const TrainResult ones = cpu.train(s, v, &v, o, nullptr, nullptr);
  CHECK_MSG(ones.parameters == plain.parameters && ones.history.back().validationLoss == plain.history.back().validationLoss,
            "class weights 1, 1: the unweighted run bit for bit");
  o.classWeights = {0.2f, 3.0f};
  const TrainResult weighted = cpu.train(s, v, &v, o, nullptr, nullptr);
  CHECK(weighted.parameters != plain.parameters);
  // the weighted validation loss: sum(w_y l) / sum(w_y), from the unweighted evaluation's per-class parts
  const EvalResult e = cpu.evaluate(s, weighted.parameters, v);
  double num = 0, den = 0;
  for (int i = 0; i < 200; ++i) {
    const double p = e.probabilities[size_t(2 * i + y[size_t(i)])];
    const double w = o.classWeights[size_t(y[size_t(i)])];
    num += -w * std::log(p);
    den += w;
  }
  CHECK_NEAR(weighted.history.back().validationLoss, num / den, 1e-5);
}

void invalidInputs(Backend& cpu) {
  std::printf("invalid inputs\n");
  const Table t = linearTable(20, 6, false);
  const ModelSpec spec = parseModelSpec(regressionSpec(1));
  const TrainOptions o = options(1, 10);
  DatasetView v = t.view();
  DatasetView noTargets = v;
  noTargets.targets = nullptr;
  CHECK_THROWS(cpu.train(spec, noTargets, nullptr, o, nullptr, nullptr), EngineError,
               "training data: no targets: a regression needs the target columns");
  DatasetView wide = v;
  wide.targetWidth = 2;
  CHECK_THROWS(cpu.train(spec, v, &wide, o, nullptr, nullptr), EngineError,
               "validation data: 2 target columns but the model's last layer has 1 outputs");
  Table bad = t;
  bad.t[7] = NAN;
  const DatasetView badView = bad.view();
  CHECK_THROWS(cpu.train(spec, badView, nullptr, o, nullptr, nullptr), EngineError,
               "training data: target 0 of sample 7 (0-based) is not a finite number");
  TrainOptions w = o;
  w.classWeights = {1.0f, 2.0f};
  CHECK_THROWS(cpu.train(spec, v, nullptr, w, nullptr, nullptr), EngineError, "class weights are for classification");
  TrainOptions m = o;
  m.targetMean = {0.0f, 1.0f};
  m.targetStd = {1.0f, 1.0f};
  CHECK_THROWS(cpu.train(spec, v, nullptr, m, nullptr, nullptr), EngineError, "target mean: 2 values for 1 target columns");
  m.targetMean = {0.0f};
  m.targetStd = {0.0f};
  CHECK_THROWS(cpu.train(spec, v, nullptr, m, nullptr, nullptr), EngineError,
               "target std: the value of column 0 must be a finite number > 0");
  const ModelSpec cls = parseModelSpec(
      "{\"input\":[2],\"layers\":[{\"kind\":\"dense\",\"units\":3}],\"loss\":\"softmax_cross_entropy\","
      "\"optimizer\":{\"kind\":\"sgd\",\"lr\":0.1},\"seed\":0}");
  std::vector<int32_t> labels(20, 1);
  const DatasetView c{t.x.data(), labels.data(), 20, 2};
  TrainOptions cw = o;
  cw.classWeights = {1.0f, 2.0f};
  CHECK_THROWS(cpu.train(cls, c, nullptr, cw, nullptr, nullptr), EngineError,
               "class weights: 2 values but the model predicts 3 classes");
  cw.classWeights = {1.0f, 0.0f, 1.0f};
  CHECK_THROWS(cpu.train(cls, c, nullptr, cw, nullptr, nullptr), EngineError,
               "the weight of class 1 must be a finite number > 0");
}

}  // namespace

int main() {
  std::unique_ptr<Backend> cpu = createBackend(DeviceKind::CPU, 2);
  lossValues();
  metrics();
  training(*cpu);
  weightDecay(*cpu);
  classWeights(*cpu);
  invalidInputs(*cpu);
  return nnstudio_test::summary();
}
