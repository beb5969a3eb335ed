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
  // options.gpus: each must exist, no repeats; more than one trains data-parallel when NCCL loads, else
  // one (the first) with `why` (nccl_library.h's reason).
  int dataParallelRanks(const TrainOptions& options, std::string* why) override;

 private:
  int deviceIndex_ = 0;
  DeviceInfo info_;
};

// The name of GPU `device` ("NVIDIA H100 80GB HBM3").
std::string gpuName(int device);

}  // namespace nnstudio::cuda
