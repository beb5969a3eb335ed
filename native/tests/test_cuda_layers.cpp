// CUDA vs CPU for the small kernels (activation, pools, dropout, losses, optimizers, batch gather),
// each on random inputs with poisoned outputs, against the CPU backend's functions (cpu/layers.h).
// The dense and conv2d kernels have their own files (test_cuda_dense.cpp, test_cuda_conv2d.cpp).
// Tolerances: elementwise float results 1e-5 relative; losses computed in double on both sides 1e-9
// relative; dropout masks and max-pool indices must match exactly.
#ifdef NNSTUDIO_WITH_CUDA
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cuda/kernels.h"
#include "cuda_test_util.h"
#include "spec/model.h"
#include "spec/rng.h"
#include "test_util.h"

using namespace nnstudio;
using nnstudio::test::DeviceVector;
using nnstudio::test::randomVector;
using nnstudio::test::relError;

namespace {

#define CHECK_CLOSE(gpu, cpu, tol, what)                                                           \
  do {                                                                                             \
    const double e_ = relError(gpu, cpu);                                                          \
    ::nnstudio_test::report(e_ <= (tol), what, __FILE__, __LINE__, "rel error " + ::nnstudio_test::num(e_)); \
  } while (0)

const ActivationFn kActivations[] = {ActivationFn::Linear, ActivationFn::ReLU,     ActivationFn::LeakyReLU,
                                     ActivationFn::Sigmoid, ActivationFn::Tanh,    ActivationFn::Softplus,
                                     ActivationFn::Softmax};

void testActivations() {
  const int rows = 37, width = 45;
  const size_t n = size_t(rows) * width;
  const auto x = randomVector(n, 1, 4.0f), dy = randomVector(n, 2);
  for (ActivationFn fn : kActivations) {
    std::vector<float> y(n), dx(n);
    cpu::activation_forward(y.data(), x.data(), rows, width, fn, 0.1f);
    cpu::activation_backward(dx.data(), dy.data(), y.data(), rows, width, fn, 0.1f);
    DeviceVector<float> dX(x), dY(n), dDy(dy), dDx(n);
    cuda::activation_forward(nullptr, dY.ptr, dX.ptr, rows, width, fn, 0.1f);
    cuda::activation_backward(nullptr, dDx.ptr, dDy.ptr, dY.ptr, rows, width, fn, 0.1f);
    const std::string name = activationName(fn);
    CHECK_CLOSE(dY.download(), y, 1e-5, name + " forward");
    CHECK_CLOSE(dDx.download(), dx, 1e-5, name + " backward");
    // in place, as the network runs them
    DeviceVector<float> inPlace(x);
    cuda::activation_forward(nullptr, inPlace.ptr, inPlace.ptr, rows, width, fn, 0.1f);
    CHECK_CLOSE(inPlace.download(), y, 1e-5, name + " forward in place");
  }
}

void testPools() {
  struct Case { int C, H, W, size, stride; };
  // stride == size takes the one-thread-per-window path (9x11 and 7x10 leave uncovered rows and columns)
  const Case cases[] = {{3, 28, 28, 2, 2}, {4, 28, 28, 4, 4}, {2, 9, 11, 2, 2}, {3, 7, 10, 3, 3},
                        {2, 9, 11, 3, 2}, {5, 7, 7, 3, 1},   {1, 5, 6, 2, 3}};
  for (const Case& c : cases) {
    cpu::PoolGeometry g;
    g.C = c.C; g.H = c.H; g.W = c.W; g.size = c.size; g.stride = c.stride;
    g.OH = (c.H - c.size) / c.stride + 1;
    g.OW = (c.W - c.size) / c.stride + 1;
    const int N = 5;
    const size_t inN = size_t(N) * c.C * c.H * c.W, outN = size_t(N) * c.C * g.OH * g.OW;
    auto x = randomVector(inN, 10 + c.C, 2.0f);
    for (size_t i = 0; i < inN; i += 7) x[i] = std::max(x[i], 0.0f);  // ties at 0 after a relu-like input
    const auto dy = randomVector(outN, 20 + c.C);
    cpu::ThreadPool pool(2);
    std::vector<float> y(outN), dx(inN), ya(outN), dxa(inN);
    std::vector<int32_t> arg(outN);
    cpu::maxpool_forward(pool, y.data(), arg.data(), x.data(), N, g);
    cpu::maxpool_backward(pool, dx.data(), dy.data(), arg.data(), N, g);
    cpu::avgpool_forward(pool, ya.data(), x.data(), N, g);
    cpu::avgpool_backward(pool, dxa.data(), dy.data(), N, g);
    DeviceVector<float> dX(x), dY(outN), dDy(dy), dDx(inN), dYa(outN), dDxa(inN), dGated(inN);
    DeviceVector<int32_t> dArg(outN);
    cuda::maxpool_forward(nullptr, dY.ptr, dArg.ptr, dX.ptr, N, g);
    cuda::maxpool_backward(nullptr, dDx.ptr, dDy.ptr, dArg.ptr, dX.ptr, N, g, ActivationFn::Linear, 0);
    cuda::avgpool_forward(nullptr, dYa.ptr, dX.ptr, N, g);
    cuda::avgpool_backward(nullptr, dDxa.ptr, dDy.ptr, dX.ptr, N, g, ActivationFn::Linear, 0);
    const std::string name = std::to_string(c.C) + "x" + std::to_string(c.H) + "x" + std::to_string(c.W) + " size " +
                             std::to_string(c.size) + " stride " + std::to_string(c.stride);
    CHECK_CLOSE(dY.download(), y, 0, "maxpool forward " + name);
    CHECK_MSG(dArg.download() == arg, "maxpool argmax " + name);
    CHECK_CLOSE(dDx.download(), dx, 1e-6, "maxpool backward " + name);
    CHECK_CLOSE(dYa.download(), ya, 1e-6, "avgpool forward " + name);
    CHECK_CLOSE(dDxa.download(), dxa, 1e-6, "avgpool backward " + name);
    // the fused gate: dIn * sigmoid'(in) with `in` read as the sigmoid's output
    std::vector<float> gated(inN);
    cpu::activation_backward(gated.data(), dx.data(), x.data(), 1, int64_t(inN), ActivationFn::Sigmoid, 0);
    cuda::maxpool_backward(nullptr, dGated.ptr, dDy.ptr, dArg.ptr, dX.ptr, N, g, ActivationFn::Sigmoid, 0);
    CHECK_CLOSE(dGated.download(), gated, 1e-6, "maxpool backward with a sigmoid gate " + name);
    // the gate read from the pool's output (the fused conv+pool path): the same, given activated inputs
    std::vector<float> act(inN), pooledAct(outN), fromInput(inN);
    std::vector<int32_t> argAct(outN);
    cpu::activation_forward(act.data(), x.data(), 1, int64_t(inN), ActivationFn::Tanh, 0);
    cpu::maxpool_forward(pool, pooledAct.data(), argAct.data(), act.data(), N, g);
    cpu::maxpool_backward(pool, fromInput.data(), dy.data(), argAct.data(), N, g);
    cpu::activation_backward(fromInput.data(), fromInput.data(), act.data(), 1, int64_t(inN), ActivationFn::Tanh, 0);
    DeviceVector<float> dPooledAct(pooledAct), dFromOutput(inN);
    DeviceVector<int32_t> dArgAct(argAct);
    cuda::maxpool_backward_from_output(nullptr, dFromOutput.ptr, dDy.ptr, dArgAct.ptr, dPooledAct.ptr, N, g,
                                       ActivationFn::Tanh, 0);
    CHECK_CLOSE(dFromOutput.download(), fromInput, 1e-6, "maxpool backward gated from its output " + name);
  }
}

void testDropout() {
  const int N = 19;
  const int64_t width = 133;
  const float rate = 0.3f;
  const uint64_t runSeed = 77, layer = 3;
  const long long globalStep = 41;
  const auto x = randomVector(size_t(N) * width, 5), dy = randomVector(size_t(N) * width, 6);
  cpu::ThreadPool pool(2);
  std::vector<float> y(x.size()), mask(x.size()), dx(x.size());
  // the CPU network's seed for this layer and step (cpu/network.cpp, cpu/session.cpp)
  const uint64_t seed = mixSeed(mixSeed(runSeed, uint64_t(globalStep), 0xD0), layer);
  cpu::dropout_forward(pool, y.data(), mask.data(), x.data(), N, width, rate, seed);
  cpu::dropout_backward(pool, dx.data(), dy.data(), mask.data(), N, width);
  cuda::StepState hostState;
  hostState.globalStep = globalStep;
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{hostState});
  DeviceVector<float> dX(x), dY(x.size()), dMask(x.size()), dDy(dy), dDx(x.size());
  cuda::dropout_forward(nullptr, dY.ptr, dMask.ptr, dX.ptr, N, width, rate, runSeed, layer, state.ptr);
  cuda::dropout_backward(nullptr, dDx.ptr, dDy.ptr, dMask.ptr, N, width);
  CHECK_MSG(dMask.download() == mask, "dropout masks equal the CPU's bit for bit");
  CHECK_CLOSE(dY.download(), y, 0, "dropout forward");
  CHECK_CLOSE(dDx.download(), dx, 0, "dropout backward");
}

