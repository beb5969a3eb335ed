// The tensor-core building blocks of the implicit GEMMs (conv2d_tc_kernels.cuh, conv2d_tc_wgrad.cu,
// mlp_step.cu): cp.async copies with zero fill, the 3xTF32 split, the m16n8k8 TF32 and m16n8k16 BF16 / FP16
// mma.sync (sm_80+), and on sm_75 (Turing) what FP16 needs there: plain copies instead of cp.async, two m16n8k8
// FP16 products for one k16 step. Kernels compile their body where kMathCompiled says the pass has the
// instructions.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kernel_choice.h"  // TcMath

namespace nnstudio::cuda::tc {

// This compilation pass has MATH's instructions: FP16 mma.sync from sm_75 on, TF32 and BF16 from sm_80 on.
// (The host pass and older targets: none; their kernels compile empty and the chooser never launches them
// there: DeviceCaps::tensorCores follows the code's architecture.)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <TcMath MATH>
inline constexpr bool kMathCompiled = true;
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
template <TcMath MATH>
inline constexpr bool kMathCompiled = MATH == TcMath::Fp16;
#else
template <TcMath MATH>
inline constexpr bool kMathCompiled = false;
#endif

// 4 bytes global -> shared (a shared-window address), where keep != 0; else zeros, src not read. Before sm_80
// a plain load and store: it lands at once, which the pipelines' order allows (a stage is free when its copy
// is issued, as cp.async may land at once too).
__device__ __forceinline__ void cpAsync4(uint32_t dst, const float* src, uint32_t keep) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "{\n .reg .pred p;\n setp.eq.u32 p, %2, 0;\n cp.async.ca.shared.global [%0], [%1], 4, p;\n}\n" ::"r"(dst),
      "l"(src), "r"(keep)
      : "memory");
#else
  const float value = keep ? *src : 0.0f;
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(dst), "f"(value) : "memory");
#endif
}
// 16 bytes global -> shared (a shared-window address; both 16-byte aligned): `bytes` of them read (16), or
// none (0: zeros). Before sm_80 a plain load and store.
__device__ __forceinline__ void cpAsync16(uint32_t dst, const float* src, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
#else
  const float4 value = bytes ? *reinterpret_cast<const float4*>(src) : make_float4(0.f, 0.f, 0.f, 0.f);
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "f"(value.x), "f"(value.y), "f"(value.z),
               "f"(value.w)
               : "memory");
#endif
}
__device__ __forceinline__ void cpAsyncCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cpAsyncWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// x = big + small: big = x rounded to TF32 (to nearest, ties away: add half an ulp, clear the 13 low
// bits), small = x - big, exact in FP32. small goes to the tensor core as it is: it reads the top 19
// bits (TF32 truncation), an error of < 2^-10 of small, i.e. < 2^-21 of x. SPLIT 1: big alone.
template <int SPLIT>
__device__ __forceinline__ void split(float x, uint32_t& big, uint32_t& small) {
  big = (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u;
  if constexpr (SPLIT == 3) small = __float_as_uint(x - __uint_as_float(big));
}

// the reduction steps one call of mmaWarpTile<MATH> takes: a k8 TF32 mma, or a k16 BF16 / FP16 mma
template <TcMath MATH>
inline constexpr bool kHalf = halfMath(MATH);  // kernel_choice.h's test, usable in device code
template <TcMath MATH>
inline constexpr int kStep = kHalf<MATH> ? 16 : 8;

// d += a (16x8, row) . b (8x8, col)
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a (16x16, row) . b (16x8, col), BF16 operands (two a register, the lower index in the low half)
__device__ __forceinline__ void mmaBf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a (16x16, row) . b (16x8, col), FP16 operands (the BF16 fragment layout). Turing has no k16 FP16 mma:
// two k8 ones, a[0..1] . b[0] (the first 8 k slots) then a[2..3] . b[1].
__device__ __forceinline__ void mmaFp16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
#pragma unroll
  for (int h = 0; h < 2; ++h)
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[2 * h]), "r"(a[2 * h + 1]), "r"(b[h]));
#endif
}

