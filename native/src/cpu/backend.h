// The CPU backend behind nnstudio::Backend.
#pragma once

#include <memory>

#include "cpu/thread_pool.h"
#include "nnstudio/engine.h"
#include "spec/model.h"

namespace nnstudio::cpu {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int threads);  // 0: one per hardware thread
  DeviceInfo device() const override;
  EvalResult evaluate(const ModelSpec& spec, const std::vector<float>& parameters, const DatasetView& data,
                      int batchSize) override;
  // One step at a time on this thread and the pool (session.cpp).
  std::unique_ptr<TrainingSession> openSession(const SessionSetup& setup) override;

 private:
  int threads_ = 1;
};

// The CPU as a DeviceInfo (name from /proc/cpuinfo where available).
DeviceInfo cpuDeviceInfo(int threads);

}  // namespace nnstudio::cpu
