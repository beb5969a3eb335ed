// The op table's small kernels (test_cuda_ops.cpp): activations, max and average pools, dropout, the
// losses (with prediction and evaluation), the optimizer steps and the batch gathers, each against the CPU
// backend's function. One kernel each: the chooser has no variants for them. Tolerances: elementwise float
// results 1e-5 relative (pools, losses' gradients and probabilities, optimizers 1e-6); losses computed in
// double on both sides 1e-9; dropout masks, max-pool values and indices exact.
#pragma once

#ifdef NNSTUDIO_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cpu/thread_pool.h"
#include "cuda/kernels.h"
#include "op_table.h"
#include "spec/model.h"
#include "spec/rng.h"

namespace nnstudio::test {

inline constexpr char kOneKernel[] = "the kernel";

// ---- activations ----

// f on rows x width, forward, backward and forward in place (as the network runs it)
inline void checkActivation(ActivationFn fn, int rows, int width) {
  Row line(std::string("activation ") + activationName(fn), std::to_string(rows) + "x" + std::to_string(width),
           kOneKernel);
  const size_t n = size_t(rows) * width;
  const auto x = randomVector(n, 1, 4.0f), dy = randomVector(n, 2);
  std::vector<float> y(n), dx(n);
  cpu::activation_forward(y.data(), x.data(), rows, width, fn, 0.1f);
  cpu::activation_backward(dx.data(), dy.data(), y.data(), rows, width, fn, 0.1f);
  DeviceVector<float> dX(x), dY(n), dDy(dy), dDx(n), inPlace(x);
  cuda::activation_forward(nullptr, dY.ptr, dX.ptr, rows, width, fn, 0.1f);
  cuda::activation_backward(nullptr, dDx.ptr, dDy.ptr, dY.ptr, rows, width, fn, 0.1f);
  cuda::activation_forward(nullptr, inPlace.ptr, inPlace.ptr, rows, width, fn, 0.1f);
  line.compare("forward", dY.download(), y, relative(1e-5));
  line.compare("backward", dDx.download(), dx, relative(1e-5));
  line.compare("forward in place", inPlace.download(), y, relative(1e-5));
}

// ---- pools ----

struct PoolRow {
  int C, H, W, size, stride;
};

inline cpu::PoolGeometry poolGeometry(const PoolRow& r) {
  cpu::PoolGeometry g;
  g.C = r.C, g.H = r.H, g.W = r.W, g.size = r.size, g.stride = r.stride;
  g.OH = (r.H - r.size) / r.stride + 1;
  g.OW = (r.W - r.size) / r.stride + 1;
  return g;
}

inline std::string poolShape(const PoolRow& r, int N) {
  return "N" + std::to_string(N) + " " + std::to_string(r.C) + "x" + std::to_string(r.H) + "x" + std::to_string(r.W) +
         " size " + std::to_string(r.size) + " stride " + std::to_string(r.stride);
}

// Max pool: values and argmax exact, the backward (overlapping windows summed), gated by a sigmoid read from
// its input, and gated from its output (the fused conv + pool path: activated inputs, tanh). Average pool:
// forward and backward. stride == size takes the one-thread-per-window backward.
inline void checkPools(cpu::ThreadPool& pool, const PoolRow& r) {
  const cpu::PoolGeometry g = poolGeometry(r);
  const int N = 5;
  const size_t inN = size_t(N) * r.C * r.H * r.W, outN = size_t(N) * r.C * g.OH * g.OW;
  auto x = randomVector(inN, 10 + r.C, 2.0f);
  for (size_t i = 0; i < inN; i += 7) x[i] = std::max(x[i], 0.0f);  // ties at 0 after a relu-like input
  const auto dy = randomVector(outN, 20 + r.C);
  std::vector<float> y(outN), dx(inN), ya(outN), dxa(inN), gated(inN);
  std::vector<int32_t> arg(outN);
  cpu::maxpool_forward(pool, y.data(), arg.data(), x.data(), N, g);
  cpu::maxpool_backward(pool, dx.data(), dy.data(), arg.data(), N, g);
  cpu::avgpool_forward(pool, ya.data(), x.data(), N, g);
  cpu::avgpool_backward(pool, dxa.data(), dy.data(), N, g);
  cpu::activation_backward(gated.data(), dx.data(), x.data(), 1, int64_t(inN), ActivationFn::Sigmoid, 0);
  // the gate read from the pool's output, given activated inputs
  std::vector<float> act(inN), pooledAct(outN), fromInput(inN);
  std::vector<int32_t> argAct(outN);
  cpu::activation_forward(act.data(), x.data(), 1, int64_t(inN), ActivationFn::Tanh, 0);
  cpu::maxpool_forward(pool, pooledAct.data(), argAct.data(), act.data(), N, g);
  cpu::maxpool_backward(pool, fromInput.data(), dy.data(), argAct.data(), N, g);
  cpu::activation_backward(fromInput.data(), fromInput.data(), act.data(), 1, int64_t(inN), ActivationFn::Tanh, 0);

  DeviceVector<float> dX(x), dY(outN), dDy(dy), dDx(inN), dYa(outN), dDxa(inN), dGated(inN), dPooledAct(pooledAct),
      dFromOutput(inN);
  DeviceVector<int32_t> dArg(outN), dArgAct(argAct);
  {
    Row line("maxpool", poolShape(r, N), kOneKernel);
    cuda::maxpool_forward(nullptr, dY.ptr, dArg.ptr, dX.ptr, N, g);
    cuda::maxpool_backward(nullptr, dDx.ptr, dDy.ptr, dArg.ptr, dX.ptr, N, g, ActivationFn::Linear, 0);
    cuda::maxpool_backward(nullptr, dGated.ptr, dDy.ptr, dArg.ptr, dX.ptr, N, g, ActivationFn::Sigmoid, 0);
    cuda::maxpool_backward_from_output(nullptr, dFromOutput.ptr, dDy.ptr, dArgAct.ptr, dPooledAct.ptr, N, g,
                                       ActivationFn::Tanh, 0);
    line.compare("forward", dY.download(), y, kExact);
    line.check(dArg.download() == arg, "argmax");
    line.compare("backward", dDx.download(), dx, relative(1e-6));
    line.compare("backward with a sigmoid gate", dGated.download(), gated, relative(1e-6));
    line.compare("backward gated from its output", dFromOutput.download(), fromInput, relative(1e-6));
  }
  {
    Row line("avgpool", poolShape(r, N), kOneKernel);
    cuda::avgpool_forward(nullptr, dYa.ptr, dX.ptr, N, g);
    cuda::avgpool_backward(nullptr, dDxa.ptr, dDy.ptr, dX.ptr, N, g, ActivationFn::Linear, 0);
    line.compare("forward", dYa.download(), ya, relative(1e-6));
    line.compare("backward", dDxa.download(), dxa, relative(1e-6));
  }
}

// ---- dropout ----

// The CPU's masks bit for bit: the network's seed for this layer and step (cpu/network.cpp, cpu/session.cpp).
inline void checkDropout(cpu::ThreadPool& pool, int N, int64_t width, float rate) {
  Row line("dropout", "N" + std::to_string(N) + " x " + std::to_string(width) + " rate " + nnstudio_test::num(rate),
           kOneKernel);
  const uint64_t runSeed = 77, layer = 3;
  const long long globalStep = 41;
  const auto x = randomVector(size_t(N) * width, 5), dy = randomVector(size_t(N) * width, 6);
  std::vector<float> y(x.size()), mask(x.size()), dx(x.size());
  const uint64_t seed = mixSeed(mixSeed(runSeed, uint64_t(globalStep), 0xD0), layer);
  cpu::dropout_forward(pool, y.data(), mask.data(), x.data(), N, width, rate, seed);
  cpu::dropout_backward(pool, dx.data(), dy.data(), mask.data(), N, width);
  cuda::StepState hostState;
  hostState.globalStep = globalStep;
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{hostState});
  DeviceVector<float> dX(x), dY(x.size()), dMask(x.size()), dDy(dy), dDx(x.size());
  cuda::dropout_forward(nullptr, dY.ptr, dMask.ptr, dX.ptr, N, width, rate, runSeed, layer, state.ptr);
  cuda::dropout_backward(nullptr, dDx.ptr, dDy.ptr, dMask.ptr, N, width);
  line.check(dMask.download() == mask, "masks equal the CPU's bit for bit");
  line.compare("forward", dY.download(), y, kExact);
  line.compare("backward", dDx.download(), dx, kExact);
}

