// CUDA error handling: every runtime call and every launch is checked, and a failure becomes an
// EngineError with a message for the user (the process never aborts; the caller can retry on the CPU).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "nnstudio/engine.h"

namespace nnstudio::cuda {

// Throws EngineError("CUDA error in <what>: <reason>"), with advice for out-of-memory.
[[noreturn]] void throwCudaError(cudaError_t error, const char* what);

// The same for a failed allocation of `bytes`; out of memory names the size asked for and what is free:
// "CUDA error in allocating the weights: out of memory: 16.00 GiB asked for, 3.20 GiB free of 79.19 GiB (...)".
[[noreturn]] void throwAllocationError(cudaError_t error, const char* what, size_t bytes);

// Free and total memory of the current GPU (both 0 when the driver cannot tell).
void gpuMemory(size_t& freeBytes, size_t& totalBytes);

// "1.50 GiB"
std::string gibText(double bytes);

inline void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) throwCudaError(error, what);
}

// After a kernel launch: catches bad launch configurations at once (asynchronous faults surface at the
// next synchronising call, which is checked too).
inline void checkLaunch(const char* kernel) { check(cudaGetLastError(), kernel); }

inline unsigned blocksFor(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

}  // namespace nnstudio::cuda
