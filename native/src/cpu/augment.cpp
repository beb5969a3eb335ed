// Augmentation of a training batch (spec/augment.h), a sample per task of the pool.
#include "cpu/layers.h"
#include "spec/augment.h"

namespace nnstudio::cpu {

void augment_batch(ThreadPool* pool, float* out, const float* in, int n, int C, int H, int W, const Augmentation& a,
                   uint64_t seed, int64_t step) {
  const int64_t sampleSize = int64_t(C) * H * W;
  auto samples = [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const SampleTransform t = drawTransform(a, seed, step, int(i), H, W);
      for (int c = 0; c < C; ++c) {
        const float* plane = in + i * sampleSize + int64_t(c) * H * W;  // (H, W)
        float* dst = out + i * sampleSize + int64_t(c) * H * W;         // (H, W)
        for (int y = 0; y < H; ++y)
          for (int x = 0; x < W; ++x) dst[y * W + x] = augmentedPixel(plane, H, W, y, x, t);
      }
    }
  };
  if (!pool || pool->size() == 1 || n < 4) samples(0, n);
  else pool->parallelFor(int64_t(n), [&](int64_t a0, int64_t b0, int, int) { samples(a0, b0); });
}

}  // namespace nnstudio::cpu
