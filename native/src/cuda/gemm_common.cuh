// What gemm.cu's tiled kernels and gemm_stream.cu's streaming kernels share: the asynchronous tile copies,
// the fused epilogue, and the cluster permission that split-K over more than 8 blocks needs.
#pragma once

#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/tc_mma.cuh"

namespace nnstudio::cuda::gemm_parts {

// ---- async copies ----

// cp.async.cg of 16 bytes (zeros where !valid, nothing read): tc_mma.cuh's, which the tensor-core kernels share
__device__ __forceinline__ void copy16(float* smem, const float* gmem, bool valid) {
  tc::cpAsync16(unsigned(__cvta_generic_to_shared(smem)), gmem, valid ? 16u : 0u);
}

__device__ __forceinline__ void copy4(float* smem, const float* gmem, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = unsigned(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(bytes) : "memory");
#else
  *smem = valid ? *gmem : 0.0f;
#endif
}

// A ROWS x COLS tile of a row-major matrix g (leading dimension ld, rowLim x colLim, colLim == ld) from
// (row0, col0) into shared memory with row stride COLS + 4; out-of-range elements become 0. `vec`:
// ld % 4 == 0 and g 16-byte aligned, so every aligned 4-column chunk is wholly inside or outside.
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void loadTile(float* s, const float* g, int64_t ld, int row0, int col0, int rowLim,
                                         int colLim, bool vec, int tid) {
  constexpr int LD = COLS + 4;
  if (vec) {
    constexpr int CHUNKS = ROWS * COLS / 4;
#pragma unroll
    for (int it = 0; it < (CHUNKS + THREADS - 1) / THREADS; ++it) {
      const int c = tid + it * THREADS;
      if (CHUNKS % THREADS == 0 || c < CHUNKS) {
        const int r = c / (COLS / 4), cc = (c % (COLS / 4)) * 4;
        const int gr = row0 + r, gc = col0 + cc;
        const bool ok = gr < rowLim && gc < colLim;
        copy16(s + r * LD + cc, ok ? g + int64_t(gr) * ld + gc : g, ok);
      }
    }
  } else {
    constexpr int ELEMS = ROWS * COLS;
    // rolled: unrolling would hoist a 64-bit address per element out of the K loop (register spills);
    // the copies are asynchronous, so a rolled loop still has them all in flight
#pragma unroll 1
    for (int it = 0; it < (ELEMS + THREADS - 1) / THREADS; ++it) {
      const int e = tid + it * THREADS;
      if (ELEMS % THREADS == 0 || e < ELEMS) {
        const int r = e / COLS, cc = e % COLS;
        const int gr = row0 + r, gc = col0 + cc;
        const bool ok = gr < rowLim && gc < colLim;
        copy4(s + r * LD + cc, ok ? g + int64_t(gr) * ld + gc : g, ok);
      }
    }
  }
}

struct Epilogue {
  const float* bias;
  const float* gate;
  float* rowSum;  // ROWSUM kernels: (M) row sums of op(A)
  ActivationFn act, gateAct;
  float alpha, gateAlpha;
};

__device__ __forceinline__ float finish(float v, int64_t m, int n, int N, const Epilogue& e) {
  if (e.bias) v += __ldg(e.bias + n);
  v = activate(v, e.act, e.alpha);
  if (e.gate) v = gateGradient(v, e.gate[m * N + n], e.gateAct, e.gateAlpha);
  return v;
}

// gemm()'s operand flags: A / B read as float4 (ld % 4 == 0, 16-byte aligned), C written as float4
constexpr unsigned kVecA = 1, kVecB = 2, kVecC = 4;

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Softmax is a row operation, never fused: the epilogue applies it as Linear
inline ActivationFn elementwise(ActivationFn fn) { return fn == ActivationFn::Softmax ? ActivationFn::Linear : fn; }

// Clusters of more than 8 blocks must be allowed per kernel (and device), before its first launch.
template <class Kernel>
inline bool allowWideClusters(Kernel kernel) {
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

}  // namespace nnstudio::cuda::gemm_parts