// ---- losses ----

// Per-sample losses and gradient (the batch mean into StepState), predictions, probabilities, evaluation
// totals and the confusion matrix; N larger than the loss kernel's block. spread: with the network's
// LossPartials (softmax cross-entropy of 2-32 classes runs over many blocks), launched twice on one state: the
// second batch adds the same loss, the counter having been reset.
inline void checkLoss(LossKind loss, int K, int N, bool spread = false) {
  Row line(std::string("loss ") + lossName(loss) + (spread ? ", spread" : ""),
           "N" + std::to_string(N) + " K=" + std::to_string(K), kOneKernel);
  const int classes = K == 1 ? 2 : K;
  const auto z = randomVector(size_t(N) * K, 30 + K, 3.0f);
  std::vector<int32_t> labels(static_cast<size_t>(N));
  Rng rng(40 + K);
  for (int32_t& l : labels) l = int32_t(rng.below(uint32_t(classes)));
  std::vector<float> dz(z.size()), prob(size_t(N) * classes);
  std::vector<int32_t> pred(static_cast<size_t>(N));
  int64_t correct = 0;
  const double cpuLoss = cpu::loss_forward_backward(loss, z.data(), labels.data(), N, K, dz.data(), &correct);
  cpu::loss_predict(loss, z.data(), N, K, pred.data(), prob.data());

  DeviceVector<float> dZ(z), dDz(z.size()), dProb(prob.size());
  DeviceVector<int32_t> dLabels(labels), dPred{size_t(N)};
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{cuda::StepState{}});
  DeviceVector<cuda::StepState> evalState(std::vector<cuda::StepState>{cuda::StepState{}});
  DeviceVector<unsigned long long> confusion(std::vector<unsigned long long>(size_t(classes) * classes, 0));
  DeviceVector<cuda::LossPartials> partials(std::vector<cuda::LossPartials>{cuda::LossPartials{}});
  LossTargets targets;
  targets.labels = dLabels.ptr;
  auto launch = [&] {
    cuda::loss_forward_backward(nullptr, cuda::LossConfig{loss}, dZ.ptr, targets, N, K, dDz.ptr, state.ptr,
                                spread ? partials.ptr : nullptr);
  };
  launch();
  cuda::loss_predict(nullptr, loss, dZ.ptr, dLabels.ptr, N, K, dPred.ptr, dProb.ptr, evalState.ptr, confusion.ptr);
  const cuda::StepState s = state.download()[0], e = evalState.download()[0];
  if (spread) {
    launch();
    const cuda::StepState twice = state.download()[0];
    line.check(twice.lossSteps == 2 && twice.batchLossSum == 2 * s.batchLossSum && twice.correct == 2 * s.correct &&
                   partials.download()[0].blocksDone == 0,
               "a second batch: the same loss again, the block counter back at 0");
  }
  line.check(std::fabs(s.batchLossSum - cpuLoss) <= 1e-9 * (1 + std::fabs(cpuLoss)), "batch loss",
             nnstudio_test::num(s.batchLossSum) + " vs CPU " + nnstudio_test::num(cpuLoss));
  line.check(s.correct == correct && s.samples == N && s.lossSteps == 1 && !s.diverged, "counts");
  line.compare("gradient", dDz.download(), dz, relative(1e-6));
  line.check(dPred.download() == pred, "predictions");
  line.compare("probabilities", dProb.download(), prob, relative(1e-6));
  line.check(std::fabs(e.sampleLossSum / N - cpuLoss) <= 1e-9 * (1 + std::fabs(cpuLoss)) && e.correct == correct &&
                 e.samples == N,
             "evaluation totals");
  std::vector<unsigned long long> expected(size_t(classes) * classes, 0);
  for (int i = 0; i < N; ++i) ++expected[size_t(labels[size_t(i)]) * classes + size_t(pred[size_t(i)])];
  line.check(confusion.download() == expected, "confusion matrix");
}

