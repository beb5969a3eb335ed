// One parameter's optimizer update on the device, exactly as cpu/optim.cpp (PyTorch's rules): SGD with
// momentum (Nesterov's too) and Adam/AdamW, with coupled or decoupled weight decay on the masked parameters.
// Shared by the optimizer kernels (optim.cu), which update the whole flat vector, and the fused training step
// (mlp_step.cu), which updates each weight where its gradient is computed.
#pragma once

#include <cmath>
#include <cstddef>

#include "cuda/kernels.h"

namespace nnstudio::cuda {

// The gradient with coupled L2 decay where the mask allows (cpu/optim.cpp's rule); g itself without decay.
__device__ __forceinline__ float decayedGradient(float g, float p, size_t i, const WeightDecay& decay) {
  return decay.rate != 0.0f && !decay.decoupled && (!decay.mask || decay.mask[i]) ? g + decay.rate * p : g;
}

// Decoupled decay (AdamW, SGDW): p * (1 - lr * rate) where the mask allows, before the update.
__device__ __forceinline__ float shrunk(float p, size_t i, float lr, const WeightDecay& decay) {
  return decay.rate != 0.0f && decay.decoupled && (!decay.mask || decay.mask[i]) ? p * (1.0f - lr * decay.rate) : p;
}

// SGD: parameter i's new value from its old value and gradient g; `velocity` (its velocity, read only with
// momentum) moves. The state comes by reference so that a caller may load several first (their latencies overlap).
__device__ __forceinline__ float sgdUpdate(float old, float g, size_t i, float lr, float momentum, bool nesterov,
                                           const WeightDecay& decay, float& velocity) {
  g = decayedGradient(g, old, i, decay);
  const float p = shrunk(old, i, lr, decay);
  if (momentum == 0.0f) return p - lr * g;
  const float v = momentum * velocity + g;
  velocity = v;
  return p - lr * (nesterov ? g + momentum * v : v);
}

// Adam's bias corrections for step t (1-based), in double as the CPU's.
struct AdamCorrections {
  float stepSize;   // lr / (1 - beta1^t)
  float bias2Sqrt;  // sqrt(1 - beta2^t)
};
__device__ __forceinline__ AdamCorrections adamCorrections(float lr, float beta1, float beta2, long long t) {
  return {float(double(lr) / (1.0 - pow(double(beta1), double(t)))), float(sqrt(1.0 - pow(double(beta2), double(t))))};
}

// Adam: parameter i's new value; its moments m and v move.
__device__ __forceinline__ float adamUpdate(float old, float g, size_t i, float lr, const AdamCorrections& c, float beta1,
                                            float beta2, float eps, const WeightDecay& decay, float& m, float& v) {
  g = decayedGradient(g, old, i, decay);
  const float p = shrunk(old, i, lr, decay);
  const float mi = beta1 * m + (1.0f - beta1) * g;
  const float vi = beta2 * v + (1.0f - beta2) * g * g;
  m = mi;
  v = vi;
  return p - c.stepSize * mi / (sqrtf(vi) / c.bias2Sqrt + eps);
}

}  // namespace nnstudio::cuda
