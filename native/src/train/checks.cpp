// Input checks (see checks.h).
#include "train/checks.h"

#include <string>

namespace nnstudio {

int headClassCount(const NetworkPlan& plan) { return plan.outputWidth == 1 ? 2 : int(plan.outputWidth); }

void checkDataset(const NetworkPlan& plan, int classes, const DatasetView& data, const char* what, bool needLabels) {
  const std::string w = what;
  if (data.count <= 0) throw EngineError(w + " is empty (count " + std::to_string(data.count) + ")");
  if (!data.features) throw EngineError(w + ": no features (null buffer)");
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

void checkParameters(const NetworkPlan& plan, const std::vector<float>& parameters, const char* what) {
  if (parameters.size() != plan.parameterCount)
    throw EngineError(std::string(what) + ": " + std::to_string(parameters.size()) + " values for a model with " +
                      std::to_string(plan.parameterCount) + " parameters");
}

}  // namespace nnstudio
