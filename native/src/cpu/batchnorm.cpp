// Batch normalisation over channels (PyTorch's BatchNorm1d/2d): x (N, C, S) with S the pixels of a
// channel (1 for a flat input's features). Training normalises with the batch's statistics and moves the
// running statistics toward them; evaluation uses the running statistics. Sums run in double (this is
// the reference the GPU's fp32 kernels are compared with). Parallel over channels.
#include <cmath>

#include "cpu/layers.h"

namespace nnstudio::cpu {

namespace {

inline float gammaOf(const BatchNormArgs& a, int c) { return a.gamma ? a.gamma[c] : 1.0f; }
inline float betaOf(const BatchNormArgs& a, int c) { return a.beta ? a.beta[c] : 0.0f; }

// y = (x - mean) * scale + beta over channel c: the difference first, so a value at the mean gives beta
// exactly (x * scale - mean * scale cancels badly when 1/std is large, as the CUDA kernel's order avoids too)
void applyChannel(float* y, const float* x, const BatchNormArgs& a, int c, float mean, float scale, float beta) {
  for (int n = 0; n < a.N; ++n) {
    const int64_t base = (int64_t(n) * a.C + c) * a.S;
    for (int s = 0; s < a.S; ++s) y[base + s] = (x[base + s] - mean) * scale + beta;
  }
}

}  // namespace

// ---- forward ----

void batchnorm_forward_train(ThreadPool& pool, float* y, const float* x, float* saved, float* runMean, float* runVar,
                             const BatchNormArgs& a) {
  const int64_t M = int64_t(a.N) * a.S;
  pool.parallelFor(a.C, [&](int64_t c0, int64_t c1, int, int) {
    for (int c = int(c0); c < int(c1); ++c) {
      // two passes (mean, then squared deviations): no cancellation when the mean is large
      double sum = 0;
      for (int n = 0; n < a.N; ++n) {
        const float* xc = x + (int64_t(n) * a.C + c) * a.S;
        for (int s = 0; s < a.S; ++s) sum += xc[s];
      }
      const double mean = sum / double(M);
      double squares = 0;
      for (int n = 0; n < a.N; ++n) {
        const float* xc = x + (int64_t(n) * a.C + c) * a.S;
        for (int s = 0; s < a.S; ++s) squares += (xc[s] - mean) * (xc[s] - mean);
      }
      const double var = squares / double(M);
      const float invStd = float(1.0 / std::sqrt(var + double(a.eps)));
      saved[c] = float(mean);
      saved[a.C + c] = invStd;
      const float scale = gammaOf(a, c) * invStd;
      applyChannel(y, x, a, c, float(mean), scale, betaOf(a, c));
      if (runMean && runVar) {
        const double unbiased = M > 1 ? squares / double(M - 1) : var;
        const float m = a.momentum;
        runMean[c] = (1.0f - m) * runMean[c] + m * float(mean);
        runVar[c] = (1.0f - m) * runVar[c] + m * float(unbiased);
      }
    }
  });
}

void batchnorm_forward_eval(ThreadPool& pool, float* y, const float* x, float* saved, const float* runMean,
                            const float* runVar, const BatchNormArgs& a) {
  pool.parallelFor(a.C, [&](int64_t c0, int64_t c1, int, int) {
    for (int c = int(c0); c < int(c1); ++c) {
      const float invStd = float(1.0 / std::sqrt(double(runVar[c]) + double(a.eps)));
      saved[c] = runMean[c];
      saved[a.C + c] = invStd;
      const float scale = gammaOf(a, c) * invStd;
      applyChannel(y, x, a, c, runMean[c], scale, betaOf(a, c));
    }
  });
}

// ---- backward ----

// With xhat = (x - mean) * invStd and y = gamma xhat + beta:
//   dBeta = sum dy, dGamma = sum dy xhat;
//   training: dx = gamma invStd / M * (M dy - sum dy - xhat sum(dy xhat)) (the batch statistics depend on x);
//   evaluation: dx = gamma invStd dy.
void batchnorm_backward(ThreadPool& pool, float* dx, float* dGamma, float* dBeta, const float* dy, const float* x,
                        const float* saved, const BatchNormArgs& a, bool training) {
  const double M = double(int64_t(a.N) * a.S);
  pool.parallelFor(a.C, [&](int64_t c0, int64_t c1, int, int) {
    for (int c = int(c0); c < int(c1); ++c) {
      const float mean = saved[c], invStd = saved[a.C + c];
      double sumDy = 0, sumDyXhat = 0;
      for (int n = 0; n < a.N; ++n) {
        const int64_t base = (int64_t(n) * a.C + c) * a.S;
        for (int s = 0; s < a.S; ++s) {
          sumDy += dy[base + s];
          sumDyXhat += double(dy[base + s]) * (double(x[base + s]) - mean) * invStd;
        }
      }
      if (dGamma) dGamma[c] = float(sumDyXhat);
      if (dBeta) dBeta[c] = float(sumDy);
      if (!dx) continue;
      const double k = double(gammaOf(a, c)) * invStd;
      const double meanDy = training ? sumDy / M : 0.0, meanDyXhat = training ? sumDyXhat / M : 0.0;
      for (int n = 0; n < a.N; ++n) {
        const int64_t base = (int64_t(n) * a.C + c) * a.S;
        for (int s = 0; s < a.S; ++s) {
          const double xhat = (double(x[base + s]) - mean) * invStd;
          dx[base + s] = float(k * (double(dy[base + s]) - meanDy - xhat * meanDyXhat));
        }
      }
    }
  });
}

}  // namespace nnstudio::cpu
