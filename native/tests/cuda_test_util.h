// Helpers for the CUDA tests: device buffers filled from host vectors, and the skip rule (a machine
// without a CUDA device prints "skipped: no CUDA device" and passes).
#pragma once

#ifdef NNSTUDIO_WITH_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "spec/rng.h"

namespace nnstudio::test {

inline void cudaOk(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

inline bool haveCudaDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// A device copy of a host vector (or `count` elements poisoned with NaN bytes when empty).
template <class T>
struct DeviceVector {
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceVector(const std::vector<T>& host) : count(host.size()) {
    cudaOk(cudaMalloc(&ptr, sizeof(T) * (count ? count : 1)), "cudaMalloc");
    if (count) cudaOk(cudaMemcpy(ptr, host.data(), sizeof(T) * count, cudaMemcpyHostToDevice), "upload");
  }
  explicit DeviceVector(size_t n) : count(n) {
    cudaOk(cudaMalloc(&ptr, sizeof(T) * (n ? n : 1)), "cudaMalloc");
    cudaOk(cudaMemset(ptr, 0xFF, sizeof(T) * (n ? n : 1)), "poison");  // 0xFFFFFFFF is a NaN as float
  }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  ~DeviceVector() { cudaFree(ptr); }
  std::vector<T> download() const {
    std::vector<T> host(count);
    cudaOk(cudaDeviceSynchronize(), "kernel");
    if (count) cudaOk(cudaMemcpy(host.data(), ptr, sizeof(T) * count, cudaMemcpyDeviceToHost), "download");
    return host;
  }
};

// uniform in [-scale, scale) from the engine's portable RNG
inline std::vector<float> randomVector(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = (2.0f * rng.uniform() - 1.0f) * scale;
  return v;
}

// max |a - b| / max(floor, max |b|): relative to the reference's magnitude; a size mismatch or a
// non-finite value anywhere gives infinity
inline double relError(const std::vector<float>& a, const std::vector<float>& b, double floor = 1.0) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0, scale = floor;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return worst / scale;
}

}  // namespace nnstudio::test
#endif
