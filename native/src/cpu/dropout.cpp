// Inverted dropout: at training time keep each value with probability 1 - rate and scale it by
// 1 / (1 - rate), so evaluation is the identity. One RNG stream per sample keeps masks independent of
// the thread count.
#include "cpu/layers.h"
#include "spec/rng.h"

namespace nnstudio::cpu {

// ---- forward ----

void dropout_forward(ThreadPool& pool, float* out, float* mask, const float* in, int N, int64_t width, float rate,
                     uint64_t seed) {
  const float keep = 1.0f / (1.0f - rate);
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int) {
    for (int64_t n = n0; n < n1; ++n) {
      Rng rng(mixSeed(seed, uint64_t(n), 0xD50F));
      float* m = mask + n * width;
      const float* x = in + n * width;
      float* y = out + n * width;
      for (int64_t i = 0; i < width; ++i) {
        m[i] = rng.uniform() < rate ? 0.0f : keep;
        y[i] = x[i] * m[i];
      }
    }
  });
}

// ---- backward ----

void dropout_backward(ThreadPool& pool, float* dIn, const float* dOut, const float* mask, int N, int64_t width) {
  pool.parallelFor(N, [&](int64_t n0, int64_t n1, int, int) {
    for (int64_t i = n0 * width; i < n1 * width; ++i) dIn[i] = dOut[i] * mask[i];
  });
}

}  // namespace nnstudio::cpu