// A regression's loss on float targets (N, K): the batch loss, its squared errors and the gradient
// against the CPU's; the evaluation totals of loss_predict. huber with `delta` around the errors' scale
// puts elements on both sides of it.
inline void checkRegressionLoss(LossKind loss, int K, int N, float delta = 1.0f) {
  Row line(std::string("loss ") + lossName(loss) + " regression",
           "N" + std::to_string(N) + " K=" + std::to_string(K) + (loss == LossKind::Huber ? " delta " + nnstudio_test::num(delta) : ""),
           kOneKernel);
  const auto z = randomVector(size_t(N) * K, 60 + K, 2.0f), t = randomVector(size_t(N) * K, 70 + K, 2.0f);
  NetworkPlan plan;
  plan.loss = loss;
  plan.task = TaskKind::Regression;
  plan.huberDelta = delta;
  LossTargets host;
  host.targets = t.data();
  LossCounts counts;
  std::vector<float> dz(z.size());
  const double cpuLoss = cpu::loss_forward_backward(plan, z.data(), host, N, K, dz.data(), &counts);

  DeviceVector<float> dZ(z), dT(t), dDz(z.size());
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{cuda::StepState{}});
  DeviceVector<cuda::StepState> evalState(std::vector<cuda::StepState>{cuda::StepState{}});
  LossTargets device;
  device.targets = dT.ptr;
  const cuda::LossConfig config{loss, delta, true};
  cuda::loss_forward_backward(nullptr, config, dZ.ptr, device, N, K, dDz.ptr, state.ptr);
  cuda::loss_predict(nullptr, config, dZ.ptr, device, N, K, nullptr, nullptr, evalState.ptr, nullptr);
  const cuda::StepState s = state.download()[0], e = evalState.download()[0];
  line.check(std::fabs(s.batchLossSum - cpuLoss) <= 1e-9 * (1 + std::fabs(cpuLoss)), "batch loss",
             nnstudio_test::num(s.batchLossSum) + " vs CPU " + nnstudio_test::num(cpuLoss));
  line.check(std::fabs(s.squaredErrorSum - counts.squaredError) <= 1e-9 * (1 + counts.squaredError) && s.correct == 0 &&
                 s.samples == N && s.lossSteps == 1 && !s.diverged,
             "squared errors and counts");
  line.compare("gradient", dDz.download(), dz, relative(1e-6));
  line.check(std::fabs(e.sampleLossSum / N - cpuLoss) <= 1e-9 * (1 + std::fabs(cpuLoss)) && e.weightSum == N,
             "evaluation totals");
}

