// Optimizers over the flat parameter vector, exactly as PyTorch's torch.optim.SGD (Nesterov included),
// Adam and AdamW (no dampening, no AMSGrad). Weight decay is PyTorch's coupled L2 (g + weightDecay * p), or
// decoupled (p *= 1 - lr * weightDecay first: AdamW, and SGDW for SGD), restricted to the parameters the
// decay mask marks (the weights; biases never decay).
#include <cmath>

#include "cpu/layers.h"

namespace nnstudio::cpu {

namespace {
// splits an elementwise update over the pool when it is large enough to pay for the region
template <class Fn>
void forChunks(ThreadPool* pool, size_t n, Fn&& fn) {
  if (!pool || pool->size() == 1 || n < 65536) { fn(size_t(0), n); return; }
  pool->parallelFor(int64_t(n), [&](int64_t a, int64_t b, int, int) { fn(size_t(a), size_t(b)); });
}

// The gradient the update uses with decay: g + weightDecay * p where the mask allows (everywhere without a
// mask), else g itself. Without decay the loops read g alone (not g + 0 * p: bits as before).
inline float decayed(const float* grads, const float* params, size_t i, const WeightDecay& decay) {
  return !decay.mask || decay.mask[i] ? grads[i] + decay.rate * params[i] : grads[i];
}

// Decoupled decay: shrinks the masked parameters by `factor` (1 - lr * rate), as AdamW's p.mul_(1 - lr * wd).
void shrink(float* params, size_t a, size_t b, float factor, const uint8_t* mask) {
  for (size_t i = a; i < b; ++i)
    if (!mask || mask[i]) params[i] *= factor;
}
}  // namespace

// ---- sgd ----

namespace {
// Decay is a template flag so the loop without it stays the plain (vectorised) one it always was.
template <bool Decay>
void sgdRange(float* params, const float* grads, float* velocity, size_t a, size_t b, float lr, float momentum,
              const WeightDecay& decay, bool nesterov) {
  if (momentum == 0.0f) {
    for (size_t i = a; i < b; ++i) params[i] -= lr * (Decay ? decayed(grads, params, i, decay) : grads[i]);
  } else if (!nesterov) {
    // PyTorch starts the buffer at the first gradient; from zeros, m * 0 + g gives the same
    for (size_t i = a; i < b; ++i) {
      velocity[i] = momentum * velocity[i] + (Decay ? decayed(grads, params, i, decay) : grads[i]);
      params[i] -= lr * velocity[i];
    }
  } else {
    // PyTorch's nesterov: g + momentum * buf, buf already updated
    for (size_t i = a; i < b; ++i) {
      const float g = Decay ? decayed(grads, params, i, decay) : grads[i];
      velocity[i] = momentum * velocity[i] + g;
      params[i] -= lr * (g + momentum * velocity[i]);
    }
  }
}

template <bool Decay>
void adamRange(float* params, const float* grads, float* m, float* v, size_t a, size_t b, float stepSize,
               float bias2Sqrt, float beta1, float beta2, float eps, const WeightDecay& decay) {
  const float oneMinusB1 = 1.0f - beta1, oneMinusB2 = 1.0f - beta2;
  for (size_t i = a; i < b; ++i) {
    const float g = Decay ? decayed(grads, params, i, decay) : grads[i];
    m[i] = beta1 * m[i] + oneMinusB1 * g;
    v[i] = beta2 * v[i] + oneMinusB2 * g * g;
    const float denom = std::sqrt(v[i]) / bias2Sqrt + eps;
    params[i] -= stepSize * m[i] / denom;
  }
}
}  // namespace

void sgd_step(ThreadPool* pool, float* params, const float* grads, float* velocity, size_t n, float lr,
              float momentum, const WeightDecay& decay, bool nesterov) {
  const bool coupled = decay.rate != 0.0f && !decay.decoupled;
  const bool decoupled = decay.rate != 0.0f && decay.decoupled;
  forChunks(pool, n, [&](size_t a, size_t b) {
    if (decoupled) shrink(params, a, b, 1.0f - lr * decay.rate, decay.mask);
    if (coupled) sgdRange<true>(params, grads, velocity, a, b, lr, momentum, decay, nesterov);
    else sgdRange<false>(params, grads, velocity, a, b, lr, momentum, decay, nesterov);
  });
}

// ---- adam ----

void adam_step(ThreadPool* pool, float* params, const float* grads, float* m, float* v, size_t n, float lr, float beta1,
               float beta2, float eps, int64_t t, const WeightDecay& decay) {
  const double bias1 = 1.0 - std::pow(double(beta1), double(t));
  const double bias2 = 1.0 - std::pow(double(beta2), double(t));
  const float stepSize = float(double(lr) / bias1);
  const float bias2Sqrt = float(std::sqrt(bias2));
  const bool coupled = decay.rate != 0.0f && !decay.decoupled;
  const bool decoupled = decay.rate != 0.0f && decay.decoupled;
  forChunks(pool, n, [&](size_t a, size_t b) {
    if (decoupled) shrink(params, a, b, 1.0f - lr * decay.rate, decay.mask);
    if (coupled) adamRange<true>(params, grads, m, v, a, b, stepSize, bias2Sqrt, beta1, beta2, eps, decay);
    else adamRange<false>(params, grads, m, v, a, b, stepSize, bias2Sqrt, beta1, beta2, eps, decay);
  });
}

// ---- weight average ----

void ema_update(ThreadPool* pool, float* average, const float* params, size_t n, float decay) {
  const float keep = decay, take = 1.0f - decay;
  forChunks(pool, n, [&](size_t a, size_t b) {
    for (size_t i = a; i < b; ++i) average[i] = keep * average[i] + take * params[i];
  });
}

}  // namespace nnstudio::cpu

namespace nnstudio {

void optimizerStepCpu(const OptimizerSpec& optimizer, std::vector<float>& parameters, const std::vector<float>& gradients,
                      std::vector<float>& state, int64_t t, const std::vector<uint8_t>* decayMask) {
  const size_t n = parameters.size();
  if (gradients.size() != n)
    throw EngineError("optimizer step: " + std::to_string(gradients.size()) + " gradients for " + std::to_string(n) +
                      " parameters");
  if (decayMask && decayMask->size() != n)
    throw EngineError("optimizer step: a decay mask of " + std::to_string(decayMask->size()) + " values for " +
                      std::to_string(n) + " parameters");
  const cpu::WeightDecay decay{optimizer.weightDecay, decayMask ? decayMask->data() : nullptr, optimizer.decoupled()};
  if (optimizer.kind == OptimizerKind::SGD) {
    if (state.size() != n) state.assign(n, 0.0f);
    cpu::sgd_step(nullptr, parameters.data(), gradients.data(), state.data(), n, optimizer.lr, optimizer.momentum,
                  decay, optimizer.nesterov);
  } else {
    if (t < 1) throw EngineError("optimizer step: Adam's step count t starts at 1");
    if (state.size() != 2 * n) state.assign(2 * n, 0.0f);
    cpu::adam_step(nullptr, parameters.data(), gradients.data(), state.data(), state.data() + n, n, optimizer.lr,
                   optimizer.beta1, optimizer.beta2, optimizer.eps, t, decay);
  }
}

}  // namespace nnstudio
