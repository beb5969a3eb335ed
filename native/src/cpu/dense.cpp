// Dense (fully connected): out = in . W^T + b, W (units, inputs) as PyTorch's nn.Linear.
// The GEMMs are split over the pool's threads by blocks of the output.
#include <algorithm>
#include <cstring>

#include "cpu/gemm.h"
#include "cpu/layers.h"

namespace nnstudio::cpu {

// ---- forward ----

void dense_forward(ThreadPool& pool, float* out, const float* in, const float* weight, const float* bias, int N,
                   int inputs, int units) {
  // start from the bias and accumulate (beta = 1): saves a pass over out
  for (int n = 0; n < N; ++n) std::memcpy(out + int64_t(n) * units, bias, sizeof(float) * units);
  // out (N, units) += in (N, inputs) . W^T (inputs, units)
  gemmParallel(pool, false, true, N, units, inputs, 1.0f, in, inputs, weight, inputs, 1.0f, out, units);
}

// ---- backward ----

void dense_backward_weights(ThreadPool& pool, float* dWeight, float* dBias, const float* dOut, const float* in, int N,
                            int inputs, int units) {
  // dW (units, inputs) = dOut^T (units, N) . in (N, inputs)
  gemmParallel(pool, true, false, units, inputs, N, 1.0f, dOut, units, in, inputs, 0.0f, dWeight, inputs);
  // dB (units) = sum over the batch of dOut
  std::fill(dBias, dBias + units, 0.0f);
  for (int n = 0; n < N; ++n) {
    const float* row = dOut + int64_t(n) * units;
    for (int u = 0; u < units; ++u) dBias[u] += row[u];
  }
}

void dense_backward_input(ThreadPool& pool, float* dIn, const float* dOut, const float* weight, int N, int inputs,
                          int units) {
  // dIn (N, inputs) = dOut (N, units) . W (units, inputs)
  gemmParallel(pool, false, false, N, inputs, units, 1.0f, dOut, units, weight, inputs, 0.0f, dIn, inputs);
}

}  // namespace nnstudio::cpu
