// Helpers for the CUDA tests: device buffers filled from host vectors (poisoned with NaN before every
// launch whose output is checked), random inputs, bitwise determinism checks, a relative error (the op
// table's tolerances are in op_table.h), and the skip rule (a machine without a CUDA device prints "skipped: no CUDA
// device" and passes).
#pragma once

#ifdef NNSTUDIO_WITH_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "spec/rng.h"
#include "test_util.h"

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
    cudaOk(cudaDeviceSynchronize(), "poison");
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

// NaN bytes again (the constructor's poison), before a launch whose output is checked; done before this
// returns, so a launch on any stream (a non-blocking one too) sees it
template <class T>
void poison(DeviceVector<T>& v) {
  cudaOk(cudaMemset(v.ptr, 0xFF, sizeof(T) * (v.count ? v.count : 1)), "poison");
  cudaOk(cudaDeviceSynchronize(), "poison");
}

// uniform in [-scale, scale) from the engine's portable RNG
inline std::vector<float> randomVector(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = (2.0f * rng.uniform() - 1.0f) * scale;
  return v;
}

// randomVector, never exactly zero (a zero input hides a wrong ReLU gate or a missed tap); quantum > 0
// rounds every value to its multiples first (dyadic values: sums exact in any order)
inline std::vector<float> randomNonZero(size_t n, uint64_t seed, float scale, float quantum = 0.0f) {
  std::vector<float> v = randomVector(n, seed, scale);
  for (float& x : v) {
    if (quantum > 0) x = std::round(x / quantum) * quantum;
    if (x == 0.0f) x = quantum > 0 ? quantum : 0.5f * scale;
  }
  return v;
}

template <class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// `launch` (which writes `outputs`) 3 times in a row on `stream`, then `replays` replays of a CUDA graph
// of 2 launches: true when every time the outputs hold the same bits as `expected` (they are poisoned
// before each run).
template <class Launch>
bool sameBitsWhenRepeated(cudaStream_t stream, Launch&& launch, const std::vector<DeviceVector<float>*>& outputs,
                          const std::vector<std::vector<float>>& expected, int replays) {
  bool same = true;
  auto check = [&] {
    cudaOk(cudaStreamSynchronize(stream), "repeated launches");
    for (size_t i = 0; i < outputs.size(); ++i) {
      same = same && sameBits(outputs[i]->download(), expected[i]);
      poison(*outputs[i]);
    }
  };
  for (DeviceVector<float>* out : outputs) poison(*out);
  for (int i = 0; i < 3; ++i) launch();
  check();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  launch();
  launch();
  cudaOk(cudaStreamEndCapture(stream, &graph), "capture");
  cudaOk(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  for (int i = 0; i < replays; ++i) {
    cudaOk(cudaGraphLaunch(exec, stream), "replay");
    check();
  }
  cudaOk(cudaGraphExecDestroy(exec), "graph");
  cudaOk(cudaGraphDestroy(graph), "graph");
  return same;
}

// ---- tolerances: a comparison's normalised error must not exceed `limit` ----

// error = max |gpu - ref| / (1 + max |ref|) when floor < 0, else max |gpu - ref| / max(floor, max |ref|);
// infinite when a value is not finite or the sizes differ
struct Tolerance {
  double limit;
  double floor;
};
inline constexpr Tolerance kParity{1e-4, -1.0};     // sums in another order than the CPU's: 1e-4 (1 + max |cpu|)
inline constexpr Tolerance kRelative{1e-4, 1e-20};  // sums exact in any order (dyadic inputs): 1e-4 max |cpu|
inline constexpr Tolerance kExact{0.0, 1.0};        // the CPU's values
inline constexpr Tolerance relative(double limit, double floor = 1.0) { return {limit, floor}; }

inline double normalisedError(const std::vector<float>& gpu, const std::vector<float>& ref, const Tolerance& tol) {
  if (gpu.size() != ref.size()) return INFINITY;
  double worst = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(gpu[i]) || !std::isfinite(ref[i])) return INFINITY;
    worst = std::max(worst, std::fabs(double(gpu[i]) - double(ref[i])));
    scale = std::max(scale, std::fabs(double(ref[i])));
  }
  return worst / (tol.floor < 0 ? 1.0 + scale : std::max(tol.floor, scale));
}

// max |a - b| / max(floor, max |b|): relative to the reference's magnitude
inline double relError(const std::vector<float>& a, const std::vector<float>& b, double floor = 1.0) {
  return normalisedError(a, b, relative(0, floor));
}

}  // namespace nnstudio::test

#endif
