// A regression's per-epoch metrics on the host (the driver's; tables are small): the validation outputs
// against their targets in the original units, and the training R^2 from the epoch's squared errors.
// The definitions are scikit-learn's (mean_absolute_error, root_mean_squared_error, r2_score,
// mean_absolute_percentage_error), each averaged uniformly over the target columns.
#pragma once

#include <cstdint>
#include <vector>

namespace nnstudio {

struct RegressionMetrics {
  double mae = 0, rmse = 0, r2 = 0;
  bool hasMape = false;  // false when some target is 0 (the percentage is undefined there)
  double mape = 0;       // a fraction: 0.05 is 5 %
};

// outputs and targets: (count, width) row-major in normalised units; mean and std (width values each,
// or empty for the identity) map both back to the original units, y = z * stdev + mean. R^2 of a constant
// column is scikit-learn's force_finite value: 1 when predicted exactly, else 0. A target is 0 for MAPE
// when its original value is within 1e-6 (|mean| + std) of 0: denormalising a stored 0 in floats
// leaves a rounding residue, and a percentage of that residue would be meaningless.
RegressionMetrics regressionMetrics(const float* outputs, const float* targets, int64_t count, int width,
                                    const std::vector<float>& mean, const std::vector<float>& stdev);

// Sum over columns of sum_n (t[n, k] - mean_k)^2: R^2's denominator, pooled over columns.
double totalSumOfSquares(const float* targets, int64_t count, int width);

// 1 - sse / sst, with r2_score's force_finite rule when sst is 0. Pooled over the columns, this is
// r2_score's uniform average when every column has the same spread, as normalised training targets do.
double pooledR2(double sse, double sst);

}  // namespace nnstudio