// lo and hi rounded to BF16 (to nearest even), packed: lo in the low half
__device__ __forceinline__ uint32_t packBf16(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// lo and hi rounded to FP16 (to nearest even; beyond 65504 infinite, which the loss scaling's overflow check
// then finds), packed: lo in the low half
__device__ __forceinline__ uint32_t packFp16(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// one k16 product of 16-bit operands: the operands rounded and packed, then the mma
template <TcMath MATH>
__device__ __forceinline__ uint32_t packHalf(float lo, float hi) {
  if constexpr (MATH == TcMath::Fp16) return packFp16(lo, hi);
  else return packBf16(lo, hi);
}
template <TcMath MATH>
__device__ __forceinline__ void mmaHalf(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (MATH == TcMath::Fp16) mmaFp16(d, a, b);
  else mmaBf16(d, a, b);
}

// A warp's 32 x 32 tile as 2 x 4 m16n8 fragments: acc[mt][nt][c] holds row 16 mt + g (+8 for c >= 2) and
// column 8 nt + 2 t (+1 for odd c) of the tile, g = lane / 4, t = lane % 4.
__device__ __forceinline__ void clearWarpTile(float (&acc)[2][4][4]) {
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;
}

// acc += A (32 x 16) . B (16 x 32) in BF16 or FP16 (MATH), the 16 reduction steps from k16 on. Each thread reads
// the elements two TF32 k8 steps would (k16 + t, + 4, + 8, + 12): the m16n8k16 fragment's k slots 2t, 2t + 1,
// 2t + 8, 2t + 9 hold the reduction's k16 + t, + 4, + 8, + 12, the same permutation of k for A and B, so the sum
// is the same.
template <TcMath MATH, class AAt, class BAt>
__device__ __forceinline__ void mmaWarpTileHalf(float (&acc)[2][4][4], int k16, int g, int t, AAt aAt, BAt bAt) {
  uint32_t a[2][4], b[4][2];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    const int r = mt * 16 + g;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // h: the k half (slots 0-7, 8-15)
      const int k = k16 + 8 * h + t;
      a[mt][2 * h] = packHalf<MATH>(aAt(r, k), aAt(r, k + 4));
      a[mt][2 * h + 1] = packHalf<MATH>(aAt(r + 8, k), aAt(r + 8, k + 4));
    }
  }
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int c = nt * 8 + g;
    b[nt][0] = packHalf<MATH>(bAt(k16 + t, c), bAt(k16 + t + 4, c));
    b[nt][1] = packHalf<MATH>(bAt(k16 + 8 + t, c), bAt(k16 + 12 + t, c));
  }
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) mmaHalf<MATH>(acc[mt][nt], a[mt], b[nt]);
}

// acc += A (32 x 8) . B (8 x 32), the 8 reduction steps from k8 on: aAt(row, k) and bAt(k, column) read
// the shared-memory tiles (row and column within the warp's tile). SPLIT 3: the small corrections first,
// then the big product (3xTF32); SPLIT 1: plain TF32.
template <int SPLIT, class AAt, class BAt>
__device__ __forceinline__ void mmaWarpTileTf32(float (&acc)[2][4][4], int k8, int g, int t, AAt aAt, BAt bAt) {
  uint32_t aBig[2][4], aSmall[2][4], bBig[4][2], bSmall[4][2];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    const int r = mt * 16 + g;
    split<SPLIT>(aAt(r, k8 + t), aBig[mt][0], aSmall[mt][0]);
    split<SPLIT>(aAt(r + 8, k8 + t), aBig[mt][1], aSmall[mt][1]);
    split<SPLIT>(aAt(r, k8 + t + 4), aBig[mt][2], aSmall[mt][2]);
    split<SPLIT>(aAt(r + 8, k8 + t + 4), aBig[mt][3], aSmall[mt][3]);
  }
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const int c = nt * 8 + g;
    split<SPLIT>(bAt(k8 + t, c), bBig[nt][0], bSmall[nt][0]);
    split<SPLIT>(bAt(k8 + t + 4, c), bBig[nt][1], bSmall[nt][1]);
  }
  if constexpr (SPLIT == 3) {
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) mma(acc[mt][nt], aBig[mt], bSmall[nt]);
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) mma(acc[mt][nt], aSmall[mt], bBig[nt]);
  }
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) mma(acc[mt][nt], aBig[mt], bBig[nt]);
}


// acc += A (32 x kStep) . B (kStep x 32) from k on, in the pass's arithmetic
template <TcMath MATH, class AAt, class BAt>
__device__ __forceinline__ void mmaWarpTile(float (&acc)[2][4][4], int k, int g, int t, AAt aAt, BAt bAt) {
  if constexpr (kHalf<MATH>) mmaWarpTileHalf<MATH>(acc, k, g, t, aAt, bAt);
  else mmaWarpTileTf32<MATH == TcMath::Tf32x3 ? 3 : 1>(acc, k, g, t, aAt, bAt);
}

}  // namespace nnstudio::cuda::tc