void testLosses() {
  const LossKind kinds[] = {LossKind::SoftmaxCrossEntropy, LossKind::BinaryCrossEntropy, LossKind::MSE, LossKind::MAE};
  for (LossKind loss : kinds)
    for (int K : {1, 3, 10}) {
      const int N = 600;  // more rows than the block has threads
      const int classes = K == 1 ? 2 : K;
      const auto z = randomVector(size_t(N) * K, 30 + K, 3.0f);
      std::vector<int32_t> labels(N);
      Rng rng(40 + K);
      for (int32_t& l : labels) l = int32_t(rng.below(uint32_t(classes)));
      std::vector<float> dz(z.size()), prob(size_t(N) * classes);
      std::vector<int32_t> pred(N);
      int64_t correct = 0;
      const double cpuLoss = cpu::loss_forward_backward(loss, z.data(), labels.data(), N, K, dz.data(), &correct);
      cpu::loss_predict(loss, z.data(), N, K, pred.data(), prob.data());

      DeviceVector<float> dZ(z), dDz(z.size()), dProb(prob.size());
      DeviceVector<int32_t> dLabels(labels), dPred{size_t(N)};
      DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{cuda::StepState{}});
      DeviceVector<cuda::StepState> evalState(std::vector<cuda::StepState>{cuda::StepState{}});
      DeviceVector<unsigned long long> confusion(std::vector<unsigned long long>(size_t(classes) * classes, 0));
      cuda::loss_forward_backward(nullptr, loss, dZ.ptr, dLabels.ptr, N, K, dDz.ptr, state.ptr);
      cuda::loss_predict(nullptr, loss, dZ.ptr, dLabels.ptr, N, K, dPred.ptr, dProb.ptr, evalState.ptr, confusion.ptr);
      const cuda::StepState s = state.download()[0], e = evalState.download()[0];
      const std::string name = std::string(lossName(loss)) + " K=" + std::to_string(K);
      CHECK_MSG(std::fabs(s.batchLossSum - cpuLoss) <= 1e-9 * (1 + std::fabs(cpuLoss)),
                name + ": batch loss " + nnstudio_test::num(s.batchLossSum) + " vs CPU " + nnstudio_test::num(cpuLoss));
      CHECK_MSG(s.correct == correct && s.samples == N && s.lossSteps == 1 && !s.diverged, name + ": counts");
      CHECK_CLOSE(dDz.download(), dz, 1e-6, name + ": gradient");
      CHECK_MSG(dPred.download() == pred, name + ": predictions");
      CHECK_CLOSE(dProb.download(), prob, 1e-6, name + ": probabilities");
      CHECK_MSG(std::fabs(e.sampleLossSum / N - cpuLoss) <= 1e-9 * (1 + std::fabs(cpuLoss)) && e.correct == correct &&
                    e.samples == N,
                name + ": evaluation totals");
      std::vector<unsigned long long> expected(size_t(classes) * classes, 0);
      for (int i = 0; i < N; ++i) ++expected[size_t(labels[i]) * classes + size_t(pred[i])];
      CHECK_MSG(confusion.download() == expected, name + ": confusion matrix");
    }
  // a non-finite batch loss flags divergence once and adds nothing to the totals
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
  CHECK_MSG(s.diverged == 1 && s.divergedNaN == 1 && s.divergedAt == 10 && s.lossSteps == 0 && s.samples == 0,
            "a NaN loss flags divergence at the right step and adds nothing");
}

