// Activations: forward y = f(x), backward dx = dy * f'(x) computed from y alone, so layers keep only
// their outputs; GELU is the exception (not invertible from y): gelu_backward reads its input. softmax
// works along each row.
#include <algorithm>
#include <cmath>

#include "cpu/layers.h"

namespace nnstudio::cpu {

namespace {

inline float sigmoid(float x) {
  // two branches so exp never overflows
  if (x >= 0) return 1.0f / (1.0f + std::exp(-x));
  float e = std::exp(x);
  return e / (1.0f + e);
}

inline float softplus(float x) {
  // PyTorch's threshold: x above 20 is returned as is
  return x > 20.0f ? x : std::log1p(std::exp(x));
}

// GELU, the exact form: x * Phi(x), Phi the standard normal CDF (PyTorch's approximate='none')
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
inline float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2)); }
// d/dx x Phi(x) = Phi(x) + x phi(x)
inline float geluSlope(float x) {
  return 0.5f * (1.0f + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
}

}  // namespace

// ---- forward ----

void activation_forward(float* y, const float* x, int64_t rows, int64_t width, ActivationFn fn, float alpha) {
  const int64_t n = rows * width;
  switch (fn) {
    case ActivationFn::Linear:
      if (y != x) std::copy(x, x + n, y);
      break;
    case ActivationFn::ReLU:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      break;
    case ActivationFn::LeakyReLU:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : alpha * x[i];
      break;
    case ActivationFn::Sigmoid:
      for (int64_t i = 0; i < n; ++i) y[i] = sigmoid(x[i]);
      break;
    case ActivationFn::Tanh:
      for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      break;
    case ActivationFn::Softplus:
      for (int64_t i = 0; i < n; ++i) y[i] = softplus(x[i]);
      break;
    case ActivationFn::GELU:
      for (int64_t i = 0; i < n; ++i) y[i] = gelu(x[i]);
      break;
    case ActivationFn::Softmax:
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * width;
        float* yr = y + r * width;
        float m = xr[0];
        for (int64_t j = 1; j < width; ++j) m = std::max(m, xr[j]);
        double sum = 0;
        for (int64_t j = 0; j < width; ++j) {
          yr[j] = std::exp(xr[j] - m);
          sum += yr[j];
        }
        const float inv = float(1.0 / sum);
        for (int64_t j = 0; j < width; ++j) yr[j] *= inv;
      }
      break;
  }
}

// ---- backward ----

void activation_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t width, ActivationFn fn,
                         float alpha) {
  const int64_t n = rows * width;
  switch (fn) {
    case ActivationFn::Linear:
      if (dx != dy) std::copy(dy, dy + n, dx);
      break;
    case ActivationFn::ReLU:
      for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
      break;
    case ActivationFn::LeakyReLU:
      // alpha >= 0, so y > 0 exactly when x > 0
      for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : alpha * dy[i];
      break;
    case ActivationFn::Sigmoid:
      for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
      break;
    case ActivationFn::Tanh:
      for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
      break;
    case ActivationFn::Softplus:
      // softplus'(x) = sigmoid(x) = 1 - exp(-y)
      for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * -std::expm1(-y[i]);
      break;
    case ActivationFn::GELU:
      // the networks call gelu_backward with the input instead; reaching this is a bug
      throw EngineError("internal error: gelu's backward needs its input (gelu_backward)");
    case ActivationFn::Softmax:
      // dx = y * (dy - <dy, y>)
      for (int64_t r = 0; r < rows; ++r) {
        const float* yr = y + r * width;
        const float* dyr = dy + r * width;
        float* dxr = dx + r * width;
        double dot = 0;
        for (int64_t j = 0; j < width; ++j) dot += double(dyr[j]) * yr[j];
        for (int64_t j = 0; j < width; ++j) dxr[j] = yr[j] * (dyr[j] - float(dot));
      }
      break;
  }
}

void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * geluSlope(x[i]);
}

}  // namespace nnstudio::cpu
