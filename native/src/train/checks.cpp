// Input checks (see checks.h).
#include "train/checks.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace nnstudio {

int headClassCount(const NetworkPlan& plan) { return plan.outputWidth == 1 ? 2 : int(plan.outputWidth); }

namespace {

// A regression's targets: needed to train and validate, optional to evaluate (prediction input).
void checkTargets(const NetworkPlan& plan, const DatasetView& data, const std::string& w, bool needTargets) {
  if (data.featureSize != plan.inputSize)
    throw EngineError(w + ": each sample has " + std::to_string(data.featureSize) + " features but the model expects " +
                      std::to_string(plan.inputSize) + " (input " + shapeText(plan.layers.front().inShape) + ")");
  if (!data.targets) {
    if (needTargets) throw EngineError(w + ": no targets: a regression needs the target columns (null buffer)");
    return;
  }
  if (data.targetWidth != plan.outputWidth)
    throw EngineError(w + ": " + std::to_string(data.targetWidth) + " target columns but the model's last layer has " +
                      std::to_string(plan.outputWidth) + " outputs (a regression predicts one output per target)");
  for (int64_t i = 0; i < data.count * data.targetWidth; ++i)
    if (!std::isfinite(data.targets[i]))
      throw EngineError(w + ": target " + std::to_string(i % data.targetWidth) + " of sample " +
                        std::to_string(i / data.targetWidth) + " (0-based) is not a finite number");
}

}  // namespace

void checkDataset(const NetworkPlan& plan, int classes, const DatasetView& data, const char* what, bool needLabels) {
  const std::string w = what;
  if (data.count <= 0) throw EngineError(w + " is empty (count " + std::to_string(data.count) + ")");
  if (!data.features) throw EngineError(w + ": no features (null buffer)");
  if (plan.regression()) {
    checkTargets(plan, data, w, needLabels);
    return;
  }
  if (needLabels && !data.labels) throw EngineError(w + ": no labels (null buffer)");
  if (data.featureSize != plan.inputSize)
    throw EngineError(w + ": each sample has " + std::to_string(data.featureSize) + " features but the model expects " +
                      std::to_string(plan.inputSize) + " (input " + shapeText(plan.layers.front().inShape) + ")");
  if (data.labels) {
    for (int64_t i = 0; i < data.count; ++i) {
      const int32_t y = data.labels[i];
      if (y < 0 || y >= classes)
        throw EngineError(w + ": label " + std::to_string(y) + " of sample " + std::to_string(i) +
                          " (0-based) is outside [0, " + std::to_string(classes) + "): the model predicts " +
                          std::to_string(classes) + " classes");
    }
  }
}

void checkTaskOptions(const NetworkPlan& plan, const TrainOptions& options) {
  const bool regression = plan.regression();
  const std::vector<float>& weights = options.classWeights;
  if (!weights.empty()) {
    if (regression) throw EngineError("class weights are for classification; this model is a regression");
    const int classes = headClassCount(plan);
    if (int64_t(weights.size()) != classes)
      throw EngineError("class weights: " + std::to_string(weights.size()) + " values but the model predicts " +
                        std::to_string(classes) + " classes");
    for (size_t c = 0; c < weights.size(); ++c)
      if (!(std::isfinite(weights[c]) && weights[c] > 0))
        throw EngineError("class weights: the weight of class " + std::to_string(c) + " must be a finite number > 0");
  }
  const auto checkColumns = [&](const std::vector<float>& values, const char* name, bool positive) {
    if (values.empty()) return;
    if (!regression) throw EngineError(std::string(name) + " is for a regression; this model is a classifier");
    if (int64_t(values.size()) != plan.outputWidth)
      throw EngineError(std::string(name) + ": " + std::to_string(values.size()) + " values for " +
                        std::to_string(plan.outputWidth) + " target columns");
    for (size_t k = 0; k < values.size(); ++k)
      if (!std::isfinite(values[k]) || (positive && !(values[k] > 0)))
        throw EngineError(std::string(name) + ": the value of column " + std::to_string(k) + " must be a finite number" +
                          (positive ? " > 0" : ""));
  };
  checkColumns(options.targetMean, "target mean", false);
  checkColumns(options.targetStd, "target std", true);
  if (options.targetMean.empty() != options.targetStd.empty())
    throw EngineError("target mean and std: give both or neither");
}

void checkRecipeOptions(const ModelSpec& spec, const TrainOptions& options) {
  if (!(std::isfinite(options.ema) && options.ema >= 0 && options.ema < 1))
    throw EngineError("ema must be a decay in [0, 1), e.g. 0.999");
  const Augmentation& a = options.augment;
  if (!a.enabled()) return;
  if (spec.input.size() != 3)
    throw EngineError("augmentation needs image inputs [channels, height, width]; this model's input is [" +
                      std::to_string(spec.input.empty() ? 0 : spec.input[0]) + "] features");
  const int H = spec.input[1], W = spec.input[2];
  if (a.translate < 0 || a.translate > std::min(H, W) / 2)
    throw EngineError("augment: translate must be 0.." + std::to_string(std::min(H, W) / 2) +
                      " pixels (half the image), got " + std::to_string(a.translate));
  auto inRange = [](float v, float hi) { return std::isfinite(v) && v >= 0 && v <= hi; };
  if (!inRange(a.rotate, 180)) throw EngineError("augment: rotate must be 0..180 degrees");
  if (!inRange(a.scale, 0.5f)) throw EngineError("augment: scale must be a fraction in 0..0.5");
  if (!inRange(a.erase, 1)) throw EngineError("augment: erase must be a probability in 0..1");
}

void checkParameters(const NetworkPlan& plan, const std::vector<float>& parameters, const char* what) {
  if (parameters.size() != plan.parameterCount)
    throw EngineError(std::string(what) + ": " + std::to_string(parameters.size()) + " values for a model with " +
                      std::to_string(plan.parameterCount) + " parameters");
}

}  // namespace nnstudio
