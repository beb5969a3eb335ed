// The CPU backend's layers: one file per layer (dense.cpp, conv2d.cpp, pool.cpp, activation.cpp,
// dropout.cpp, batchnorm.cpp, loss.cpp, optim.cpp), forward and backward side by side. Internal API, also used by the
// C++ tests. Tensors are row-major; shapes are given beside each pointer. "N" is the batch.
// Backward functions overwrite (never accumulate into) their outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/thread_pool.h"
#include "nnstudio/engine.h"
#include "spec/model.h"

namespace nnstudio::cpu {

// ---- activation (activation.cpp) ----
// y = f(x); y may alias x. Softmax works along rows of `width`; the others elementwise.
void activation_forward(float* y, const float* x, int64_t rows, int64_t width, ActivationFn fn, float alpha);
// dx = dy * f'(x), computed from the outputs y (every f but GELU allows that: gelu_backward); dx may alias dy.
void activation_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t width, ActivationFn fn,
                         float alpha);

// GELU's derivative needs its input: dx = dy * gelu'(x); dx may alias dy.
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n);

// ---- batchnorm (batchnorm.cpp) ----
// Over channels: x (N, C, S) with S = H*W for an image, S = 1 for a flat input (C features). gamma and
// beta (C) or null (not affine: 1 and 0). Accumulates in double.
struct BatchNormArgs {
  int N = 0, C = 0, S = 1;
  float eps = 1e-5f, momentum = 0.1f;
  const float* gamma = nullptr;  // (C) or null
  const float* beta = nullptr;   // (C) or null
};
// A batchnorm layer's arguments for a batch of n, its gamma and beta read from `params` (both backends).
inline BatchNormArgs batchNormArgs(const LayerPlan& lp, const float* params, int n) {
  BatchNormArgs a;
  a.N = n;
  a.C = lp.inC;
  a.S = lp.spatial;
  a.eps = lp.eps;
  a.momentum = lp.momentum;
  if (lp.affine) {
    a.gamma = params + lp.weightOffset;
    a.beta = params + lp.biasOffset;
  }
  return a;
}
// Training: normalises with the batch's mean and biased variance, keeps mean and 1/sqrt(var + eps) in
// saved (2C: mean then inverse std) for backward, and when runMean/runVar are given updates them:
// running = (1 - momentum) running + momentum batch, the variance unbiased (times M/(M-1), M = N*S; as
// is for M == 1), as PyTorch.
void batchnorm_forward_train(ThreadPool& pool, float* y, const float* x, float* saved, float* runMean, float* runVar,
                             const BatchNormArgs& a);
// Evaluation: normalises with the running statistics; saved gets them (mean, inverse std) for backward.
void batchnorm_forward_eval(ThreadPool& pool, float* y, const float* x, float* saved, const float* runMean,
                            const float* runVar, const BatchNormArgs& a);
// dGamma, dBeta (C, written when not null), dx (N, C, S; when not null). training: through the batch
// statistics (they depend on x); else the statistics are constants (an affine map per channel).
void batchnorm_backward(ThreadPool& pool, float* dx, float* dGamma, float* dBeta, const float* dy, const float* x,
                        const float* saved, const BatchNormArgs& a, bool training);

// ---- global average pool (pool.cpp): (N, C, S) -> (N, C) ----
void global_avgpool_forward(ThreadPool& pool, float* out, const float* in, int N, int C, int S);
void global_avgpool_backward(ThreadPool& pool, float* dIn, const float* dOut, int N, int C, int S);

// ---- dense (dense.cpp) ----
void dense_forward(ThreadPool& pool,
                   float* out,           // (N, units)
                   const float* in,      // (N, inputs)
                   const float* weight,  // (units, inputs)
                   const float* bias,    // (units)
                   int N, int inputs, int units);
void dense_backward_weights(ThreadPool& pool,
                            float* dWeight,       // (units, inputs)
                            float* dBias,         // (units)
                            const float* dOut,    // (N, units)
                            const float* in,      // (N, inputs)
                            int N, int inputs, int units);
void dense_backward_input(ThreadPool& pool,
                          float* dIn,           // (N, inputs)
                          const float* dOut,    // (N, units)
                          const float* weight,  // (units, inputs)
                          int N, int inputs, int units);

