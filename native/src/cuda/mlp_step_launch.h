// The fused MLP step's launch (mlp_step.cu; the plan and its layout: mlp_step.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/kernels.h"
#include "cuda/mlp_step.h"
#include "cuda/step_state.h"
#include "spec/lr_schedule.h"

namespace nnstudio::cuda {

struct MlpStepArgs {
  // the resident training set and the epoch's order: step s of a launch reads rows
  // order[(epochStep + s) * batch + n], n < rows
  const float* features = nullptr;  // (count, inputs)
  const int32_t* labels = nullptr;  // (count)
  const uint32_t* order = nullptr;
  int batch = 0;
  int64_t inputs = 0;
  int hidden = 0, classes = 0;
  ActivationFn act = ActivationFn::ReLU;  // the hidden layer's
  float alpha = 0.0f;
  float smoothing = 0.0f;                 // label smoothing
  // the flat parameters (W1 (H, I), b1, W2 (K, H), b2 at their offsets), the divergence backup, the optimizer
  // state (m: SGD's velocity or Adam's first moment, v: Adam's second; indexed as the parameters)
  float* params = nullptr;
  float* backup = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  size_t w1 = 0, b1 = 0, w2 = 0, b2 = 0;
  StepState* state = nullptr;
  // the unit split's copies of three steps' batches, (3, NP, inputs): each block gathers its rows of the next
  // batch there, so every block then streams one contiguous array (the dataset's rows lie scattered over pages)
  float* staging = nullptr;
  LrPlan schedule;
  bool adam = false;  // else SGD
  float momentum = 0.0f;
  bool nesterov = false;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-7f;
  WeightDecay decay;  // the weights' (rate and kind; no mask: dense weights decay, biases never)
  Precision precision = Precision::Fp32;  // the products with the batch: 3xTF32 (Fp32) or 1xTF32 (Tf32, Mixed)
};

// The largest cluster (16, 8, 4 or 2 blocks) the current device co-schedules for this shape; 0: none (no
// clusters, no sm_90 code, too little shared memory). Also opts the kernel into the shared memory it needs.
int mlp_step_blocks(const MlpStepShape& shape);
// `steps` consecutive training steps of `rows` rows each (rows <= the layout's batch), as the layers' kernels,
// the loss and the optimizer would run them. Captured in the session's graphs.
void mlp_step_fused(cudaStream_t stream, const MlpStepArgs& args, const MlpStepLayout& layout, int rows, int steps);

// The unit split (mlp_step.h, MlpUnitLayout): its layout on the current device for the largest cluster (16, 8, 4 or
// 2 blocks) that fits and co-schedules (blocks = 0: none), and its launch, as mlp_step_fused.
MlpUnitLayout mlp_unit_step_layout(const MlpStepShape& shape);
void mlp_unit_step_fused(cudaStream_t stream, const MlpStepArgs& args, const MlpUnitLayout& layout, int rows, int steps);

}  // namespace nnstudio::cuda
