// Kernel launches with optional Programmatic Dependent Launch (PDL, Hopper and newer): the GPU may start
// a kernel while the previous one in the stream is finishing. Every kernel starts with
// startAfterPreviousKernel(): it lets the next kernel's blocks be scheduled as soon as all of this one's
// have started, then returns once the previous kernel has completed and its writes are visible. Nothing
// is read or written early, so the kernels' order is unchanged.
// PDL is OFF by default: on the H100 (2026-11-23, docs/BENCHMARKS.md) it made every launch-bound config
// slower inside our graphs (seed000 0.129 -> 0.177 s/epoch, seed002 0.207 -> 0.290, mlp 0.034 -> 0.040):
// the early-launched blocks of the next kernel sit on the SMs waiting, and the graph's own launch path
// is already short. NNSTUDIO_CUDA_PDL=1 turns it on, for comparisons.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cuda/check.h"

namespace nnstudio::cuda {

__device__ __forceinline__ void startAfterPreviousKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// An attribute of the current device (compute capability, shared memory per block, ...), asked once per
// device (two threads may ask at once); `fallback` where there is no current device or the query fails.
template <cudaDeviceAttr ATTRIBUTE>
int currentDeviceAttribute(int fallback) {
  static std::atomic<int> cached[64];  // 0: not asked yet, else the value + 1
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return fallback;
  if (cached[device] == 0) {
    int value = 0;
    if (cudaDeviceGetAttribute(&value, ATTRIBUTE, device) != cudaSuccess || value <= 0) {
      cudaGetLastError();  // not an error of the next launch
      value = fallback;
    }
    cached[device] = value + 1;
  }
  return cached[device] - 1;
}

inline int computeCapabilityMajor() { return currentDeviceAttribute<cudaDevAttrComputeCapabilityMajor>(0); }

// Programmatic launches: asked for (NNSTUDIO_CUDA_PDL=1) and the device takes them (compute capability 9.0+).
inline bool programmaticLaunchSupported() {
  static const bool requested = [] {
    const char* flag = std::getenv("NNSTUDIO_CUDA_PDL");
    return flag && std::strcmp(flag, "1") == 0;
  }();
  return requested && computeCapabilityMajor() >= 9;
}

inline cudaLaunchAttribute programmaticLaunchAttribute() {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = programmaticLaunchSupported() ? 1 : 0;
  return attribute;
}

// kernel<<<grid, block, sharedBytes, stream>>>(args...) with PDL; checked (throws EngineError naming `what`).
template <class... Params, class... Args>
void launchKernel(const char* what, void (*kernel)(Params...), dim3 grid, dim3 block, size_t sharedBytes,
                  cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = sharedBytes;
  config.stream = stream;
  cudaLaunchAttribute attributes[1] = {programmaticLaunchAttribute()};
  config.attrs = attributes;
  config.numAttrs = 1;
  check(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), what);
}

}  // namespace nnstudio::cuda
