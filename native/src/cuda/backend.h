// The CUDA backend behind nnstudio::Backend: the dataset uploaded once and kept on the device, one
// training step captured in a CUDA graph and replayed for every batch, progress read back
// asynchronously and throttled.
#pragma once

#include "nnstudio/engine.h"

namespace nnstudio::cuda {

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int deviceIndex);
  DeviceInfo device() const override { return info_; }
  TrainResult train(const ModelSpec& spec, const DatasetView& train, const DatasetView* validation,
                    const TrainOptions& options, ProgressSink* progress, TrainControl* control,
                    const std::vector<float>* start) override;
  EvalResult evaluate(const ModelSpec& spec, const std::vector<float>& parameters, const DatasetView& data,
                      int batchSize) override;

 private:
  int deviceIndex_ = 0;
  DeviceInfo info_;
};

}  // namespace nnstudio::cuda