// Class weights: the weighted batch loss and gradient against the CPU's; loss_predict's weighted sum and
// the weights' sum (the validation loss is their ratio).
inline void checkWeightedLoss(LossKind loss, int K, int N) {
  Row line(std::string("loss ") + lossName(loss) + " class weights", "N" + std::to_string(N) + " K=" + std::to_string(K),
           kOneKernel);
  const int classes = K == 1 ? 2 : K;
  const auto z = randomVector(size_t(N) * K, 80 + K, 3.0f);
  std::vector<int32_t> labels(static_cast<size_t>(N));
  std::vector<float> weights(static_cast<size_t>(classes));
  Rng rng(90 + K);
  for (int32_t& l : labels) l = int32_t(rng.below(uint32_t(classes)));
  for (float& w : weights) w = 0.25f + 3.0f * float(rng.uniform());
  NetworkPlan plan;
  plan.loss = loss;
  LossTargets host;
  host.labels = labels.data();
  host.classWeights = weights.data();
  LossCounts counts;
  std::vector<float> dz(z.size());
  const double cpuLoss = cpu::loss_forward_backward(plan, z.data(), host, N, K, dz.data(), &counts);

  DeviceVector<float> dZ(z), dDz(z.size()), dW(weights);
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{cuda::StepState{}});
  DeviceVector<cuda::StepState> evalState(std::vector<cuda::StepState>{cuda::StepState{}});
  LossTargets device;
  device.labels = dLabels.ptr;
  device.classWeights = dW.ptr;
  const cuda::LossConfig config{loss};
  cuda::loss_forward_backward(nullptr, config, dZ.ptr, device, N, K, dDz.ptr, state.ptr);
  cuda::loss_predict(nullptr, config, dZ.ptr, device, N, K, nullptr, nullptr, evalState.ptr, nullptr);
  const cuda::StepState s = state.download()[0], e = evalState.download()[0];
  line.check(std::fabs(s.batchLossSum - cpuLoss) <= 1e-9 * (1 + std::fabs(cpuLoss)), "weighted batch loss",
             nnstudio_test::num(s.batchLossSum) + " vs CPU " + nnstudio_test::num(cpuLoss));
  line.check(s.correct == counts.correct && s.samples == N, "counts");
  line.compare("gradient", dDz.download(), dz, relative(1e-6));
  line.check(std::fabs(e.weightSum - counts.weightSum) <= 1e-9 * counts.weightSum &&
                 std::fabs(e.sampleLossSum / e.weightSum - cpuLoss) <=
                     1e-9 * (1 + std::fabs(cpuLoss)),
             "evaluation: weighted loss sum / weight sum", nnstudio_test::num(e.sampleLossSum / e.weightSum));
}

