// CUDA error handling: every runtime call and every launch is checked, and a failure becomes an
// EngineError with a message for the user (the process never aborts; the caller can retry on the CPU).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "nnstudio/engine.h"

namespace nnstudio::cuda {

// Throws EngineError("CUDA error in <what>: <reason>"), with advice for out-of-memory.
[[noreturn]] void throwCudaError(cudaError_t error, const char* what);

inline void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) throwCudaError(error, what);
}

// After a kernel launch: catches bad launch configurations at once (asynchronous faults surface at the
// next synchronising call, which is checked too).
inline void checkLaunch(const char* kernel) { check(cudaGetLastError(), kernel); }

inline unsigned blocksFor(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

}  // namespace nnstudio::cuda
