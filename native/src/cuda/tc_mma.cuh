// The tensor-core building blocks of the implicit GEMMs (conv2d_tc.cu, conv2d_tc_wgrad.cu): cp.async copies
// with zero fill, the 3xTF32 split and the m16n8k8 TF32 mma.sync (sm_80+; callers guard __CUDA_ARCH__).
#pragma once

#include <cstdint>

namespace nnstudio::cuda::tc {

// 4 bytes global -> shared (a shared-window address), where keep != 0; else zeros, src not read
__device__ __forceinline__ void cpAsync4(uint32_t dst, const float* src, uint32_t keep) {
  asm volatile(
      "{\n .reg .pred p;\n setp.eq.u32 p, %2, 0;\n cp.async.ca.shared.global [%0], [%1], 4, p;\n}\n" ::"r"(dst),
      "l"(src), "r"(keep)
      : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// x = big + small: big = x rounded to TF32 (to nearest, ties away: add half an ulp, clear the 13 low
// bits), small = x - big, exact in FP32. small goes to the tensor core as it is: it reads the top 19
// bits (TF32 truncation), an error of < 2^-10 of small, i.e. < 2^-21 of x. SPLIT 1: big alone.
template <int SPLIT>
__device__ __forceinline__ void split(float x, uint32_t& big, uint32_t& small) {
  big = (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u;
  if constexpr (SPLIT == 3) small = __float_as_uint(x - __uint_as_float(big));
}

// d += a (16x8, row) . b (8x8, col)
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace nnstudio::cuda::tc
