// Launch timing for the CUDA tests' --bench modes: the median over repeated launches, alone or inside a
// CUDA graph (as the engine runs them).
#pragma once

#ifdef NNSTUDIO_WITH_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cuda_test_util.h"

namespace nnstudio::test {

inline float medianOf(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// µs per call of fn, median of `samples` timed runs of `reps` calls each (after a warm-up): inside one
// CUDA graph of `reps` launches when `graph`, else launched one by one.
template <class Fn>
float timeLaunches(Fn&& fn, cudaStream_t stream, bool graph, int reps = 20, int samples = 50) {
  cudaGraph_t captured = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (graph) {
    cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
    for (int i = 0; i < reps; ++i) fn();
    cudaOk(cudaStreamEndCapture(stream, &captured), "end capture");
    cudaOk(cudaGraphInstantiate(&exec, captured, 0), "instantiate");
  }
  auto runOnce = [&] {
    if (graph) cudaOk(cudaGraphLaunch(exec, stream), "graph launch");
    else for (int i = 0; i < reps; ++i) fn();
  };
  cudaEvent_t start, stop;
  cudaOk(cudaEventCreate(&start), "event");
  cudaOk(cudaEventCreate(&stop), "event");
  for (int i = 0; i < 3; ++i) runOnce();
  cudaOk(cudaStreamSynchronize(stream), "warm-up");
  std::vector<float> times;
  for (int i = 0; i < samples; ++i) {
    cudaOk(cudaEventRecord(start, stream), "record");
    runOnce();
    cudaOk(cudaEventRecord(stop, stream), "record");
    cudaOk(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    cudaOk(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    times.push_back(ms * 1000.0f / float(reps));
  }
  cudaOk(cudaEventDestroy(start), "event");
  cudaOk(cudaEventDestroy(stop), "event");
  if (graph) {
    cudaOk(cudaGraphExecDestroy(exec), "graph");
    cudaOk(cudaGraphDestroy(captured), "graph");
  }
  return medianOf(times);
}

}  // namespace nnstudio::test
#endif
