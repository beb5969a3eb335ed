// What a GPU can do for our kernels, asked of the driver once per device (device_caps.cu) and read by the
// kernel chooser (kernel_choice.h) for every launch. Two GPUs get their own values; training and
// evaluation threads may ask at once. Plain C++ (the struct and the declarations): the chooser and its
// CPU tests use fake caps.
#pragma once

#include <cstddef>

#include "cuda/per_device.h"

namespace nnstudio::cuda {

// The newest matrix instruction family the GPU has, as far as our kernels' code can use it: the conv kernels
// take FP16 mma.sync m16n8k8 from Turing (sm_75) on, TF32 and BF16 mma.sync from Ampere on.
enum class TensorCores { None, Fp16MmaSync, Tf32MmaSync, Wgmma, Tcgen05 };

struct DeviceCaps {
  int device = 0;
  int sms = 1;                              // streaming multiprocessors
  int computeMajor = 0, computeMinor = 0;
  // The architecture our kernels' code was compiled for, as it runs on this device (a probe kernel's
  // ptxVersion, at most the device's own; the device's where unknown): lower than the device's where a build
  // without its machine code runs JIT-compiled PTX (a build for sm_75 alone on an H100 runs its sm_75 code).
  // tensorCores and clusterLaunch follow it.
  int codeArch = 0;
  size_t sharedOptin = 48 * 1024;           // dynamic shared memory a block may opt into (227 KiB on an H100)
  size_t l2Bytes = 0;
  TensorCores tensorCores = TensorCores::None;
  bool clusterLaunch = false;               // thread-block clusters (sm_90+ code, and a driver that launches them)
  // Clusters of our own kernels that the GPU co-schedules (probed with their threads and shared memory;
  // 1: no cluster, e.g. a build without sm_90 code running on a newer GPU):
  int gemmMaxCluster = 1;                   // gemm.cu's split-K: 1, 8 (portable) or 16 (non-portable, H100)
  int headMaxCluster = 1;                   // dense_head.cu: 1 .. 16
  int batchnormMaxCluster = 1;              // batchnorm_cluster.cu: 1 .. 16
  size_t headSharedBytes = 47 * 1024;       // dense_head.cu's dynamic shared memory (the opt-in less its static arrays)

  bool tf32TensorCores() const { return tensorCores >= TensorCores::Tf32MmaSync; }
};

// The current device's caps (queried the first time, then cached); throws EngineError when there is no
// device or the driver cannot be asked.
const DeviceCaps& currentDeviceCaps();
// Those of `device` (made current for the query if it is not).
const DeviceCaps& deviceCaps(int device);
// The calling thread's current device.
int currentDevice();

// Runs set() once per device for this `done` table: for what lives in each device's context, e.g. a kernel's
// attribute (a static table per kernel). Returns set()'s value, remembered per device.
template <class Set>
bool oncePerDevice(PerDevice<bool>& done, Set&& set) {
  return done.get(currentDevice(), [&](int) { return bool(set()); });
}

}  // namespace nnstudio::cuda