// a non-finite batch loss flags divergence once and adds nothing to the totals
inline void checkLossDivergence() {
  Row line(std::string("loss ") + lossName(LossKind::SoftmaxCrossEntropy), "N4 K=10, a NaN output", kOneKernel);
  std::vector<float> z = randomVector(40, 3);
  z[7] = NAN;
  std::vector<int32_t> labels(4, 1);
  cuda::StepState start;
  start.globalStep = 9;
  DeviceVector<float> dZ(z), dDz(z.size());
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{start});
  cuda::loss_forward_backward(nullptr, LossKind::SoftmaxCrossEntropy, dZ.ptr, dLabels.ptr, 4, 10, dDz.ptr, state.ptr);
  const cuda::StepState s = state.download()[0];
  line.check(s.diverged == 1 && s.divergedNaN == 1 && s.divergedAt == 10 && s.lossSteps == 0 && s.samples == 0,
             "a NaN loss flags divergence at the right step and adds nothing");
}

// ---- optimizers ----

inline OptimizerSpec optimizerNamed(const std::string& name) {
  OptimizerSpec opt;
  const bool adam = name == "adam" || name == "adamw";
  opt.kind = name == "adam" ? OptimizerKind::Adam : name == "adamw" ? OptimizerKind::AdamW : OptimizerKind::SGD;
  opt.lr = adam ? 0.01f : 0.1f;
  opt.momentum = name == "sgd momentum" || name == "sgd nesterov" || name == "sgdw" ? 0.9f : 0.0f;
  opt.nesterov = name == "sgd nesterov";
  opt.decoupledWeightDecay = name == "sgdw";
  opt.beta1 = 0.95f;
  opt.beta2 = 0.99f;
  opt.eps = 1e-8f;
  return opt;
}

inline void optimizerStep(const OptimizerSpec& opt, DeviceVector<float>& p, const DeviceVector<float>& g,
                          DeviceVector<float>& moments, DeviceVector<float>& backup, size_t n, cuda::StepState* state,
                          const cuda::BatchGather* next = nullptr, const cuda::WeightDecay& decay = {}) {
  if (opt.kind != OptimizerKind::SGD)
    cuda::adam_step(nullptr, p.ptr, g.ptr, moments.ptr, moments.ptr + n, backup.ptr, n, opt.lr, opt.beta1, opt.beta2,
                    opt.eps, state, next, decay);
  else
    cuda::sgd_step(nullptr, p.ptr, g.ptr, moments.ptr, backup.ptr, n, opt.lr, opt.momentum, state, next, decay,
                   opt.nesterov);
}

