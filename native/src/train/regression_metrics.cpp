// Regression metrics (see regression_metrics.h).
#include "train/regression_metrics.h"

#include <cmath>

namespace nnstudio {

double pooledR2(double sse, double sst) {
  if (sst == 0) return sse == 0 ? 1.0 : 0.0;
  return 1.0 - sse / sst;
}

double totalSumOfSquares(const float* targets, int64_t count, int width) {
  double total = 0;
  for (int k = 0; k < width; ++k) {
    double mean = 0;
    for (int64_t n = 0; n < count; ++n) mean += targets[n * width + k];
    mean /= double(count);
    for (int64_t n = 0; n < count; ++n) {
      const double d = targets[n * width + k] - mean;
      total += d * d;
    }
  }
  return total;
}

RegressionMetrics regressionMetrics(const float* outputs, const float* targets, int64_t count, int width,
                                    const std::vector<float>& mean, const std::vector<float>& stdev) {
  RegressionMetrics m;
  if (count <= 0 || width <= 0) return m;
  const bool identity = mean.empty() || stdev.empty();
  double maeSum = 0, rmseSum = 0, r2Sum = 0, mapeSum = 0;
  bool zeroTarget = false;
  std::vector<double> y(static_cast<size_t>(count)), p(static_cast<size_t>(count));
  for (int k = 0; k < width; ++k) {
    const double mu = identity ? 0.0 : double(mean[size_t(k)]);
    const double sigma = identity ? 1.0 : double(stdev[size_t(k)]);
    const double zeroBand = identity ? 0.0 : 1e-6 * (std::fabs(mu) + sigma);
    double yMean = 0;
    for (int64_t n = 0; n < count; ++n) {
      y[size_t(n)] = double(targets[n * width + k]) * sigma + mu;
      p[size_t(n)] = double(outputs[n * width + k]) * sigma + mu;
      yMean += y[size_t(n)];
    }
    yMean /= double(count);
    double absSum = 0, sse = 0, sst = 0, pctSum = 0;
    for (int64_t n = 0; n < count; ++n) {
      const double yn = y[size_t(n)], d = p[size_t(n)] - yn;
      absSum += std::fabs(d);
      sse += d * d;
      sst += (yn - yMean) * (yn - yMean);
      if (std::fabs(yn) <= zeroBand) zeroTarget = true;
      else pctSum += std::fabs(d) / std::fabs(yn);
    }
    maeSum += absSum / double(count);
    rmseSum += std::sqrt(sse / double(count));
    r2Sum += pooledR2(sse, sst);
    mapeSum += pctSum / double(count);
  }
  m.mae = maeSum / width;
  m.rmse = rmseSum / width;
  m.r2 = r2Sum / width;
  m.hasMape = !zeroTarget;
  m.mape = zeroTarget ? 0.0 : mapeSum / width;
  return m;
}

}  // namespace nnstudio