// ---- pools (pool.cpp), geometry ----
struct PoolGeometry {
  int C = 0, H = 0, W = 0, OH = 0, OW = 0, size = 0, stride = 0;
};

// ---- conv2d (conv2d.cpp) ----
struct ConvGeometry {
  int C = 0, H = 0, W = 0;        // input
  int F = 0, OH = 0, OW = 0;      // output
  int kh = 0, kw = 0, stride = 1, padTop = 0, padLeft = 0;
  int64_t colRows() const { return int64_t(C) * kh * kw; }
  int64_t colCols() const { return int64_t(OH) * OW; }
};

// Stride 1 runs as GEMMs on shifted views: on an input padded to (Hp, Wp) = (OH+kh-1, OW+kw-1), tap
// (c, ky, kx) of every output pixel (oy, ox) is padded[c][oy+ky][ox+kx], i.e. the image read from offset
// c*Hp*Wp + ky*Wp + kx at position q = oy*Wp + ox. So out (F, q) = W (F, K) . B (K, q) with B's rows
// at those offsets: no im2col copy. Positions with ox >= OW are computed and dropped; q runs over
// (OH-1)*Wp + OW so no read leaves the (padded) image.
struct ShiftPlan {
  int Hp = 0, Wp = 0;
  int64_t N = 0;                 // GEMM columns (OH-1)*Wp + OW
  bool padded = false;           // the input needs a zero-padded copy
  int padTop = 0, padLeft = 0;
  std::vector<int64_t> offsets;  // (C*kh*kw) row offsets
  void init(int C, int H, int W, int OH, int OW, int kh, int kw, int padTop, int padLeft);
};

// Per-thread / per-chunk scratch, sized once for a geometry.
struct ConvScratch {
  ShiftPlan forward;                       // stride 1: the input -> the output
  ShiftPlan backward;                      // stride 1: dOut -> dIn (flipped weights, complementary pads)
  std::vector<std::vector<float>> work;    // per thread: padded input, wide output, padded dOut, wide dIn
  std::vector<std::vector<float>> dWeight; // per chunk (F, C*kh*kw) + (F) bias
  std::vector<float> flipped;              // (C, F, kh, kw) the weights turned 180 degrees, for dIn
  void reserve(const ConvGeometry& g, int threads, bool inputGradient);
};

void im2col(float* col, const float* in, const ConvGeometry& g);      // col (C*kh*kw, OH*OW), in (C, H, W)
void col2im(float* dIn, const float* dCol, const ConvGeometry& g);    // dIn (C, H, W) overwritten

// A pool layer right after a conv, run per sample inside the conv's loop while the sample's conv output
// is still in cache (forward: pool after activation; backward: pool's backward before the conv's).
struct FusedPool {
  LayerKind kind = LayerKind::MaxPool2D;  // MaxPool2D or AvgPool2D
  PoolGeometry geometry;
  float* out = nullptr;        // (N, C, PH, PW) the pool's output
  int32_t* argmax = nullptr;   // (N, C, PH, PW) max pool only
  const float* dOut = nullptr; // (N, C, PH, PW) backward: the gradient of the pool's output
};

// out = act(conv(in, weight) + bias), the activation fused per sample while it is in cache.
void conv2d_forward(ThreadPool& pool, ConvScratch& scratch,
                    float* out,           // (N, F, OH, OW)
                    const float* in,      // (N, C, H, W)
                    const float* weight,  // (F, C, kh, kw)
                    const float* bias,    // (F)
                    int N, const ConvGeometry& g, ActivationFn act, float alpha, const FusedPool* fused = nullptr);
// dOut (N, F, OH, OW) arrives as dLoss/d(output) (or is first produced from fused->dOut by the pool's
// backward) and is turned in place into dLoss/d(pre-activation) using `out`; then the weight, bias and
// (when dIn != nullptr) input gradients.
void conv2d_backward(ThreadPool& pool, ConvScratch& scratch,
                     float* dIn,           // (N, C, H, W) or nullptr
                     float* dWeight,       // (F, C, kh, kw)
                     float* dBias,         // (F)
                     float* dOut,          // (N, F, OH, OW), modified
                     const float* out,     // (N, F, OH, OW)
                     const float* in,      // (N, C, H, W)
                     const float* weight,  // (F, C, kh, kw)
                     int N, const ConvGeometry& g, ActivationFn act, float alpha, const FusedPool* fused = nullptr);

