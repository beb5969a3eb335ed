// Input checks shared by training (the driver) and evaluation (every backend): each throws EngineError
// naming `what` ("training data") before any memory is touched.
#pragma once

#include <vector>

#include "nnstudio/engine.h"
#include "spec/model.h"

namespace nnstudio {

// The classes the head predicts: its width, or 2 for a single output unit.
int headClassCount(const NetworkPlan& plan);

// A classifier reads labels (needed when needLabels), a regression its targets (needed when needLabels:
// training and validation, not prediction input).
void checkDataset(const NetworkPlan& plan, int classes, const DatasetView& data, const char* what, bool needLabels);
// TrainOptions' task fields: classWeights (classification, one per class, > 0), targetMean/targetStd
// (regression, one per target column, std > 0).
void checkTaskOptions(const NetworkPlan& plan, const TrainOptions& options);
// The recipe's options: augment (image inputs [C,H,W] only, each field in its range) and ema in [0, 1).
void checkRecipeOptions(const ModelSpec& spec, const TrainOptions& options);
void checkParameters(const NetworkPlan& plan, const std::vector<float>& parameters, const char* what);

}  // namespace nnstudio
