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

// ---- thread-block clusters (sm_90+) ----

// clusters of `blocks` blocks along x
inline cudaLaunchAttribute clusterAttribute(int blocks) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = unsigned(blocks);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  return attribute;
}

// launchKernel over clusters of `clusterBlocks` blocks; checked (throws EngineError naming `what`).
template <class... Params, class... Args>
void launchClusterKernel(const char* what, void (*kernel)(Params...), dim3 grid, dim3 block, size_t sharedBytes,
                         cudaStream_t stream, int clusterBlocks, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = sharedBytes;
  config.stream = stream;
  cudaLaunchAttribute attributes[2] = {clusterAttribute(clusterBlocks), programmaticLaunchAttribute()};
  config.attrs = attributes;
  config.numAttrs = 2;
  check(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), what);
}

// Does `kernel` run machine code compiled for sm_90+ on the current device (our cluster kernels' only real
// body)? A build for older targets, its PTX JIT-compiled on a Hopper, reports binaryVersion 90 but runs the body
// compiled for those targets, which traps; its ptxVersion says so. `attributes` receives the kernel's when given.
template <class... Params>
bool runsSm90Code(void (*kernel)(Params...), cudaFuncAttributes* attributes = nullptr) {
  cudaFuncAttributes attr{};
  const bool asked = cudaFuncGetAttributes(&attr, kernel) == cudaSuccess;
  if (!asked) cudaGetLastError();  // not an error of the next launch
  if (attributes) *attributes = attr;
  return asked && attr.ptxVersion >= 90 && attr.binaryVersion >= 90;
}

// Can clusters of `blocks` blocks of this kernel (`threads` threads and `sharedBytes` of dynamic shared
// memory each) be resident at once on the current device?
template <class... Params>
bool clusterFits(void (*kernel)(Params...), int threads, size_t sharedBytes, int blocks) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(blocks));
  config.blockDim = dim3(unsigned(threads));
  config.dynamicSmemBytes = sharedBytes;
  cudaLaunchAttribute attributes[1] = {clusterAttribute(blocks)};
  config.attrs = attributes;
  config.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    cudaGetLastError();  // not an error of the next launch
    return false;
  }
  return clusters > 0;
}

}  // namespace nnstudio::cuda