// Weight decay on a masked vector (every third parameter a "bias"): two steps equal optimizerStepCpu's
// with the same mask, and the unmasked parameters move as without decay.
inline void checkOptimizerDecay(const std::string& name, size_t n) {
  Row line("optimizer " + name + " weight decay 0.05", std::to_string(n) + " parameters, a third masked", kOneKernel);
  OptimizerSpec opt = optimizerNamed(name);
  opt.weightDecay = 0.05f;
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) mask[i] = i % 3 != 0;
  const auto p0 = randomVector(n, 53), g1 = randomVector(n, 54), g2 = randomVector(n, 55);
  std::vector<float> p = p0, state;
  optimizerStepCpu(opt, p, g1, state, 1, &mask);
  optimizerStepCpu(opt, p, g2, state, 2, &mask);
  OptimizerSpec plain = opt;
  plain.weightDecay = 0;
  std::vector<float> q = p0, plainState;
  optimizerStepCpu(plain, q, g1, plainState, 1);
  optimizerStepCpu(plain, q, g2, plainState, 2);
  bool masked = true, decayed = false;
  for (size_t i = 0; i < n; ++i) {
    if (!mask[i]) masked = masked && p[i] == q[i];
    else decayed = decayed || p[i] != q[i];
  }
  line.check(masked && decayed, "on the CPU the masked parameters move as without decay, the others differ");
  DeviceVector<float> dP(p0), dG1(g1), dG2(g2), dBackup(n), moments(std::vector<float>(2 * n, 0.0f));
  DeviceVector<uint8_t> dMask(mask);
  DeviceVector<cuda::StepState> st(std::vector<cuda::StepState>{cuda::StepState{}});
  const cuda::WeightDecay decay{opt.weightDecay, dMask.ptr, opt.decoupled()};
  optimizerStep(opt, dP, dG1, moments, dBackup, n, st.ptr, nullptr, decay);
  optimizerStep(opt, dP, dG2, moments, dBackup, n, st.ptr, nullptr, decay);
  line.compare("two steps", dP.download(), p, relative(1e-6));
}

// Two steps equal the CPU's; the backup holds the weights before the last update; the step counters advance;
// once diverged, updates stop but the counters still advance. n is not a multiple of the block.
inline void checkOptimizer(const std::string& name, size_t n) {
  Row line("optimizer " + name, std::to_string(n) + " parameters", kOneKernel);
  const OptimizerSpec opt = optimizerNamed(name);
  const auto p0 = randomVector(n, 50), g1 = randomVector(n, 51), g2 = randomVector(n, 52);
  std::vector<float> p = p0, state;
  optimizerStepCpu(opt, p, g1, state, 1);
  const std::vector<float> afterOne = p;
  optimizerStepCpu(opt, p, g2, state, 2);
  DeviceVector<float> dP(p0), dG1(g1), dG2(g2), dBackup(n), moments(std::vector<float>(2 * n, 0.0f));
  DeviceVector<cuda::StepState> st(std::vector<cuda::StepState>{cuda::StepState{}});
  optimizerStep(opt, dP, dG1, moments, dBackup, n, st.ptr);
  optimizerStep(opt, dP, dG2, moments, dBackup, n, st.ptr);
  line.compare("two steps", dP.download(), p, relative(1e-6));
  line.compare("backup: the weights before the last update", dBackup.download(), afterOne, kExact);
  const cuda::StepState s = st.download()[0];
  line.check(s.globalStep == 2 && s.epochStep == 2 && s.blocksDone == 0, "the step counters advanced twice");
  cuda::StepState flagged = s;
  flagged.diverged = 1;
  DeviceVector<cuda::StepState> st2(std::vector<cuda::StepState>{flagged});
  const std::vector<float> before = dP.download();
  optimizerStep(opt, dP, dG1, moments, dBackup, n, st2.ptr);
  line.check(dP.download() == before && st2.download()[0].globalStep == 3, "no update after divergence");
}

// The weight average after two steps: avg = d (d p0 + (1 - d) p1) + (1 - d) p2, the CPU's ema_update twice.
inline void checkEma(size_t n) {
  Row line("weight average (ema 0.9)", std::to_string(n) + " parameters", kOneKernel);
  const auto a0 = randomVector(n, 60), p1 = randomVector(n, 61), p2 = randomVector(n, 62);
  std::vector<float> avg = a0;
  cpu::ema_update(nullptr, avg.data(), p1.data(), n, 0.9f);
  cpu::ema_update(nullptr, avg.data(), p2.data(), n, 0.9f);
  DeviceVector<float> dAvg(a0), dP1(p1), dP2(p2);
  DeviceVector<cuda::StepState> st(std::vector<cuda::StepState>{cuda::StepState{}});
  cuda::ema_update(nullptr, dAvg.ptr, dP1.ptr, n, 0.9f, st.ptr);
  cuda::ema_update(nullptr, dAvg.ptr, dP2.ptr, n, 0.9f, st.ptr);
  line.compare("two updates", dAvg.download(), avg, relative(1e-6));
  cuda::StepState flagged{};
  flagged.diverged = 1;
  DeviceVector<cuda::StepState> st2(std::vector<cuda::StepState>{flagged});
  const std::vector<float> before = dAvg.download();
  cuda::ema_update(nullptr, dAvg.ptr, dP1.ptr, n, 0.9f, st2.ptr);
  line.check(dAvg.download() == before, "no update after divergence");
}

