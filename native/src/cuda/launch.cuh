// Kernel launches with Programmatic Dependent Launch (PDL, Hopper and newer): the GPU may start a kernel
// while the previous one in the stream is finishing, so the launch gap between the many small kernels
// of a training step (1-2 µs each, several times the work of some of them) overlaps with work. Every
// kernel starts with startAfterPreviousKernel(): it lets the next kernel's blocks be scheduled as soon
// as all of this one's have started, then returns once the previous kernel has completed and its
// writes are visible. Nothing is read or written early, so the kernels' order is unchanged. Older GPUs
// launch as usual (both instructions compile to nothing there).
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "cuda/check.h"

namespace nnstudio::cuda {

__device__ __forceinline__ void startAfterPreviousKernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Does the current device take programmatic launches (compute capability 9.0 or newer)?
inline bool programmaticLaunchSupported() {
  static int cached[64] = {};  // 0 unknown, 1 no, 2 yes
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return false;
  if (cached[device] == 0) {
    int major = 0;
    cached[device] = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                             major >= 9
                         ? 2
                         : 1;
  }
  return cached[device] == 2;
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
