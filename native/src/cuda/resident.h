// Host-device transfers shared by the training session and evaluation: a dataset kept on the device
// for a whole run, and a synchronous download.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/buffer.h"
#include "cuda/check.h"
#include "nnstudio/engine.h"

namespace nnstudio::cuda {

// A dataset resident on the device (labels and targets only when it has them).
struct ResidentData {
  DeviceBuffer<float> features;   // (count, featureSize)
  DeviceBuffer<int32_t> labels;   // (count)
  DeviceBuffer<float> targets;    // (count, targetWidth): a regression's
  ResidentData(const DatasetView& d, cudaStream_t stream, const char* what) {
    features.allocate(size_t(d.count) * size_t(d.featureSize), what);
    check(cudaMemcpyAsync(features.get(), d.features, features.bytes(), cudaMemcpyHostToDevice, stream), what);
    if (d.targets && d.targetWidth > 0) {
      targets.allocate(size_t(d.count) * size_t(d.targetWidth), what);
      check(cudaMemcpyAsync(targets.get(), d.targets, targets.bytes(), cudaMemcpyHostToDevice, stream), what);
    }
    if (d.labels) {
      labels.allocate(size_t(d.count), what);
      check(cudaMemcpyAsync(labels.get(), d.labels, labels.bytes(), cudaMemcpyHostToDevice, stream), what);
    }
  }
};

// The first `count` values of `buffer`, once everything queued on `stream` before has run.
template <class T>
std::vector<T> download(const DeviceBuffer<T>& buffer, size_t count, cudaStream_t stream, const char* what) {
  std::vector<T> host(count);
  if (count) check(cudaMemcpyAsync(host.data(), buffer.get(), sizeof(T) * count, cudaMemcpyDeviceToHost, stream), what);
  check(cudaStreamSynchronize(stream), what);
  return host;
}

}  // namespace nnstudio::cuda