// Softmax cross-entropy with label smoothing 0.1: the batch loss and gradient against the CPU's (spread: over
// many blocks, with LossPartials).
inline void checkLabelSmoothingLoss(int K, int N, bool spread = false) {
  Row line(std::string("loss softmax_cross_entropy, label smoothing 0.1") + (spread ? ", spread" : ""),
           "N" + std::to_string(N) + " K=" + std::to_string(K), kOneKernel);
  const auto z = randomVector(size_t(N) * K, 70 + K, 3.0f);
  std::vector<int32_t> labels(static_cast<size_t>(N));
  Rng rng(80 + K);
  for (int32_t& l : labels) l = int32_t(rng.below(uint32_t(K)));
  NetworkPlan plan;
  plan.loss = LossKind::SoftmaxCrossEntropy;
  plan.labelSmoothing = 0.1f;
  LossTargets targets;
  targets.labels = labels.data();
  std::vector<float> dz(z.size());
  LossCounts counts;
  const double cpuLoss = cpu::loss_forward_backward(plan, z.data(), targets, N, K, dz.data(), &counts);
  DeviceVector<float> dZ(z), dDz(z.size());
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{cuda::StepState{}});
  LossTargets deviceTargets;
  deviceTargets.labels = dLabels.ptr;
  cuda::LossConfig config;
  config.labelSmoothing = 0.1f;
  DeviceVector<cuda::LossPartials> partials(std::vector<cuda::LossPartials>{cuda::LossPartials{}});
  cuda::loss_forward_backward(nullptr, config, dZ.ptr, deviceTargets, N, K, dDz.ptr, state.ptr,
                              spread ? partials.ptr : nullptr);
  const cuda::StepState s = state.download()[0];
  line.check(std::fabs(s.batchLossSum - cpuLoss) <= 1e-9 * (1 + std::fabs(cpuLoss)), "batch loss",
             nnstudio_test::num(s.batchLossSum) + " vs CPU " + nnstudio_test::num(cpuLoss));
  line.compare("gradient", dDz.download(), dz, relative(1e-6));
}

// ---- augmentation ----

// The batch of global step 17 augmented on the GPU against the CPU's: whole-pixel transforms (shift, flip,
// erase) bit for bit; rotation and scale (bilinear) within float rounding.
inline void checkAugment(const std::string& name, const Augmentation& a, int n, int C, int H, int W) {
  Row line("augment " + name, std::to_string(n) + "x" + std::to_string(C) + "x" + std::to_string(H) + "x" +
                                  std::to_string(W) + ", step 17",
           kOneKernel);
  const auto x = randomVector(size_t(n) * C * H * W, 90, 1.0f);
  std::vector<float> ref(x.size());
  cpu::augment_batch(nullptr, ref.data(), x.data(), n, C, H, W, a, 5, 17);
  DeviceVector<float> dX(x), dOut(x.size());
  cuda::StepState at{};
  at.globalStep = 17;
  DeviceVector<cuda::StepState> st(std::vector<cuda::StepState>{at});
  cuda::augment_batch(nullptr, dOut.ptr, dX.ptr, n, C, H, W, a, 5, st.ptr);
  const bool affine = a.rotate > 0 || a.scale > 0;
  line.compare("the batch", dOut.download(), ref, affine ? relative(1e-5) : kExact);
}

// ---- the batch gathers ----

