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

#include <utility>

#include "cuda/check.h"
#include "cuda/device_caps.h"
#include "cuda/kernel_overrides.h"

namespace nnstudio::cuda {

__device__ __forceinline__ void startAfterPreviousKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Programmatic launches: asked for (NNSTUDIO_CUDA_PDL=1, kernel_overrides.h) and the device takes them
// (compute capability 9.0+).
inline bool programmaticLaunchSupported() {
  return kernelOverrides().programmaticLaunch && currentDeviceCaps().computeMajor >= 9;
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
