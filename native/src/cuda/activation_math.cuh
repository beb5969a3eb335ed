// Elementwise activations on the device, the same formulas as cpu/activation.cpp: forward from x,
// derivative from the output y (every elementwise activation but GELU allows that: the networks keep
// GELU's input and never fuse its backward). Shared by every kernel
// that fuses an activation (dense and conv2d epilogues, input-gradient gates, pool backward).
#pragma once

#include "nnstudio/engine.h"

namespace nnstudio::cuda {

// The activations the fused epilogues apply (dense, conv2d, conv + pool, the dense head, GEMM). GELU is not
// among them: it never fuses (the networks keep its input), and an erff branch in this switch costs every
// fused kernel registers (conv + pool ran 40 % slower with it); geluValue computes it in its own kernel.
__device__ __forceinline__ float activate(float x, ActivationFn fn, float alpha) {
  switch (fn) {
    case ActivationFn::ReLU: return x > 0.0f ? x : 0.0f;
    case ActivationFn::LeakyReLU: return x > 0.0f ? x : alpha * x;
    case ActivationFn::Sigmoid:
      if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
      else { const float e = expf(x); return e / (1.0f + e); }
    case ActivationFn::Tanh: return tanhf(x);
    case ActivationFn::Softplus: return x > 20.0f ? x : log1pf(expf(x));
    default: return x;  // Linear; Softmax is a row operation, never applied here; GELU: geluValue
  }
}

// GELU, the exact erf form (PyTorch's default)
__device__ __forceinline__ float geluValue(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

// f'(x) expressed through y = f(x); GELU cannot be (geluSlope takes its input)
__device__ __forceinline__ float geluSlope(float x) {
  return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * 0.39894228040143268f * expf(-0.5f * x * x);
}

__device__ __forceinline__ float activationSlope(float y, ActivationFn fn, float alpha) {
  switch (fn) {
    case ActivationFn::ReLU: return y > 0.0f ? 1.0f : 0.0f;
    case ActivationFn::LeakyReLU: return y > 0.0f ? 1.0f : alpha;
    case ActivationFn::Sigmoid: return y * (1.0f - y);
    case ActivationFn::Tanh: return 1.0f - y * y;
    case ActivationFn::Softplus: return -expm1f(-y);
    default: return 1.0f;
  }
}

// dy * f'(y), exact zero (not NaN * 0) where ReLU is off, as the CPU's select
__device__ __forceinline__ float gateGradient(float dy, float y, ActivationFn fn, float alpha) {
  switch (fn) {
    case ActivationFn::Linear: return dy;
    case ActivationFn::ReLU: return y > 0.0f ? dy : 0.0f;
    case ActivationFn::LeakyReLU: return y > 0.0f ? dy : alpha * dy;
    default: return dy * activationSlope(y, fn, alpha);
  }
}

}  // namespace nnstudio::cuda