// ---- pools (pool.cpp) ----
// one sample: in (C, H, W) -> out, argmax (C, OH, OW); backward overwrites dIn (C, H, W)
void maxpool_forward_sample(float* out, int32_t* argmax, const float* in, const PoolGeometry& g);
void maxpool_backward_sample(float* dIn, const float* dOut, const int32_t* argmax, const PoolGeometry& g);
void avgpool_forward_sample(float* out, const float* in, const PoolGeometry& g);
void avgpool_backward_sample(float* dIn, const float* dOut, const PoolGeometry& g);

void maxpool_forward(ThreadPool& pool,
                     float* out,          // (N, C, OH, OW)
                     int32_t* argmax,     // (N, C, OH, OW) index into the sample's (C, H, W) input
                     const float* in,     // (N, C, H, W)
                     int N, const PoolGeometry& g);
void maxpool_backward(ThreadPool& pool,
                      float* dIn,            // (N, C, H, W)
                      const float* dOut,     // (N, C, OH, OW)
                      const int32_t* argmax, // (N, C, OH, OW)
                      int N, const PoolGeometry& g);
void avgpool_forward(ThreadPool& pool, float* out, const float* in, int N, const PoolGeometry& g);
void avgpool_backward(ThreadPool& pool, float* dIn, const float* dOut, int N, const PoolGeometry& g);

// ---- dropout (dropout.cpp) ----
// Inverted dropout: mask is 0 or 1/(1-rate), drawn per sample from (seed, first + sample index).
void dropout_forward(ThreadPool& pool, float* out, float* mask, const float* in, int N, int64_t width, float rate,
                     uint64_t seed);
void dropout_backward(ThreadPool& pool, float* dIn, const float* dOut, const float* mask, int N, int64_t width);

// ---- losses (loss.cpp) ----
// Mean loss over the batch (every element, as PyTorch's 'mean'; weighted by class with
// targets.classWeights) of the plan's loss; when dOutputs != nullptr writes dLoss/dOutputs (N, K) (for
// the cross-entropies: w.r.t. the logits). Adds right predictions, squared errors (regression) and the
// weights' sum to `counts` when given.
double loss_forward_backward(const NetworkPlan& plan,
                             const float* outputs,  // (N, K) the head's outputs (logits for cross-entropies)
                             const LossTargets& targets, int N, int K, float* dOutputs, LossCounts* counts);
// Classification without class weights (tests): `correct` += right predictions.
double loss_forward_backward(LossKind loss, const float* outputs, const int32_t* labels, int N, int K, float* dOutputs,
                             int64_t* correct);
// Predicted class and class probabilities (N, classes) (classes = 2 when K == 1).
void loss_predict(LossKind loss, const float* outputs, int N, int K, int32_t* predictions, float* probabilities);

// ---- optimizers (optim.cpp) ----
// Where mask[i] != 0 (every parameter without a mask); rate 0: none. Coupled L2: g += rate * p;
// decoupled (AdamW, SGDW): p *= 1 - lr * rate before the update.
struct WeightDecay {
  float rate = 0.0f;
  const uint8_t* mask = nullptr;  // (n)
  bool decoupled = false;
};
// PyTorch's SGD: v = momentum * v + g; p -= lr * v  (plain p -= lr * g when momentum == 0); with
// nesterov p -= lr * (g + momentum * v).
void sgd_step(ThreadPool* pool, float* params, const float* grads, float* velocity, size_t n, float lr, float momentum,
              const WeightDecay& decay = {}, bool nesterov = false);
// PyTorch's Adam: m, v moments; p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps); with a decoupled
// decay, torch.optim.AdamW.
void adam_step(ThreadPool* pool, float* params, const float* grads, float* m, float* v, size_t n, float lr, float beta1,
               float beta2, float eps, int64_t t, const WeightDecay& decay = {});
// ---- augmentation (augment.cpp) ----
// out (n, C, H, W) = the batch `in` (n, C, H, W) augmented as step `step` of the run seeded `seed` draws it.
void augment_batch(ThreadPool* pool, float* out, const float* in, int n, int C, int H, int W, const Augmentation& a,
                   uint64_t seed, int64_t step);

// The weight average: avg = decay * avg + (1 - decay) * p.
void ema_update(ThreadPool* pool, float* average, const float* params, size_t n, float decay);

}  // namespace nnstudio::cpu