// The step's rows of the epoch's order, feature size `fs` (odd: the scalar path).
inline void checkGather(int64_t fs) {
  Row line("gather", "50 rows of " + std::to_string(fs) + ", batch 8 at step 2", kOneKernel);
  const int64_t count = 50;
  const auto features = randomVector(size_t(count * fs), 60);
  std::vector<int32_t> labels(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) labels[size_t(i)] = i % 7;
  std::vector<uint32_t> order(static_cast<size_t>(count));
  for (uint32_t i = 0; i < count; ++i) order[i] = uint32_t((i * 17 + 3) % count);
  const int batch = 8, n = 8;
  cuda::StepState st;
  st.epochStep = 2;  // the third batch: order[16..23]
  DeviceVector<float> dF(features), dBx(size_t(batch * fs));
  DeviceVector<int32_t> dL(labels), dBy{size_t(batch)};
  DeviceVector<uint32_t> dOrder(order);
  DeviceVector<cuda::StepState> dSt(std::vector<cuda::StepState>{st});
  cuda::gather_batch(nullptr, dBx.ptr, dBy.ptr, dF.ptr, dL.ptr, dOrder.ptr, fs, n, batch, dSt.ptr);
  std::vector<float> ex;
  std::vector<int32_t> ey;
  for (int i = 0; i < n; ++i) {
    const uint32_t row = order[size_t(16 + i)];
    ex.insert(ex.end(), features.begin() + row * fs, features.begin() + (row + 1) * fs);
    ey.push_back(labels[row]);
  }
  line.check(dBx.download() == ex && dBy.download() == ey, "the step's rows");
}

// The optimizer gathers the next step's batch: the rows after this step's, a short tail batch at the end of
// the epoch, nothing once the epoch is done (the buffers keep their fill).
inline void checkOptimizerGathersNext(const std::string& name) {
  Row line("optimizer " + name, "1000 parameters, next batch of 16 from 50 rows", "the kernel's gather");
  const OptimizerSpec opt = optimizerNamed(name);
  const int64_t count = 50, fs = 16;
  const int batch = 16;  // steps of 16, 16, 16 and a tail of 2
  const auto features = randomVector(size_t(count * fs), 61);
  std::vector<int32_t> labels(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) labels[size_t(i)] = (i * 3) % 7;
  std::vector<uint32_t> order(static_cast<size_t>(count));
  for (uint32_t i = 0; i < count; ++i) order[i] = uint32_t((i * 23 + 5) % count);
  const size_t P = 1000;
  DeviceVector<float> dP(randomVector(P, 62)), dG(randomVector(P, 63)), dBackup(P), moments(std::vector<float>(2 * P));
  DeviceVector<float> dF(features);
  DeviceVector<int32_t> dL(labels);
  DeviceVector<uint32_t> dOrder(order);
  for (long long step : {0LL, 2LL, 3LL}) {
    DeviceVector<float> dBx(std::vector<float>(size_t(batch * fs), -7.0f));
    DeviceVector<int32_t> dBy(std::vector<int32_t>(size_t(batch), -1));
    cuda::BatchGather next;
    next.features = dF.ptr;
    next.labels = dL.ptr;
    next.order = dOrder.ptr;
    next.batchFeatures = dBx.ptr;
    next.batchLabels = dBy.ptr;
    next.featureSize = fs;
    next.count = count;
    next.batch = batch;
    cuda::StepState st;
    st.epochStep = step;
    DeviceVector<cuda::StepState> dSt(std::vector<cuda::StepState>{st});
    optimizerStep(opt, dP, dG, moments, dBackup, P, dSt.ptr, &next);
    std::vector<float> ex(size_t(batch * fs), -7.0f);
    std::vector<int32_t> ey(size_t(batch), -1);
    const int64_t first = (step + 1) * batch;
    const int64_t n = std::max<int64_t>(0, std::min<int64_t>(batch, count - first));
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t row = order[size_t(first + i)];
      std::copy(features.begin() + row * fs, features.begin() + (row + 1) * fs, ex.begin() + i * fs);
      ey[size_t(i)] = labels[row];
    }
    line.check(dBx.download() == ex && dBy.download() == ey && dSt.download()[0].epochStep == step + 1,
               "after step " + std::to_string(step) + " it gathers the next " + std::to_string(n) + " rows");
  }
}

}  // namespace nnstudio::test

#endif