void testOptimizers() {
  const size_t n = 100003;  // not a multiple of the block size
  const auto p0 = randomVector(n, 50), g1 = randomVector(n, 51), g2 = randomVector(n, 52);
  for (int kind = 0; kind < 3; ++kind) {
    OptimizerSpec opt;
    opt.kind = kind == 2 ? OptimizerKind::Adam : OptimizerKind::SGD;
    opt.lr = kind == 2 ? 0.01f : 0.1f;
    opt.momentum = kind == 1 ? 0.9f : 0.0f;
    opt.beta1 = 0.95f;
    opt.beta2 = 0.99f;
    opt.eps = 1e-8f;
    std::vector<float> p = p0, state;
    optimizerStepCpu(opt, p, g1, state, 1);
    const std::vector<float> afterOne = p;
    optimizerStepCpu(opt, p, g2, state, 2);
    DeviceVector<float> dP(p0), dG1(g1), dG2(g2), dBackup(n);
    DeviceVector<float> moments(std::vector<float>(2 * n, 0.0f));
    DeviceVector<cuda::StepState> st(std::vector<cuda::StepState>{cuda::StepState{}});
    for (const DeviceVector<float>* g : {&dG1, &dG2}) {
      if (opt.kind == OptimizerKind::Adam)
        cuda::adam_step(nullptr, dP.ptr, g->ptr, moments.ptr, moments.ptr + n, dBackup.ptr, n, opt.lr, opt.beta1,
                        opt.beta2, opt.eps, st.ptr);
      else
        cuda::sgd_step(nullptr, dP.ptr, g->ptr, moments.ptr, dBackup.ptr, n, opt.lr, opt.momentum, st.ptr);
    }
    const std::string name = kind == 0 ? "sgd" : kind == 1 ? "sgd momentum" : "adam";
    CHECK_CLOSE(dP.download(), p, 1e-6, name + ": two steps equal the CPU's");
    CHECK_CLOSE(dBackup.download(), afterOne, 0, name + ": backup holds the weights before the last update");
    const cuda::StepState s = st.download()[0];
    CHECK_MSG(s.globalStep == 2 && s.epochStep == 2 && s.blocksDone == 0, name + ": the step counters advanced twice");
    // once diverged, updates stop but the counters still advance
    cuda::StepState flagged = s;
    flagged.diverged = 1;
    DeviceVector<cuda::StepState> st2(std::vector<cuda::StepState>{flagged});
    const std::vector<float> before = dP.download();
    if (opt.kind == OptimizerKind::Adam)
      cuda::adam_step(nullptr, dP.ptr, dG1.ptr, moments.ptr, moments.ptr + n, dBackup.ptr, n, opt.lr, opt.beta1,
                      opt.beta2, opt.eps, st2.ptr);
    else
      cuda::sgd_step(nullptr, dP.ptr, dG1.ptr, moments.ptr, dBackup.ptr, n, opt.lr, opt.momentum, st2.ptr);
    CHECK_MSG(dP.download() == before && st2.download()[0].globalStep == 3, name + ": no update after divergence");
  }
}

