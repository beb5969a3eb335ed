// The one training loop, shared by every backend (Backend::train calls it): the backend's
// TrainingSession (train/session.h) runs the steps; everything else is here.
#pragma once

#include <vector>

#include "nnstudio/engine.h"

namespace nnstudio {

// Backend::train's contract (engine.h): checks the inputs, opens a session on `backend`, trains.
TrainResult runTraining(Backend& backend, const ModelSpec& spec, const DatasetView& data, const DatasetView* validation,
                        const TrainOptions& options, ProgressSink* progress, TrainControl* control,
                        const std::vector<float>* start);

}  // namespace nnstudio
