// Test-time augmentation (evaluateWithTta in engine.h): the backend evaluates each view of the data (the
// input, its four one-pixel shifts with zero padding, and its mirror image when asked), the class
// probabilities are averaged, and the predictions, loss, accuracy and confusion matrix are taken from the
// average. A view is built on the host, one at a time, so memory grows by one copy of the data.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "nnstudio/engine.h"
#include "spec/augment.h"

namespace nnstudio {

namespace {

// The data under one whole-pixel transform (shift dy, dx; mirror), every channel alike.
std::vector<float> viewOf(const DatasetView& data, int C, int H, int W, int dy, int dx, bool flip) {
  std::vector<float> out(size_t(data.count) * size_t(data.featureSize));
  SampleTransform t;
  t.shiftY = dy;
  t.shiftX = dx;
  t.flip = flip;
  const int64_t plane = int64_t(H) * W;
  for (int64_t i = 0; i < data.count; ++i)
    for (int c = 0; c < C; ++c) {
      const float* src = data.features + i * data.featureSize + c * plane;
      float* dst = out.data() + i * data.featureSize + c * plane;
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) dst[y * W + x] = augmentedPixel(src, H, W, y, x, t);
    }
  return out;
}

}  // namespace

EvalResult evaluateWithTta(Backend& backend, const ModelSpec& spec, const std::vector<float>& parameters,
                           const DatasetView& data, int batchSize, bool flip) {
  if (spec.task != TaskKind::Classification)
    throw EngineError("test-time augmentation is for classifiers; this model is a regression");
  if (spec.input.size() != 3)
    throw EngineError("test-time augmentation needs image inputs [channels, height, width]");
  EvalResult result = backend.evaluate(spec, parameters, data, batchSize);
  const int C = spec.input[0], H = spec.input[1], W = spec.input[2];
  struct View { int dy, dx; bool flip; };
  std::vector<View> views = {{0, 1, false}, {0, -1, false}, {1, 0, false}, {-1, 0, false}};
  if (flip) views.push_back({0, 0, true});
  std::vector<double> sum(result.probabilities.begin(), result.probabilities.end());
  for (const View& v : views) {
    const std::vector<float> features = viewOf(data, C, H, W, v.dy, v.dx, v.flip);
    DatasetView shifted = data;
    shifted.features = features.data();
    const EvalResult r = backend.evaluate(spec, parameters, shifted, batchSize);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += r.probabilities[i];
  }
  const int classes = result.classes;
  const double count = double(views.size() + 1);
  double lossSum = 0;
  int64_t right = 0;
  if (data.labels) std::fill(result.confusion.begin(), result.confusion.end(), 0);
  for (int64_t i = 0; i < data.count; ++i) {
    double* p = sum.data() + i * classes;
    for (int k = 0; k < classes; ++k) p[k] /= count;
    const int predicted = int(std::max_element(p, p + classes) - p);
    result.predictions[size_t(i)] = predicted;
    for (int k = 0; k < classes; ++k) result.probabilities[size_t(i * classes + k)] = float(p[k]);
    if (!data.labels) continue;
    const int32_t y = data.labels[i];
    lossSum -= std::log(std::max(p[y], 1e-12));  // the cross-entropy of the averaged probabilities
    right += predicted == y;
    ++result.confusion[size_t(y) * size_t(classes) + size_t(predicted)];
  }
  if (data.labels && data.count > 0) {
    result.loss = lossSum / double(data.count);
    result.accuracy = double(right) / double(data.count);
  }
  return result;
}

}  // namespace nnstudio