void testGather() {
  const int64_t count = 50, featureSize = 13;  // odd row length: the scalar path
  for (int64_t fs : {featureSize, int64_t(16)}) {
    const auto features = randomVector(size_t(count * fs), 60);
    std::vector<int32_t> labels(count);
    for (int i = 0; i < count; ++i) labels[i] = i % 7;
    std::vector<uint32_t> order(count);
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
    CHECK_MSG(dBx.download() == ex && dBy.download() == ey, "gather picks the step's rows, feature size " + std::to_string(fs));
  }
}

// The optimizer gathers the next step's batch: the rows after this step's, a short tail batch at the end
// of the epoch, and nothing once the epoch is done (the buffers keep their poison).
void testOptimizerGathersNextBatch() {
  const int64_t count = 50, fs = 16;
  const int batch = 16;  // steps of 16, 16, 16 and a tail of 2
  const auto features = randomVector(size_t(count * fs), 61);
  std::vector<int32_t> labels(count);
  for (int i = 0; i < count; ++i) labels[i] = (i * 3) % 7;
  std::vector<uint32_t> order(count);
  for (uint32_t i = 0; i < count; ++i) order[i] = uint32_t((i * 23 + 5) % count);
  const size_t P = 1000;
  DeviceVector<float> dP(randomVector(P, 62)), dG(randomVector(P, 63)), dBackup(P), moments(std::vector<float>(2 * P));
  DeviceVector<float> dF(features);
  DeviceVector<int32_t> dL(labels);
  DeviceVector<uint32_t> dOrder(order);
  for (int adam = 0; adam < 2; ++adam)
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
      if (adam)
        cuda::adam_step(nullptr, dP.ptr, dG.ptr, moments.ptr, moments.ptr + P, dBackup.ptr, P, 0.01f, 0.9f, 0.999f,
                        1e-8f, dSt.ptr, &next);
      else
        cuda::sgd_step(nullptr, dP.ptr, dG.ptr, moments.ptr, dBackup.ptr, P, 0.1f, 0.9f, dSt.ptr, &next);
      std::vector<float> ex(size_t(batch * fs), -7.0f);
      std::vector<int32_t> ey(size_t(batch), -1);
      const int64_t first = (step + 1) * batch;
      const int64_t n = std::max<int64_t>(0, std::min<int64_t>(batch, count - first));
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t row = order[size_t(first + i)];
        std::copy(features.begin() + row * fs, features.begin() + (row + 1) * fs, ex.begin() + i * fs);
        ey[size_t(i)] = labels[row];
      }
      const std::string what = std::string(adam ? "adam" : "sgd") + " after step " + std::to_string(step) +
                               " gathers the next " + std::to_string(n) + " rows";
      CHECK_MSG(dBx.download() == ex && dBy.download() == ey && dSt.download()[0].epochStep == step + 1, what);
    }
}

}  // namespace

int main() {
  if (!test::haveCudaDevice()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  testActivations();
  testPools();
  testDropout();
  testLosses();
  testOptimizers();
  testGather();
  testOptimizerGathersNextBatch();
  return nnstudio_test::summary();
}
#else
#include <cstdio>
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
