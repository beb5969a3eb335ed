// Losses, each reduced by the mean over every element as PyTorch's defaults, with their gradient:
//   softmax_cross_entropy  on logits (N, K): log-sum-exp(z) - z_y; grad (softmax(z) - onehot) / N; with label
//                          smoothing s the target q = (1 - s) onehot + s / K (PyTorch's label_smoothing):
//                          lse - sum_k q_k z_k, grad (softmax(z) - q) / N
//   binary_cross_entropy   on logits (N, K): target = label (K = 1) or one-hot; the stable form
//                          max(z,0) - z t + log(1 + e^-|z|); grad (sigmoid(z) - t) / (N K)
//   mse / mae / huber      on outputs (N, K): target = label (K = 1) or one-hot; in a regression the
//                          sample's float targets (N, K)
// With class weights each sample's loss counts w_label times and the mean divides by the weights' sum
// (times K for the element-wise losses), as PyTorch's weighted CrossEntropyLoss; without them the
// arithmetic is the unweighted mean's, bit for bit.
#include <cmath>

#include "cpu/layers.h"

namespace nnstudio::cpu {

namespace {

inline double sigmoid(double z) { return z >= 0 ? 1.0 / (1.0 + std::exp(-z)) : std::exp(z) / (1.0 + std::exp(z)); }

inline int argmax(const float* row, int K) {
  int best = 0;
  for (int k = 1; k < K; ++k)
    if (row[k] > row[best]) best = k;
  return best;
}

// target of output k for a sample with this label
inline double target(int32_t label, int K, int k) { return K == 1 ? double(label) : (k == label ? 1.0 : 0.0); }

// label smoothing's target of output k: (1 - s) for the label, plus s / K for every output
inline double smoothedTarget(double s, bool label, int K) { return (label ? 1.0 - s : 0.0) + s / K; }

inline int32_t predict(LossKind loss, const float* row, int K) {
  if (K > 1) return argmax(row, K);
  // one output: the logit's sigmoid (or the output itself for mse/mae) against 0.5
  return loss == LossKind::SoftmaxCrossEntropy || loss == LossKind::BinaryCrossEntropy ? (row[0] >= 0.0f ? 1 : 0)
                                                                                        : (row[0] >= 0.5f ? 1 : 0);
}

}  // namespace

// ---- forward + backward ----

double loss_forward_backward(const NetworkPlan& plan, const float* outputs, const LossTargets& targets, int N, int K,
                             float* dOutputs, LossCounts* counts) {
  const LossKind loss = plan.loss;
  const bool regression = plan.regression();
  const double delta = plan.huberDelta;
  const double smoothing = loss == LossKind::SoftmaxCrossEntropy ? double(plan.labelSmoothing) : 0.0;
  // the samples' weights: their class's (classification with class weights), else 1 each
  const float* classWeights = regression ? nullptr : targets.classWeights;
  double weightSum = N;
  if (classWeights) {
    weightSum = 0;
    for (int n = 0; n < N; ++n) weightSum += classWeights[targets.labels[n]];
  }
  const bool perSample = loss == LossKind::SoftmaxCrossEntropy;
  const double denominator = perSample ? weightSum : weightSum * K;  // N or N K without weights
  double total = 0, squaredError = 0;
  int64_t right = 0;
  for (int n = 0; n < N; ++n) {
    const float* z = outputs + int64_t(n) * K;
    float* dz = dOutputs ? dOutputs + int64_t(n) * K : nullptr;
    const int32_t y = regression ? 0 : targets.labels[n];
    const float* row = regression ? targets.targets + int64_t(n) * K : nullptr;
    const double w = classWeights ? double(classWeights[y]) : 1.0;
    if (!regression && predict(loss, z, K) == y) ++right;
    // unweighted, each term goes straight into the total (the order the unweighted loss always summed in)
    double rowTotal = 0;
    double& acc = classWeights ? rowTotal : total;
    if (loss == LossKind::SoftmaxCrossEntropy) {
      if (K == 1) {
        // a single logit: softmax over one class is constant, so the loss is 0 (as PyTorch)
        if (dz) dz[0] = 0.0f;
      } else {
        double m = z[0];
        for (int k = 1; k < K; ++k) m = std::max(m, double(z[k]));
        double sum = 0;
        for (int k = 0; k < K; ++k) sum += std::exp(double(z[k]) - m);
        const double lse = m + std::log(sum);
        if (smoothing == 0) {
          acc += lse - z[y];
          if (dz)
            for (int k = 0; k < K; ++k)
              dz[k] = float((std::exp(double(z[k]) - lse) - (k == y ? 1.0 : 0.0)) * w / denominator);
        } else {
          double zSum = 0;
          for (int k = 0; k < K; ++k) zSum += z[k];
          acc += lse - ((1.0 - smoothing) * z[y] + smoothing * zSum / K);
          if (dz)
            for (int k = 0; k < K; ++k)
              dz[k] = float((std::exp(double(z[k]) - lse) - smoothedTarget(smoothing, k == y, K)) * w / denominator);
        }
      }
    } else {
      for (int k = 0; k < K; ++k) {
        const double zk = z[k], t = regression ? double(row[k]) : target(y, K, k);
        const double d = zk - t;
        double slope = 0;
        switch (loss) {
          case LossKind::BinaryCrossEntropy:
            acc += std::max(zk, 0.0) - zk * t + std::log1p(std::exp(-std::fabs(zk)));
            slope = sigmoid(zk) - t;
            break;
          case LossKind::MSE:
            acc += d * d;
            slope = 2.0 * d;
            break;
          case LossKind::MAE:
            acc += std::fabs(d);
            slope = d > 0 ? 1.0 : d < 0 ? -1.0 : (d == 0 ? 0.0 : d);  // sign(d), 0 at the kink as PyTorch; NaN passes
            break;
          case LossKind::Huber:
            acc += std::fabs(d) < delta ? 0.5 * d * d : delta * (std::fabs(d) - 0.5 * delta);
            slope = d < -delta ? -delta : d > delta ? delta : d;  // PyTorch's; NaN passes
            break;
          case LossKind::SoftmaxCrossEntropy:
            break;
        }
        if (regression) squaredError += d * d;
        if (dz) dz[k] = float(slope * w / denominator);
      }
    }
    if (classWeights) total += w * rowTotal;
  }
  if (counts) {
    counts->correct += right;
    counts->squaredError += squaredError;
    counts->weightSum += weightSum;
  }
  return total / denominator;
}

double loss_forward_backward(LossKind loss, const float* outputs, const int32_t* labels, int N, int K, float* dOutputs,
                             int64_t* correct) {
  NetworkPlan plan;
  plan.loss = loss;
  LossTargets targets;
  targets.labels = labels;
  LossCounts counts;
  const double mean = loss_forward_backward(plan, outputs, targets, N, K, dOutputs, &counts);
  if (correct) *correct += counts.correct;
  return mean;
}

// ---- predictions ----

void loss_predict(LossKind loss, const float* outputs, int N, int K, int32_t* predictions, float* probabilities) {
  const int classes = K == 1 ? 2 : K;
  for (int n = 0; n < N; ++n) {
    const float* z = outputs + int64_t(n) * K;
    float* p = probabilities ? probabilities + int64_t(n) * classes : nullptr;
    if (predictions) predictions[n] = predict(loss, z, K);
    if (!p) continue;
    const bool logits = loss == LossKind::SoftmaxCrossEntropy || loss == LossKind::BinaryCrossEntropy;
    if (K == 1) {
      const double q = logits ? sigmoid(z[0]) : double(z[0]);
      p[0] = float(1.0 - q);
      p[1] = float(q);
    } else if (loss == LossKind::SoftmaxCrossEntropy) {
      double m = z[0];
      for (int k = 1; k < K; ++k) m = std::max(m, double(z[k]));
      double sum = 0;
      for (int k = 0; k < K; ++k) sum += std::exp(double(z[k]) - m);
      for (int k = 0; k < K; ++k) p[k] = float(std::exp(double(z[k]) - m) / sum);
    } else if (loss == LossKind::BinaryCrossEntropy) {
      for (int k = 0; k < K; ++k) p[k] = float(sigmoid(z[k]));
    } else {
      for (int k = 0; k < K; ++k) p[k] = z[k];  // raw outputs for mse / mae
    }
  }
}

}  // namespace nnstudio::cpu
