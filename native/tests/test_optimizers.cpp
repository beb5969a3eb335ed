// Optimizer steps through optimizerStepCpu against numbers worked out by hand (PyTorch's update rules:
// torch.optim.SGD with momentum, dampening 0; torch.optim.Adam with bias correction, eps added to
// sqrt(v_hat)). Tolerances are float32 rounding: 1e-6 on values of order 1.
#include <cmath>
#include <cstdio>
#include <vector>

#include "nnstudio/engine.h"
#include "test_util.h"

using namespace nnstudio;

int main() {
  // ---- SGD ----
  std::printf("sgd\n");
  {
    // lr 0.1, no momentum: p -= lr * g
    //   p = [1, -2], g = [0.5, -1]  ->  [1 - 0.05, -2 + 0.1] = [0.95, -1.9]
    OptimizerSpec sgd;
    sgd.kind = OptimizerKind::SGD;
    sgd.lr = 0.1f;
    sgd.momentum = 0.0f;
    std::vector<float> p = {1.0f, -2.0f}, state;
    optimizerStepCpu(sgd, p, {0.5f, -1.0f}, state, 1);
    CHECK_NEAR(p[0], 0.95, 1e-6);
    CHECK_NEAR(p[1], -1.9, 1e-6);
    CHECK_MSG(state.size() == 2, "sgd state holds one velocity per parameter");
  }
  {
    // lr 0.1, momentum 0.9, p = [1, -2]
    // step 1, g = [0.5, -1]:   v = g = [0.5, -1];               p = [1 - 0.05, -2 + 0.1]     = [0.95, -1.9]
    // step 2, g = [0.25, 0.5]: v = 0.9 v + g = [0.7, -0.4];     p = [0.95 - 0.07, -1.9 + 0.04] = [0.88, -1.86]
    // step 3, g = [0, 0]:      v = 0.9 v = [0.63, -0.36];       p = [0.88 - 0.063, -1.86 + 0.036] = [0.817, -1.824]
    OptimizerSpec sgd;
    sgd.kind = OptimizerKind::SGD;
    sgd.lr = 0.1f;
    sgd.momentum = 0.9f;
    std::vector<float> p = {1.0f, -2.0f}, state;
    optimizerStepCpu(sgd, p, {0.5f, -1.0f}, state, 1);
    CHECK_NEAR(p[0], 0.95, 1e-6);
    CHECK_NEAR(p[1], -1.9, 1e-6);
    CHECK_NEAR(state[0], 0.5, 1e-7);
    optimizerStepCpu(sgd, p, {0.25f, 0.5f}, state, 2);
    CHECK_NEAR(state[0], 0.7, 1e-6);
    CHECK_NEAR(state[1], -0.4, 1e-6);
    CHECK_NEAR(p[0], 0.88, 1e-6);
    CHECK_NEAR(p[1], -1.86, 1e-6);
    optimizerStepCpu(sgd, p, {0.0f, 0.0f}, state, 3);
    CHECK_NEAR(p[0], 0.817, 1e-6);
    CHECK_NEAR(p[1], -1.824, 1e-6);
  }

  // ---- Adam ----
  std::printf("adam\n");
  {
    // lr 0.1, beta1 0.9, beta2 0.999, eps 1e-8, p = [1, -0.5, 2]
    // step 1, g = [0.2, -0.4, 0]:
    //   m = 0.1 g = [0.02, -0.04, 0]; v = 0.001 g^2 = [4e-5, 1.6e-4, 0]
    //   m_hat = m / 0.1 = g; v_hat = v / 0.001 = g^2; sqrt(v_hat) = |g|
    //   p -= 0.1 * g / (|g| + 1e-8) = 0.1 sign(g) (0 where g = 0)  ->  [0.9, -0.4, 2]
    // step 2, g = [0.1, 0.3, -1]:
    //   m = 0.9 m + 0.1 g = [0.028, -0.006, -0.1]
    //   v = 0.999 v + 0.001 g^2 = [4.996e-5, 2.4984e-4, 1e-3]
    //   1 - 0.9^2 = 0.19, 1 - 0.999^2 = 0.001999
    //   m_hat = [0.147368421, -0.0315789474, -0.526315789]
    //   sqrt(v_hat) = sqrt([0.0249924962, 0.124982491, 0.500250125]) = [0.158090152, 0.353528699, 0.707283624]
    //   step = 0.1 m_hat / sqrt(v_hat) = [0.0932179530, -0.00893249, -0.0744136813]
    //   p = [0.9 - 0.0932180, -0.4 + 0.0089325, 2 + 0.0744137] = [0.806782, -0.391068, 2.074414]
    OptimizerSpec adam;
    adam.kind = OptimizerKind::Adam;
    adam.lr = 0.1f;
    adam.beta1 = 0.9f;
    adam.beta2 = 0.999f;
    adam.eps = 1e-8f;
    std::vector<float> p = {1.0f, -0.5f, 2.0f}, state;
    optimizerStepCpu(adam, p, {0.2f, -0.4f, 0.0f}, state, 1);
    CHECK_MSG(state.size() == 6, "adam state holds m and v: 2 per parameter");
    CHECK_NEAR(state[0], 0.02, 1e-7);   // m
    CHECK_NEAR(state[4], 1.6e-4, 5e-9);  // v of the second parameter (1 - 0.999f is 0.00099998713 in float)
    CHECK_NEAR(p[0], 0.9, 1e-6);
    CHECK_NEAR(p[1], -0.4, 1e-6);
    CHECK_NEAR(p[2], 2.0, 1e-7);
    optimizerStepCpu(adam, p, {0.1f, 0.3f, -1.0f}, state, 2);
    CHECK_NEAR(state[2], -0.1, 1e-7);
    CHECK_NEAR(state[3], 4.996e-5, 2e-9);
    CHECK_NEAR(p[0], 0.806782, 2e-6);
    CHECK_NEAR(p[1], -0.391068, 2e-6);
    CHECK_NEAR(p[2], 2.074414, 2e-6);
  }
  {
    // the first Adam step of any betas moves by lr * g / (|g| + eps): with eps = 1e-7 and g = 1e-7 that
    // is lr * 1e-7 / 2e-7 = lr / 2, so eps enters outside the square root as PyTorch does
    //   beta1 0.95, beta2 0.99, lr 0.01, p = [0, 0], g = [1e-7, -3]  ->  [-0.005, 0.01 * 3 / (3 + 1e-7)] = [-0.005, 0.01]
    OptimizerSpec adam;
    adam.kind = OptimizerKind::Adam;
    adam.lr = 0.01f;
    adam.beta1 = 0.95f;
    adam.beta2 = 0.99f;
    adam.eps = 1e-7f;
    std::vector<float> p = {0.0f, 0.0f}, state;
    optimizerStepCpu(adam, p, {1e-7f, -3.0f}, state, 1);
    CHECK_NEAR(p[0], -0.005, 2e-7);
    CHECK_NEAR(p[1], 0.01, 1e-7);
    // t = 3 bias correction: after three equal gradients g, m_hat = g and v_hat = g^2 exactly, so every
    // step is lr * sign(g): p = 0.01 + 2 * 0.01 = 0.03 for the second parameter (g = -3)
    optimizerStepCpu(adam, p, {1e-7f, -3.0f}, state, 2);
    optimizerStepCpu(adam, p, {1e-7f, -3.0f}, state, 3);
    CHECK_NEAR(p[1], 0.03, 1e-6);
  }

  // ---- SGD with Nesterov momentum (torch.optim.SGD(nesterov=True)) ----
  std::printf("sgd nesterov\n");
  {
    // lr 0.1, momentum 0.9, p = [1, -2]; the step is g + 0.9 v with v already updated
    // step 1, g = [0.5, -1]:   v = [0.5, -1];   step = [0.95, -1.9];  p = [0.905, -1.81]
    // step 2, g = [0.25, 0.5]: v = [0.7, -0.4]; step = [0.88, 0.14];  p = [0.817, -1.824]
    OptimizerSpec sgd;
    sgd.kind = OptimizerKind::SGD;
    sgd.lr = 0.1f;
    sgd.momentum = 0.9f;
    sgd.nesterov = true;
    std::vector<float> p = {1.0f, -2.0f}, state;
    optimizerStepCpu(sgd, p, {0.5f, -1.0f}, state, 1);
    CHECK_NEAR(p[0], 0.905, 1e-6);
    CHECK_NEAR(p[1], -1.81, 1e-6);
    optimizerStepCpu(sgd, p, {0.25f, 0.5f}, state, 2);
    CHECK_NEAR(state[0], 0.7, 1e-6);
    CHECK_NEAR(p[0], 0.817, 1e-6);
    CHECK_NEAR(p[1], -1.824, 1e-6);
  }

  // ---- weight decay: coupled (PyTorch's SGD weight_decay) against decoupled (SGDW) ----
  std::printf("sgd weight decay\n");
  {
    // lr 0.1, momentum 0.9, weightDecay 0.5, p = [1, -2], g1 = [0.5, -1], g2 = [0.25, 0.5]
    // coupled:   g' = g + 0.5 p
    //   step 1: g' = [1, -2];     v = [1, -2];      p = [0.9, -1.8]
    //   step 2: g' = [0.7, -0.4]; v = [1.6, -2.2];  p = [0.74, -1.58]
    // decoupled: p *= 1 - 0.1 * 0.5 = 0.95, then the plain momentum step
    //   step 1: p = [0.95, -1.9];   v = [0.5, -1];   p = [0.9, -1.8]
    //   step 2: p = [0.855, -1.71]; v = [0.7, -0.4]; p = [0.785, -1.67]
    OptimizerSpec sgd;
    sgd.kind = OptimizerKind::SGD;
    sgd.lr = 0.1f;
    sgd.momentum = 0.9f;
    sgd.weightDecay = 0.5f;
    std::vector<float> p = {1.0f, -2.0f}, state;
    optimizerStepCpu(sgd, p, {0.5f, -1.0f}, state, 1);
    optimizerStepCpu(sgd, p, {0.25f, 0.5f}, state, 2);
    CHECK_NEAR(p[0], 0.74, 1e-6);
    CHECK_NEAR(p[1], -1.58, 1e-6);
    sgd.decoupledWeightDecay = true;
    p = {1.0f, -2.0f};
    state.clear();
    optimizerStepCpu(sgd, p, {0.5f, -1.0f}, state, 1);
    CHECK_NEAR(p[0], 0.9, 1e-6);
    optimizerStepCpu(sgd, p, {0.25f, 0.5f}, state, 2);
    CHECK_NEAR(state[1], -0.4, 1e-6);
    CHECK_NEAR(p[0], 0.785, 1e-6);
    CHECK_NEAR(p[1], -1.67, 1e-6);
    // the mask spares the second parameter (a bias): plain momentum SGD there, -2 + 0.1 + 0.04 = -1.86
    const std::vector<uint8_t> mask = {1, 0};
    p = {1.0f, -2.0f};
    state.clear();
    optimizerStepCpu(sgd, p, {0.5f, -1.0f}, state, 1, &mask);
    optimizerStepCpu(sgd, p, {0.25f, 0.5f}, state, 2, &mask);
    CHECK_NEAR(p[0], 0.785, 1e-6);
    CHECK_NEAR(p[1], -1.86, 1e-6);
  }

  // ---- AdamW (torch.optim.AdamW: p *= 1 - lr * wd, then Adam's step) ----
  std::printf("adamw\n");
  {
    // Adam's case above with weightDecay 0.5: the factor is 1 - 0.1 * 0.5 = 0.95 before each step
    //   step 1: p = 0.95 [1, -0.5, 2] = [0.95, -0.475, 1.9];  p -= 0.1 sign(g) -> [0.85, -0.375, 1.9]
    //   step 2: p = 0.95 p = [0.8075, -0.35625, 1.805];        p -= [0.0932179530, -0.00893249, -0.0744136813]
    //           -> [0.714282, -0.347318, 1.879414]
    OptimizerSpec adamw;
    adamw.kind = OptimizerKind::AdamW;
    adamw.lr = 0.1f;
    adamw.beta1 = 0.9f;
    adamw.beta2 = 0.999f;
    adamw.eps = 1e-8f;
    adamw.weightDecay = 0.5f;
    std::vector<float> p = {1.0f, -0.5f, 2.0f}, state;
    optimizerStepCpu(adamw, p, {0.2f, -0.4f, 0.0f}, state, 1);
    CHECK_MSG(state.size() == 6, "adamw state holds m and v: 2 per parameter");
    CHECK_NEAR(p[0], 0.85, 1e-6);
    CHECK_NEAR(p[1], -0.375, 1e-6);
    CHECK_NEAR(p[2], 1.9, 1e-6);
    optimizerStepCpu(adamw, p, {0.1f, 0.3f, -1.0f}, state, 2);
    CHECK_NEAR(p[0], 0.714282, 2e-6);
    CHECK_NEAR(p[1], -0.347318, 2e-6);
    CHECK_NEAR(p[2], 1.879414, 2e-6);
    // without decay AdamW is Adam, bit for bit
    OptimizerSpec adam = adamw;
    adam.kind = OptimizerKind::Adam;
    adam.weightDecay = adamw.weightDecay = 0.0f;
    std::vector<float> a = {1.0f, -0.5f, 2.0f}, b = a, sa, sb;
    optimizerStepCpu(adam, a, {0.2f, -0.4f, 0.3f}, sa, 1);
    optimizerStepCpu(adamw, b, {0.2f, -0.4f, 0.3f}, sb, 1);
    CHECK_MSG(a == b && sa == sb, "adamw without weight decay == adam");
  }

  // ---- misuse ----
  std::printf("errors\n");
  {
    OptimizerSpec adam;
    std::vector<float> p = {1.0f, 2.0f}, state;
    CHECK_THROWS(optimizerStepCpu(adam, p, {1.0f}, state, 1), EngineError, "1 gradients for 2 parameters");
    CHECK_THROWS(optimizerStepCpu(adam, p, {1.0f, 1.0f}, state, 0), EngineError, "t starts at 1");
  }
  return nnstudio_test::summary();
}
