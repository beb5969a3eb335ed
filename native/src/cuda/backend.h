// The CUDA backend behind nnstudio::Backend: the dataset uploaded once and kept on the device, one
// training step captured in a CUDA graph and replayed for every batch, progress read back
// asynchronously and throttled (its TrainingSession, session.cu).
#pragma once

#include <memory>

#include "nnstudio/engine.h"

namespace nnstudio::cuda {

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int deviceIndex);
  DeviceInfo device() const override { return info_; }
  EvalResult evaluate(const ModelSpec& spec, const std::vector<float>& parameters, const DatasetView& data,
                      int batchSize) override;
  // Checks the run fits in the GPU's free memory, then allocates it and captures its step graphs (session.cu).
  std::unique_ptr<TrainingSession> openSession(const SessionSetup& setup) override;

 private:
  int deviceIndex_ = 0;
  DeviceInfo info_;
};

}  // namespace nnstudio::cuda
