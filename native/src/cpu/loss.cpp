// Losses, each reduced by the mean over every element as PyTorch's defaults, with their gradient:
//   softmax_cross_entropy  on logits (N, K): log-sum-exp(z) - z_y; grad (softmax(z) - onehot) / N
//   binary_cross_entropy   on logits (N, K): target = label (K = 1) or one-hot; the stable form
//                          max(z,0) - z t + log(1 + e^-|z|); grad (sigmoid(z) - t) / (N K)
//   mse / mae              on outputs (N, K): target = label (K = 1) or one-hot
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

inline int32_t predict(LossKind loss, const float* row, int K) {
  if (K > 1) return argmax(row, K);
  // one output: the logit's sigmoid (or the output itself for mse/mae) against 0.5
  return loss == LossKind::SoftmaxCrossEntropy || loss == LossKind::BinaryCrossEntropy ? (row[0] >= 0.0f ? 1 : 0)
                                                                                        : (row[0] >= 0.5f ? 1 : 0);
}

}  // namespace

// ---- forward + backward ----

double loss_forward_backward(LossKind loss, const float* outputs, const int32_t* labels, int N, int K, float* dOutputs,
                             int64_t* correct) {
  double total = 0;
  int64_t right = 0;
  for (int n = 0; n < N; ++n) {
    const float* z = outputs + int64_t(n) * K;
    float* dz = dOutputs ? dOutputs + int64_t(n) * K : nullptr;
    const int32_t y = labels[n];
    if (predict(loss, z, K) == y) ++right;
    switch (loss) {
      case LossKind::SoftmaxCrossEntropy: {
        if (K == 1) {
          // a single logit: softmax over one class is constant, so the loss is 0 (as PyTorch)
          if (dz) dz[0] = 0.0f;
          break;
        }
        double m = z[0];
        for (int k = 1; k < K; ++k) m = std::max(m, double(z[k]));
        double sum = 0;
        for (int k = 0; k < K; ++k) sum += std::exp(double(z[k]) - m);
        const double lse = m + std::log(sum);
        total += lse - z[y];
        if (dz)
          for (int k = 0; k < K; ++k) dz[k] = float((std::exp(double(z[k]) - lse) - (k == y ? 1.0 : 0.0)) / N);
        break;
      }
      case LossKind::BinaryCrossEntropy:
        for (int k = 0; k < K; ++k) {
          const double zk = z[k], t = target(y, K, k);
          total += std::max(zk, 0.0) - zk * t + std::log1p(std::exp(-std::fabs(zk)));
          if (dz) dz[k] = float((sigmoid(zk) - t) / (double(N) * K));
        }
        break;
      case LossKind::MSE:
        for (int k = 0; k < K; ++k) {
          const double d = double(z[k]) - target(y, K, k);
          total += d * d;
          if (dz) dz[k] = float(2.0 * d / (double(N) * K));
        }
        break;
      case LossKind::MAE:
        for (int k = 0; k < K; ++k) {
          const double d = double(z[k]) - target(y, K, k);
          total += std::fabs(d);
          // sign(d), 0 at the kink as PyTorch; NaN passes through
          const double s = d > 0 ? 1.0 : d < 0 ? -1.0 : (d == 0 ? 0.0 : d);
          if (dz) dz[k] = float(s / (double(N) * K));
        }
        break;
    }
  }
  if (correct) *correct += right;
  const bool perSample = loss == LossKind::SoftmaxCrossEntropy;
  return total / (perSample ? double(N) : double(N) * K);
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
