// Training-batch augmentation (TrainOptions::augment), shared by the CPU (cpu/augment.cpp) and the GPU
// (cuda/augment.cu) so both draw the same transforms: sample i of global step t (0-based, the step that
// trains on the batch) draws from Rng(mixSeed(mixSeed(seed, t, salt), i)) alone, a fixed number of draws in
// a fixed order. The data order is a function of (seed, epoch) too, so a resumed run sees the same batches.
// Each output pixel maps back into the input (what falls outside reads 0): undo the whole-pixel shift,
// then rotation and scale about the centre (bilinear), then the flip. Erasing zeroes a rectangle of the
// output. Every channel takes the same transform.
#pragma once

#include <cmath>
#include <cstdint>

#include "nnstudio/engine.h"
#include "spec/rng.h"

namespace nnstudio {

constexpr uint64_t kAugmentSalt = 0xA06E47ull;

struct SampleTransform {
  bool flip = false;
  bool affine = false;              // rotation or scale: bilinear sampling, else whole pixels (exact)
  float cosA = 1, sinA = 0;         // the inverse rotation
  float invScale = 1;
  int shiftY = 0, shiftX = 0;
  bool erase = false;
  int eraseTop = 0, eraseLeft = 0, eraseH = 0, eraseW = 0;
};

// The transform of sample `sample` of global step `step` for an H x W image.
NNSTUDIO_HOST_DEVICE inline SampleTransform drawTransform(const Augmentation& a, uint64_t seed, int64_t step,
                                                          int sample, int H, int W) {
  Rng rng(mixSeed(mixSeed(seed, uint64_t(step), kAugmentSalt), uint64_t(sample)));
  // every draw is made whatever the options: a sample's stream does not depend on which are on
  const float uFlip = rng.uniform(), uAngle = rng.uniform(), uScale = rng.uniform();
  const uint32_t span = uint32_t(2 * a.translate + 1);
  const int dy = int(rng.below(span)) - a.translate, dx = int(rng.below(span)) - a.translate;
  const float uErase = rng.uniform(), uArea = rng.uniform(), uRatio = rng.uniform();
  SampleTransform t;
  t.flip = a.flip && uFlip < 0.5f;
  t.shiftY = dy;
  t.shiftX = dx;
  if (a.rotate > 0 || a.scale > 0) {
    t.affine = true;
    const double angle = (2.0 * uAngle - 1.0) * double(a.rotate) * 3.14159265358979323846 / 180.0;
    const double scale = 1.0 + (2.0 * uScale - 1.0) * double(a.scale);
    t.cosA = float(cos(angle));
    t.sinA = float(sin(angle));
    t.invScale = float(1.0 / scale);
  }
  if (a.erase > 0 && uErase < a.erase) {
    // torchvision's RandomErasing defaults: area 2 %..33 %, aspect ratio log-uniform in [0.3, 3.3]; one try,
    // the rectangle clamped to the image
    const double area = double(H) * double(W) * (0.02 + 0.31 * double(uArea));
    const double ratio = exp(log(0.3) + double(uRatio) * (log(3.3) - log(0.3)));
    int eh = int(sqrt(area * ratio) + 0.5), ew = int(sqrt(area / ratio) + 0.5);
    eh = eh < 1 ? 1 : eh > H ? H : eh;
    ew = ew < 1 ? 1 : ew > W ? W : ew;
    t.erase = true;
    t.eraseH = eh;
    t.eraseW = ew;
    t.eraseTop = int(rng.below(uint32_t(H - eh + 1)));
    t.eraseLeft = int(rng.below(uint32_t(W - ew + 1)));
  }
  return t;
}

NNSTUDIO_HOST_DEVICE inline float pixelOrZero(const float* plane, int H, int W, int y, int x) {
  return y >= 0 && y < H && x >= 0 && x < W ? plane[y * W + x] : 0.0f;
}

// Output pixel (y, x) of one channel `plane` (H, W) under transform t.
NNSTUDIO_HOST_DEVICE inline float augmentedPixel(const float* plane, int H, int W, int y, int x,
                                                 const SampleTransform& t) {
  if (t.erase && y >= t.eraseTop && y < t.eraseTop + t.eraseH && x >= t.eraseLeft && x < t.eraseLeft + t.eraseW)
    return 0.0f;
  const int sy = y - t.shiftY, sx = x - t.shiftX;
  if (!t.affine) return pixelOrZero(plane, H, W, sy, t.flip ? W - 1 - sx : sx);
  const float cy = 0.5f * float(H - 1), cx = 0.5f * float(W - 1);
  const float dy = float(sy) - cy, dx = float(sx) - cx;
  float srcX = (t.cosA * dx + t.sinA * dy) * t.invScale + cx;
  const float srcY = (t.cosA * dy - t.sinA * dx) * t.invScale + cy;
  if (t.flip) srcX = float(W - 1) - srcX;
  const float fy = floorf(srcY), fx = floorf(srcX);
  const int y0 = int(fy), x0 = int(fx);
  const float wy = srcY - fy, wx = srcX - fx;
  const float top = (1.0f - wx) * pixelOrZero(plane, H, W, y0, x0) + wx * pixelOrZero(plane, H, W, y0, x0 + 1);
  const float bottom =
      (1.0f - wx) * pixelOrZero(plane, H, W, y0 + 1, x0) + wx * pixelOrZero(plane, H, W, y0 + 1, x0 + 1);
  return (1.0f - wy) * top + wy * bottom;
}

}  // namespace nnstudio
