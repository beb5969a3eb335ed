// Input checks shared by training (the driver) and evaluation (every backend): each throws EngineError
// naming `what` ("training data") before any memory is touched.
#pragma once

#include <vector>

#include "nnstudio/engine.h"
#include "spec/model.h"

namespace nnstudio {

// The classes the head predicts: its width, or 2 for a single output unit.
int headClassCount(const NetworkPlan& plan);

void checkDataset(const NetworkPlan& plan, int classes, const DatasetView& data, const char* what, bool needLabels);
void checkParameters(const NetworkPlan& plan, const std::vector<float>& parameters, const char* what);

}  // namespace nnstudio
