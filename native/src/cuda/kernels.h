// The CUDA backend's kernels: one file per layer (gemm.cu, dense.cu, dense_head.cu, conv2d.cu, pool.cu, activation.cu,
// batchnorm.cu, dropout.cu, loss.cu, optim.cu, data.cu), forward and backward side by side. Each launcher only
// enqueues work on `stream` (no synchronisation, no allocation), so a whole training step can be
// captured in one CUDA graph. Pointers are device memory; shapes and layouts are those of
// cpu/layers.h, whose functions are the reference every kernel is tested against
// (tests/test_cuda_ops.cpp, the op table). Backward launchers overwrite, never accumulate into, their outputs.
//
// Fusions: layers take their activation (bias + activation in the producing kernel's epilogue), and
// the input-gradient launchers take the activation that produced their input (`inAct`), so that they
// write dLoss/d(pre-activation of the layer before) directly: the elementwise activation backward of
// that layer costs no pass of its own. inAct must be elementwise and known from the output (not Softmax,
// not GELU); Linear means none.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cpu/layers.h"  // ConvGeometry, PoolGeometry
#include "cuda/step_state.h"
#include "nnstudio/engine.h"
#include "spec/lr_schedule.h"

namespace nnstudio::cuda {

using cpu::ConvGeometry;
using cpu::PoolGeometry;

// ---- gemm.cu: row-major SGEMM, FP32 accumulate ----
// C (M, N) = op(A) . op(B), op(A) (M, K), op(B) (K, N). A is stored (M, K) when !transA, else (K, M);
// B is stored (K, N) when !transB, else (N, K). Epilogue, in this order: + bias[n] (when bias),
// y = act(y), y *= act'(gate[m, n]) for the derivative gate (when gate: dLoss/d(pre-activation) from
// the activation's output `gate`, which has C's shape). Pass act = Linear when not wanted.
struct GemmEpilogue {
  const float* bias = nullptr;      // (N)
  ActivationFn act = ActivationFn::Linear;
  float alpha = 0.01f;
  const float* gate = nullptr;      // (M, N)
  ActivationFn gateAct = ActivationFn::Linear;
  float gateAlpha = 0.01f;
};
void gemm(cudaStream_t stream, bool transA, bool transB, int M, int N, int K, const float* A, const float* B, float* C,
          const GemmEpilogue& epilogue = GemmEpilogue());

// ---- dense.cu ----
// out = act(in . weight^T + bias)
void dense_forward(cudaStream_t stream,
                   float* out,           // (N, units)
                   const float* in,      // (N, inputs)
                   const float* weight,  // (units, inputs)
                   const float* bias,    // (units)
                   int N, int inputs, int units, ActivationFn act, float alpha);
// dOut is dLoss/d(pre-activation) (N, units).
// Bias gradient = column sums of dOut. `workspace` holds dense_weights_workspace(N, units) floats.
size_t dense_weights_workspace(int N, int units);
void dense_backward_weights(cudaStream_t stream,
                            float* dWeight,       // (units, inputs)
                            float* dBias,         // (units)
                            const float* dOut,    // (N, units)
                            const float* in,      // (N, inputs)
                            int N, int inputs, int units, float* workspace);
// dIn = (dOut . weight) * inAct'(in): see the fusion note above.
void dense_backward_input(cudaStream_t stream,
                          float* dIn,           // (N, inputs)
                          const float* dOut,    // (N, units)
                          const float* weight,  // (units, inputs)
                          const float* in,      // (N, inputs): the layer's input, read only when inAct != Linear
                          int N, int inputs, int units, ActivationFn inAct, float inAlpha);

// ---- dense_head.cu: a small last dense layer, its loss and its backward in one launch (training) ----
// out = act(in . weight^T + bias) (act elementwise; Linear for logits), then the loss of out against
// labels as loss_forward_backward (StepState totals and divergence flag included; out is written too),
// dz = dLoss/dout * act'(out), and the backward: dWeight = dz^T . in, dBias = column sums of dz, and
// dIn = (dz . weight) * inAct'(in) when dIn is not null. One block, or a cluster of `blocks` blocks that
// split the rows (0: chosen for the shape), with everything in shared memory; deterministic. smoothing:
// softmax cross-entropy's label smoothing (as loss_forward_backward's LossConfig).
// dense_head_supported says whether a shape fits (units <= 32, shared memory).
bool dense_head_supported(int N, int inputs, int units);
void dense_head_fused(cudaStream_t stream, LossKind loss,
                      float* out,             // (N, units)
                      float* dWeight,         // (units, inputs)
                      float* dBias,           // (units)
                      float* dIn,             // (N, inputs) or null
                      const float* in,        // (N, inputs)
                      const float* weight,    // (units, inputs)
                      const float* bias,      // (units)
                      const int32_t* labels,  // (N)
                      int N, int inputs, int units, ActivationFn act, float alpha, ActivationFn inAct, float inAlpha,
                      StepState* state, int blocks = 0, float smoothing = 0.0f);

// ---- conv2d.cu ----
// out = act(conv(in, weight) + bias), any stride and padding (g.padTop/padLeft are the leading pads).
void conv2d_forward(cudaStream_t stream,
                    float* out,           // (N, F, OH, OW)
                    const float* in,      // (N, C, H, W)
                    const float* weight,  // (F, C, kh, kw)
                    const float* bias,    // (F)
                    int N, const ConvGeometry& g, ActivationFn act, float alpha,
                    Precision precision = Precision::Fp32);
// dOut is dLoss/d(pre-activation) (N, F, OH, OW). Deterministic (no atomics): partial sums go to
// `workspace`, conv2d_weights_workspace(N, g) floats (enough for any batch up to N), then one reduction
// (the split is the chooser's; tests force one with KernelOverrides::convWgradSplits, for both calls).
size_t conv2d_weights_workspace(int N, const ConvGeometry& g, Precision precision = Precision::Fp32);
void conv2d_backward_weights(cudaStream_t stream,
                             float* dWeight,       // (F, C, kh, kw)
                             float* dBias,         // (F)
                             const float* dOut,    // (N, F, OH, OW)
                             const float* in,      // (N, C, H, W)
                             int N, const ConvGeometry& g, float* workspace,
                             Precision precision = Precision::Fp32);
// dIn = conv_transpose(dOut, weight) * inAct'(in)
void conv2d_backward_input(cudaStream_t stream,
                           float* dIn,           // (N, C, H, W)
                           const float* dOut,    // (N, F, OH, OW)
                           const float* weight,  // (F, C, kh, kw)
                           const float* in,      // (N, C, H, W), read only when inAct != Linear
                           int N, const ConvGeometry& g, ActivationFn inAct, float inAlpha,
                           Precision precision = Precision::Fp32);

// ---- pool.cu ----
// argmax holds, per output, the index of the max within the sample's (C, H, W) input (as the CPU).
void maxpool_forward(cudaStream_t stream, float* out, int32_t* argmax, const float* in, int N, const PoolGeometry& g);
// dIn (N, C, H, W) overwritten, overlapping windows summed; then * inAct'(in) (the fusion note).
void maxpool_backward(cudaStream_t stream, float* dIn, const float* dOut, const int32_t* argmax, const float* in, int N,
                      const PoolGeometry& g, ActivationFn inAct, float inAlpha);
// The same when the pool's input (a conv's activated output, fused away: conv2d_pool.h) was never stored:
// the gate act'(.) is read from the pool's output, which equals the input at the argmax.
void maxpool_backward_from_output(cudaStream_t stream, float* dIn, const float* dOut, const int32_t* argmax,
                                  const float* pooled, int N, const PoolGeometry& g, ActivationFn act, float alpha);
void avgpool_forward(cudaStream_t stream, float* out, const float* in, int N, const PoolGeometry& g);
void avgpool_backward(cudaStream_t stream, float* dIn, const float* dOut, const float* in, int N, const PoolGeometry& g,
                      ActivationFn inAct, float inAlpha);

// ---- activation.cu ----
// y = f(x), y may alias x; softmax along rows of `width`.
void activation_forward(cudaStream_t stream, float* y, const float* x, int64_t rows, int64_t width, ActivationFn fn,
                        float alpha);
// dx = dy * f'(from y); dx may alias dy. Softmax uses the row's full Jacobian.
void activation_backward(cudaStream_t stream, float* dx, const float* dy, const float* y, int64_t rows, int64_t width,
                         ActivationFn fn, float alpha);

// GELU's derivative needs its input: dx = dy * gelu'(x) (dx may alias dy).
void gelu_backward(cudaStream_t stream, float* dx, const float* dy, const float* x, int64_t n);

// ---- batchnorm.cu: as cpu/layers.h (x (N, C, S); gamma, beta device pointers or null) ----
// The statistics reduce in slices fixed by the largest batch maxN (so graphs and workspaces agree):
// `workspace` holds batchnorm_workspace(maxN, C, S) floats; saved (2C) gets the mean and inverse std.
using BatchNormArgs = cpu::BatchNormArgs;
using cpu::batchNormArgs;
// An elementwise activation (not GELU, not softmax) that follows the batchnorm, fused into its kernels:
// the forward writes f(normalised); the backward reads the gradient at f's output and f's output `y`.
// A max pool (stride == size) after that activation, fused too: the forward writes the pool's output and
// argmax (not y); the backward reads the pool's output gradient (not dy, nor the activation's output).
struct BatchNormPool {
  PoolGeometry geometry;
  float* pooled = nullptr;         // (N, C, OH, OW): the forward writes it, the backward reads it
  int32_t* argmax = nullptr;       // as maxpool_forward writes it
  const float* dPooled = nullptr;  // backward: the gradient at the pool's output
};
// A one-channel 3x3 stride-1 convolution before the batchnorm (a grayscale stem) whose input gradient
// nobody needs: the batchnorm's backward computes the conv's weight and bias gradients from its dx as it
// goes, and writes no dx (batchnormConvWgradFits says where; one launch and two passes over dx fewer).
struct BatchNormConvWgrad {
  const float* image = nullptr;  // (N, 1, H, W): the conv's input
  float* dWeight = nullptr;      // (C, 1, 3, 3), overwritten
  float* dBias = nullptr;        // (C), overwritten
  int H = 0, W = 0, OW = 0, padTop = 0, padLeft = 0;  // OW: the conv's output width (a multiple of 4)
};
struct BatchNormActivation {
  ActivationFn fn = ActivationFn::Linear;
  float alpha = 0;
  const float* y = nullptr;  // backward only: the activation's output
  const BatchNormPool* pool = nullptr;
  const BatchNormConvWgrad* convWgrad = nullptr;  // backward only (then dx is null)
};
// Does the backward of the batchnorm after conv g take its weight gradient (chooseBatchnormConvWgrad)?
bool batchnormConvWgradFits(const ConvGeometry& g, int maxN);
size_t batchnorm_workspace(int maxN, int C, int S);
// runMean/runVar (device) move toward the batch's statistics when not null.
void batchnorm_forward_train(cudaStream_t stream, float* y, const float* x, float* saved, float* runMean, float* runVar,
                             const BatchNormArgs& a, int maxN, float* workspace, const BatchNormActivation& act = {});
void batchnorm_forward_eval(cudaStream_t stream, float* y, const float* x, float* saved, const float* runMean,
                            const float* runVar, const BatchNormArgs& a, const BatchNormActivation& act = {});
// dGamma, dBeta (written when not null), dx (when not null); training: through the batch statistics.
void batchnorm_backward(cudaStream_t stream, float* dx, float* dGamma, float* dBeta, const float* dy, const float* x,
                        const float* saved, const BatchNormArgs& a, bool training, int maxN, float* workspace,
                        const BatchNormActivation& act = {});
// ---- global average pool: (N, C, S) -> (N, C) ----
void global_avgpool_forward(cudaStream_t stream, float* out, const float* in, int N, int C, int S);
void global_avgpool_backward(cudaStream_t stream, float* dIn, const float* dOut, int N, int C, int S);

// ---- residual.cu ----
// y = f(a + b) over n floats (y may alias a or b); f elementwise (not GELU, not softmax) or the identity.
void residual_add(cudaStream_t stream, float* y, const float* a, const float* b, int64_t n,
                  ActivationFn fn = ActivationFn::Linear, float alpha = 0.0f);
// The backward of the f that residual_add applied, from its output y: g = f'(y) dy, written to first
// and to second (each when not null): the block's layers and its shortcut both take it.
void residual_activation_backward(cudaStream_t stream, float* first, float* second, const float* dy, const float* y,
                                  int64_t n, ActivationFn fn, float alpha);

// ---- dropout.cu ----
// Inverted dropout with the CPU's masks bit for bit: sample n of the batch draws from
// Rng(mixSeed(mixSeed(mixSeed(runSeed, globalStep, 0xD0), layerIndex), n, 0xD50F)), where globalStep is
// read from `state` (the steps done before this one) so the launch can be replayed from a graph.
void dropout_forward(cudaStream_t stream, float* out, float* mask, const float* in, int N, int64_t width, float rate,
                     uint64_t runSeed, uint64_t layerIndex, const StepState* state);
void dropout_backward(cudaStream_t stream, float* dIn, const float* dOut, const float* mask, int N, int64_t width);

// ---- loss.cu ----
// The loss as the plan sets it: kind, huber's delta, and whether the targets are a regression's floats.
struct LossConfig {
  LossKind kind = LossKind::SoftmaxCrossEntropy;
  float huberDelta = 1.0f;
  bool regression = false;
  float labelSmoothing = 0.0f;  // softmax cross-entropy: the target (1 - s) one-hot + s / K
};
// The spread softmax loss's per-block batch sums and last-block counter (device memory, zeroed once; the last
// block resets the counter). One per network: launches on it are serial.
struct LossPartials {
  static constexpr int kMaxBlocks = 64;
  double total[kMaxBlocks];
  long long right[kMaxBlocks];
  unsigned int blocksDone;
};
// Per-sample losses, dOutputs (when not null) as cpu::loss_forward_backward (labels, class weights or a
// regression's targets, device pointers in `targets`), then the batch mean loss into `state`: if it is not
// finite the first time, sets diverged/divergedAt; while not diverged, adds to the running totals (a
// regression's squared errors included). Predictions count into state->correct. One block; softmax
// cross-entropy of 2-32 classes without class weights is spread over many blocks where `partials` is given.
void loss_forward_backward(cudaStream_t stream, const LossConfig& config, const float* outputs,
                           const LossTargets& targets, int N, int K, float* dOutputs, StepState* state,
                           LossPartials* partials = nullptr);
// Predicted class (N) and probabilities (N, classes) (classes = 2 when K == 1), as cpu::loss_predict;
// either output may be null (a regression writes neither). With labels (or a regression's targets), also
// accumulates into `state` the loss (weighted by class with class weights), the weights' sum and correct
// and, when `confusion` is given, counts (label, prediction) pairs into confusion (classes, classes) (int64).
void loss_predict(cudaStream_t stream, const LossConfig& config, const float* outputs, const LossTargets& targets,
                  int N, int K, int32_t* predictions, float* probabilities, StepState* state,
                  unsigned long long* confusion);
// Classification without class weights (tests, benches).
void loss_forward_backward(cudaStream_t stream, LossKind loss, const float* outputs, const int32_t* labels, int N,
                           int K, float* dOutputs, StepState* state);
void loss_predict(cudaStream_t stream, LossKind loss, const float* outputs, const int32_t* labels, int N, int K,
                  int32_t* predictions, float* probabilities, StepState* state, unsigned long long* confusion);

// ---- data.cu ----
// Where a step's batch comes from: the resident dataset and this epoch's order; and where it goes.
struct BatchGather {
  const float* features = nullptr;    // (count, featureSize)
  const int32_t* labels = nullptr;    // (count); null: none (a regression's)
  const uint32_t* order = nullptr;    // (count): the epoch's permutation
  float* batchFeatures = nullptr;     // (batch, featureSize)
  int32_t* batchLabels = nullptr;     // (batch); null with labels
  int64_t featureSize = 0, count = 0;
  int batch = 0;
  const float* targets = nullptr;     // regression: (count, targetWidth)
  float* batchTargets = nullptr;      // (batch, targetWidth)
  int targetWidth = 0;                // 0: no targets
};
// The batch of this step: rows order[state->epochStep * batch + i], i < n.
void gather_batch(cudaStream_t stream, float* batchFeatures, int32_t* batchLabels, const float* features,
                  const int32_t* labels, const uint32_t* order, int64_t featureSize, int n, int batch,
                  const StepState* state);
// The same with every buffer of `g` (a regression's targets included).
void gather_batch(cudaStream_t stream, const BatchGather& g, int n, const StepState* state);

// ---- optim.cu: one kernel over the flat parameter vector ----
// Both skip the update when state->diverged (the weights then stay those of the diverging step's
// forward pass) and copy each parameter's old value to `backup` before updating it (so the weights of
// the last step whose loss was finite survive a divergence). The last block to finish increments
// state->globalStep and state->epochStep: this ends the step. With `next`, the kernel also gathers the
// next step's batch of the epoch (nothing after the epoch's last step), which saves the step a launch:
// the epoch's first batch then comes from gather_batch.
// The learning rate is computed on the device for each step: stepLearningRate(schedule, state->baseLr,
// state->globalStep) (spec/lr_schedule.h), so a graph captured once follows the schedule and picks up a
// base LR the host writes into the state between launches.
// Loss scaling (loss_scale.h): both divide each gradient by 2^state->lossScaleLog2 (1 without scaling) and
// skip the update when state->gradsOverflow; where state->lossScaling, the last block then advances the
// scale. Adam's t leaves the skipped steps out.
// Weight decay as cpu::WeightDecay (rate, and the mask as a device pointer: 1 = decays).
using WeightDecay = cpu::WeightDecay;
void sgd_step(cudaStream_t stream, float* params, const float* grads, float* velocity, float* backup, size_t n,
              const LrPlan& schedule, float momentum, StepState* state, const BatchGather* next = nullptr,
              const WeightDecay& decay = {}, bool nesterov = false);
// Adam (AdamW with a decoupled decay) with t = state->globalStep - state->skippedSteps + 1 (bias corrections
// computed on the device).
void adam_step(cudaStream_t stream, float* params, const float* grads, float* m, float* v, float* backup, size_t n,
               const LrPlan& schedule, float beta1, float beta2, float eps, StepState* state,
               const BatchGather* next = nullptr, const WeightDecay& decay = {});
// A constant learning rate `lr` (for tests).
void sgd_step(cudaStream_t stream, float* params, const float* grads, float* velocity, float* backup, size_t n,
              float lr, float momentum, StepState* state, const BatchGather* next = nullptr,
              const WeightDecay& decay = {}, bool nesterov = false);
void adam_step(cudaStream_t stream, float* params, const float* grads, float* m, float* v, float* backup, size_t n,
               float lr, float beta1, float beta2, float eps, StepState* state, const BatchGather* next = nullptr,
               const WeightDecay& decay = {});
// A loss-scaled run's check between the backward pass and the optimizer: sets state->gradsOverflow when one
// of the n gradients is infinite or NaN (the optimizer then skips the step and halves the scale).
void check_gradients_finite(cudaStream_t stream, const float* grads, size_t n, StepState* state);
// The weight average after a step: average = decay * average + (1 - decay) * params (skipped once diverged).
void ema_update(cudaStream_t stream, float* average, const float* params, size_t n, float decay,
                const StepState* state);

// ---- augment.cu ----
// out (n, C, H, W) = the batch `in` (n, C, H, W) augmented as global step state->globalStep of the run
// seeded `seed` draws it (spec/augment.h): the CPU's batch, pixel for pixel up to float rounding.
void augment_batch(cudaStream_t stream, float* out, const float* in, int n, int C, int H, int W,
                   const Augmentation& augment, uint64_t seed, const StepState* state);

}  // namespace nnstudio::cuda
