// The CUDA backend as a whole against the CPU backend:
//   - one batch through whole networks covering every layer kind, activation and loss: the head's
//     outputs and every parameter gradient (relative error <= 1e-4, see docs/LAYERS.md);
//   - whole training runs of a few hundred steps from the same seeds on both backends (same data
//     order, same dropout masks): final weights within 2e-3 and final losses within 1e-3 relative;
//   - evaluation (predictions, probabilities, loss, confusion matrix) against the CPU's;
//   - regression heads (mse, mae, huber), class weights and weight decay: one batch and whole runs (the
//     regression metrics, evaluation outputs, determinism and an exact resume) against the CPU's;
//   - the run's behaviour: progress events, cancel, pause, divergence keeping the last finite
//     weights, clear messages for bad input and for a model too large for the GPU (after which the
//     GPU still trains);
//   - training control (train_control_checks.h): resume from a TrainState gives the uninterrupted
//     run's bits, early stopping, a learning rate changed between epochs.
// Without a CUDA device it prints "skipped: no CUDA device" and passes.
#ifdef NNSTUDIO_WITH_CUDA
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cuda/device_caps.h"
#include "cuda/kernel_choice.h"
#include "cuda/kernel_overrides.h"
#include "cuda/loss_scale.h"
#include "cuda/mlp_step_launch.h"
#include "cuda/network.h"
#include "cuda_test_util.h"
#include "nnstudio/engine.h"
#include "spec/rng.h"
#include "test_util.h"
#include "train_control_checks.h"

using namespace nnstudio;
using nnstudio::test::DeviceVector;
using nnstudio::test::randomVector;
using nnstudio::test::relError;

namespace {

bool allFinite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

struct Data {
  std::vector<float> x;
  std::vector<int32_t> y;
  int64_t featureSize = 0;
  DatasetView view() const { return DatasetView{x.data(), y.data(), int64_t(y.size()), featureSize}; }
};

// images (C, H, W) whose class is the brightest of `classes` horizontal bands, plus noise
Data bands(int count, int C, int H, int W, int classes, uint64_t seed) {
  Data d;
  d.featureSize = int64_t(C) * H * W;
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const int c = int(rng.below(uint32_t(classes)));
    for (int ch = 0; ch < C; ++ch)
      for (int r = 0; r < H; ++r)
        for (int k = 0; k < W; ++k) {
          const bool on = r * classes / H == c;
          d.x.push_back((on ? 0.8f : 0.0f) + 0.6f * (rng.uniform() - 0.5f));
        }
    d.y.push_back(c);
  }
  return d;
}

// ---- one batch through a whole network ----

struct NetCase {
  const char* name;
  const char* spec;
};

const NetCase kNetworks[] = {
    {"mlp, every elementwise activation, dropout",
     R"({"input":[20],"layers":[{"kind":"dense","units":31,"activation":"relu"},{"kind":"dropout","rate":0.25},
        {"kind":"dense","units":17,"activation":"leaky_relu","alpha":0.1},{"kind":"dense","units":16,"activation":"sigmoid"},
        {"kind":"dense","units":15,"activation":"tanh"},{"kind":"dense","units":14,"activation":"softplus"},
        {"kind":"dense","units":5}],"loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":3})"},
    {"cnn: conv same relu, maxpool, conv stride 2 tanh, avgpool, dense sigmoid",
     R"({"input":[2,12,12],"layers":[{"kind":"conv2d","filters":6,"kernel":[3,3],"padding":"same","activation":"relu"},
        {"kind":"maxpool2d","size":2},{"kind":"conv2d","filters":5,"kernel":[3,2],"stride":2,"padding":"full","activation":"tanh"},
        {"kind":"avgpool2d","size":2,"stride":1},{"kind":"flatten"},{"kind":"dense","units":9,"activation":"sigmoid"},
        {"kind":"dense","units":4}],"loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":4})"},
    {"conv leaky_relu into flatten into dense, binary cross-entropy with one output",
     R"({"input":[1,9,9],"layers":[{"kind":"conv2d","filters":3,"kernel":[2,2],"padding":"same","activation":"leaky_relu"},
        {"kind":"flatten"},{"kind":"dense","units":1,"activation":"sigmoid"}],"loss":"binary_cross_entropy",
        "optimizer":{"kind":"adam","lr":0.001},"seed":5})"},
    {"standalone activations, dropout after a pool, softmax hidden layer, mse",
     R"({"input":[1,8,8],"layers":[{"kind":"conv2d","filters":4,"kernel":[3,3]},{"kind":"activation","fn":"softplus"},
        {"kind":"maxpool2d","size":3,"stride":2},{"kind":"dropout","rate":0.5},{"kind":"flatten"},
        {"kind":"dense","units":6,"activation":"softmax"},{"kind":"dense","units":3},{"kind":"activation","fn":"sigmoid"}],
        "loss":"mse","optimizer":{"kind":"adam","lr":0.001},"seed":6})"},
    {"mae on a tanh head, binary cross-entropy multi-output",
     R"({"input":[7],"layers":[{"kind":"dense","units":8,"activation":"tanh"},{"kind":"dense","units":3,"activation":"tanh"}],
        "loss":"mae","optimizer":{"kind":"sgd","lr":0.01},"seed":7})"},
    {"conv into conv + relu + overlapping max pool (fused, with an input gradient), conv + tanh + pool",
     R"({"input":[2,13,13],"layers":[{"kind":"conv2d","filters":3,"kernel":[3,3],"padding":"same"},
        {"kind":"conv2d","filters":5,"kernel":[2,2],"activation":"relu"},{"kind":"maxpool2d","size":3,"stride":2},
        {"kind":"conv2d","filters":4,"kernel":[3,3],"padding":"same","activation":"tanh"},{"kind":"maxpool2d","size":2},
        {"kind":"flatten"},{"kind":"dense","units":3}],"loss":"softmax_cross_entropy",
        "optimizer":{"kind":"adam","lr":0.001},"seed":9})"},
    {"first conv + relu + max pool into flatten into dense: the window bytes with ReLU (pooled not read)",
     R"({"input":[1,10,10],"layers":[{"kind":"conv2d","filters":6,"kernel":[3,3],"activation":"relu"},
        {"kind":"maxpool2d","size":2},{"kind":"flatten"},{"kind":"dense","units":4}],"loss":"softmax_cross_entropy",
        "optimizer":{"kind":"sgd","lr":0.1},"seed":10})"},
    {"first conv (2 channels) + tanh + max pool into a sigmoid dense layer and mse: the window bytes and a gate",
     R"({"input":[2,9,9],"layers":[{"kind":"conv2d","filters":5,"kernel":[3,3],"activation":"tanh"},
        {"kind":"maxpool2d","size":2},{"kind":"flatten"},{"kind":"dense","units":3,"activation":"sigmoid"}],
        "loss":"mse","optimizer":{"kind":"sgd","lr":0.1},"seed":11})"},
    {"binary cross-entropy on three outputs",
     R"({"input":[1,6,6],"layers":[{"kind":"conv2d","filters":2,"kernel":[3,3],"activation":"sigmoid"},{"kind":"flatten"},
        {"kind":"dense","units":3}],"loss":"binary_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":8})"},
};

void testNetworks(const char* variant) {
  std::printf("one batch through whole networks, CUDA vs CPU (%s)\n", variant);
  for (const NetCase& c : kNetworks) {
    const ModelSpec spec = parseModelSpec(c.spec);
    const NetworkPlan plan = planNetwork(spec);
    const int N = 11;
    const int classes = plan.outputWidth == 1 ? 2 : int(plan.outputWidth);
    const auto params = initialParameters(spec, spec.seed);
    const auto x = randomVector(size_t(N) * plan.inputSize, 100);
    std::vector<int32_t> labels(N);
    for (int i = 0; i < N; ++i) labels[i] = i % classes;
    // the CPU network's dropout seed for run seed 9 at global step 4
    const uint64_t runSeed = 9;
    const long long globalStep = 4;
    std::vector<float> cpuOut, cpuGrad;
    const double cpuLoss = forwardBackwardCpu(spec, params, x.data(), labels.data(), N, true, cpuOut, cpuGrad,
                                              mixSeed(runSeed, uint64_t(globalStep), 0xD0));

    cuda::Network net(spec, N);
    DeviceVector<float> dParams(params), dX(x), dGrad(plan.parameterCount);
    DeviceVector<int32_t> dLabels(labels);
    cuda::StepState st;
    st.globalStep = globalStep;
    DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{st});
    net.forward(nullptr, dParams.ptr, dX.ptr, N, true, runSeed, dState.ptr);
    net.loss(nullptr, dLabels.ptr, N, dState.ptr);
    net.backward(nullptr, dParams.ptr, dGrad.ptr, N);
    std::vector<float> gpuOut(cpuOut.size());
    test::cudaOk(cudaDeviceSynchronize(), "network");
    test::cudaOk(cudaMemcpy(gpuOut.data(), net.outputs(), sizeof(float) * gpuOut.size(), cudaMemcpyDeviceToHost), "outputs");
    const cuda::StepState s = dState.download()[0];
    const double outErr = relError(gpuOut, cpuOut, 1e-3), gradErr = relError(dGrad.download(), cpuGrad, 1e-3);
    CHECK_MSG(outErr <= 1e-4, std::string(c.name) + ": outputs (rel error " + nnstudio_test::num(outErr) + ")");
    CHECK_MSG(gradErr <= 1e-4, std::string(c.name) + ": every parameter gradient (rel error " + nnstudio_test::num(gradErr) + ")");
    CHECK_MSG(std::fabs(s.batchLossSum - cpuLoss) <= 1e-5 * (1 + std::fabs(cpuLoss)),
              std::string(c.name) + ": loss " + nnstudio_test::num(s.batchLossSum) + " vs " + nnstudio_test::num(cpuLoss));
  }
}

// ---- whole runs ----

struct RunCase {
  const char* name;
  const char* spec;
  int C, H, W, classes, count, batch, epochs;
};

const RunCase kRuns[] = {
    {"cnn + adam + dropout, 300 steps",
     R"({"input":[1,12,12],"layers":[{"kind":"conv2d","filters":8,"kernel":[3,3],"activation":"relu"},{"kind":"maxpool2d","size":2},
        {"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"same","activation":"relu"},{"kind":"flatten"},
        {"kind":"dropout","rate":0.2},{"kind":"dense","units":32,"activation":"relu"},{"kind":"dense","units":4}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":11})",
     1, 12, 12, 4, 1000, 10, 3},
    {"mlp + sgd momentum, last partial batch, 210 steps",
     R"({"input":[3,5,5],"layers":[{"kind":"flatten"},{"kind":"dense","units":40,"activation":"tanh"},{"kind":"dense","units":3}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.05,"momentum":0.9},"seed":12})",
     3, 5, 5, 3, 1390, 20, 3},
};

TrainOptions runOptions(int epochs, int batch) {
  TrainOptions o;
  o.epochs = epochs;
  o.batchSize = batch;
  o.seed = 21;
  o.threads = 2;
  return o;
}

void testWholeRuns() {
  std::printf("whole training runs, CUDA vs CPU\n");
  auto cpu = createBackend(DeviceKind::CPU, 2);
  auto gpu = createBackend(DeviceKind::CUDA);
  for (const RunCase& c : kRuns) {
    const ModelSpec spec = parseModelSpec(c.spec);
    const Data train = bands(c.count, c.C, c.H, c.W, c.classes, 31);
    const Data valid = bands(300, c.C, c.H, c.W, c.classes, 32);
    const DatasetView tv = train.view(), vv = valid.view();
    const TrainOptions o = runOptions(c.epochs, c.batch);
    const TrainResult a = cpu->train(spec, tv, &vv, o, nullptr, nullptr);
    const TrainResult b = gpu->train(spec, tv, &vv, o, nullptr, nullptr);
    CHECK_MSG(b.status == TrainStatus::Completed && b.steps == a.steps && b.history.size() == a.history.size(),
              std::string(c.name) + ": completed " + std::to_string(b.steps) + " steps");
    const double wErr = relError(b.parameters, a.parameters, 1e-3);
    CHECK_MSG(wErr <= 2e-3, std::string(c.name) + ": final weights (rel error " + nnstudio_test::num(wErr) + ")");
    for (size_t e = 0; e < a.history.size() && e < b.history.size(); ++e) {
      const EpochStats &ea = a.history[e], &eb = b.history[e];
      const bool close = std::fabs(ea.trainLoss - eb.trainLoss) <= 1e-3 * (1 + ea.trainLoss) &&
                         std::fabs(ea.validationLoss - eb.validationLoss) <= 1e-3 * (1 + ea.validationLoss) &&
                         std::fabs(ea.validationAccuracy - eb.validationAccuracy) <= 0.01 && eb.hasValidation;
      CHECK_MSG(close, std::string(c.name) + ": epoch " + std::to_string(e + 1) + " train loss " +
                           nnstudio_test::num(eb.trainLoss) + " vs " + nnstudio_test::num(ea.trainLoss) + ", validation " +
                           nnstudio_test::num(eb.validationLoss) + " vs " + nnstudio_test::num(ea.validationLoss) +
                           ", accuracy " + nnstudio_test::num(eb.validationAccuracy) + " vs " +
                           nnstudio_test::num(ea.validationAccuracy));
    }
    CHECK_MSG(b.history.back().validationAccuracy >= 0.9, std::string(c.name) + ": it learned (validation accuracy " +
                                                               nnstudio_test::num(b.history.back().validationAccuracy) + ")");
    // the same seed gives the same weights on the GPU, run after run
    const TrainResult again = gpu->train(spec, tv, &vv, o, nullptr, nullptr);
    CHECK_MSG(again.parameters == b.parameters, std::string(c.name) + ": deterministic on the GPU");

    // evaluation against the CPU's
    const EvalResult ec = cpu->evaluate(spec, a.parameters, vv, 64);
    const EvalResult eg = gpu->evaluate(spec, a.parameters, vv, 64);
    CHECK_MSG(eg.predictions == ec.predictions && eg.confusion == ec.confusion && eg.classes == ec.classes,
              std::string(c.name) + ": evaluation predictions and confusion matrix equal the CPU's");
    CHECK_MSG(relError(eg.probabilities, ec.probabilities, 1e-3) <= 1e-4 && std::fabs(eg.loss - ec.loss) <= 1e-4 * (1 + ec.loss) &&
                  eg.accuracy == ec.accuracy,
              std::string(c.name) + ": evaluation probabilities, loss " + nnstudio_test::num(eg.loss) + " vs " +
                  nnstudio_test::num(ec.loss));
    int64_t total = 0;
    for (int64_t v : eg.confusion) total += v;
    CHECK(total == vv.count);
    // prediction without labels
    DatasetView unlabeled = vv;
    unlabeled.labels = nullptr;
    const EvalResult ep = gpu->evaluate(spec, a.parameters, unlabeled, 64);
    CHECK_MSG(ep.predictions == ec.predictions && ep.confusion.empty() && ep.loss == 0, std::string(c.name) + ": prediction without labels");
  }
}

// ---- the fused MLP step (mlp_step.h) ----

struct FusedCase {
  const char* name;
  const char* spec;
  int C, H, W, classes, count, batch, epochs;
  LrScheduleKind schedule;
};

// Small MLPs the fused step takes: label smoothing with Nesterov momentum and coupled decay, AdamW on a one-cycle
// schedule, plain SGD on a batch of 7 over 16 blocks (blocks without rows, columns not a multiple of the
// blocks), 12 inputs (one chunk in the unit split), 784 inputs (7 chunks); each with a last partial batch.
const FusedCase kFusedRuns[] = {
    {"relu, sgd nesterov + weight decay, label smoothing 0.1, batch 20 (tail 10)",
     R"({"input":[3,5,5],"layers":[{"kind":"flatten"},{"kind":"dense","units":40,"activation":"relu"},{"kind":"dense","units":3}],
        "loss":"softmax_cross_entropy","labelSmoothing":0.1,
        "optimizer":{"kind":"sgd","lr":0.05,"momentum":0.9,"nesterov":true,"weightDecay":0.001},"seed":12})",
     3, 5, 5, 3, 1390, 20, 2, LrScheduleKind::Constant},
    {"leaky relu, adamw on one-cycle, batch 64 (tail 40)",
     R"({"input":[1,16,16],"layers":[{"kind":"flatten"},{"kind":"dense","units":64,"activation":"leaky_relu","alpha":0.1},
        {"kind":"dense","units":4}],"loss":"softmax_cross_entropy",
        "optimizer":{"kind":"adamw","lr":0.003,"weightDecay":0.01},"seed":13})",
     1, 16, 16, 4, 1000, 64, 2, LrScheduleKind::OneCycle},
    {"sigmoid, 17 inputs without flatten, plain sgd, batch 7 (tail 6)",
     R"({"input":[17],"layers":[{"kind":"dense","units":6,"activation":"sigmoid"},{"kind":"dense","units":3}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.2},"seed":14})",
     1, 1, 17, 3, 300, 7, 3, LrScheduleKind::Constant},
    {"tanh, 12 inputs (one chunk in the unit split), plain sgd, batch 10 (tail 6)",
     R"({"input":[12],"layers":[{"kind":"dense","units":8,"activation":"tanh"},{"kind":"dense","units":3}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":16})",
     1, 1, 12, 3, 236, 10, 3, LrScheduleKind::Constant},
    {"relu, 784 inputs (the unit split's ring reloads chunks), sgd momentum, batch 50 (tail 30)",
     R"({"input":[1,28,28],"layers":[{"kind":"flatten"},{"kind":"dense","units":32,"activation":"relu"},{"kind":"dense","units":10}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.05,"momentum":0.9},"seed":15})",
     1, 28, 28, 10, 730, 50, 2, LrScheduleKind::Constant},
};

// A learning rate of 1e30: the first step's loss is finite, its update overflows, the second step's loss is not.
// The fused step stops at the unfused run's (and the CPU's) step with the same last finite weights (the initial
// ones: the backup of a launch in which one step applied).
void testFusedStepDivergence() {
  const ModelSpec spec = parseModelSpec(
      R"({"input":[3,5,5],"layers":[{"kind":"flatten"},{"kind":"dense","units":16,"activation":"relu"},
          {"kind":"dense","units":3}],"loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":1e30},"seed":1})");
  const Data train = bands(400, 3, 5, 5, 3, 61);
  const DatasetView tv = train.view();
  auto gpu = createBackend(DeviceKind::CUDA);
  auto gpuRun = [&](cuda::Switch fused) {
    cuda::ScopedKernelOverride force([&](cuda::KernelOverrides& k) { k.fusedStep = fused; });
    return gpu->train(spec, tv, nullptr, runOptions(2, 20), nullptr, nullptr);
  };
  const TrainResult c = createBackend(DeviceKind::CPU, 2)->train(spec, tv, nullptr, runOptions(2, 20), nullptr, nullptr);
  const TrainResult off = gpuRun(cuda::Switch::Off), on = gpuRun(cuda::Switch::On);
  CHECK_MSG(on.status == TrainStatus::Diverged && off.status == TrainStatus::Diverged && c.status == TrainStatus::Diverged &&
                on.steps == off.steps && on.steps == c.steps && allFinite(on.parameters),
            "fused step, divergence: stopped at the unfused run's and the CPU's step (" + std::to_string(on.steps) + ", " +
                std::to_string(off.steps) + ", " + std::to_string(c.steps) + "): " + on.message);
  CHECK_MSG(relError(on.parameters, off.parameters, 1e-3) <= 1e-6 && relError(on.parameters, c.parameters, 1e-3) <= 1e-6,
            "fused step, divergence: the same last finite weights");
}

// Each case with the fused step on and off and on the CPU: the fused run takes the path (its bits differ from
// the unfused run's where the GPU has the cluster), its weights and per-epoch losses are the CPU's within the
// whole-run tolerances, and it is deterministic.
void testFusedStep(cuda::MlpSplit split) {
  const cuda::ScopedKernelOverride pick([&](cuda::KernelOverrides& k) { k.mlpSplit = split; });
  const std::string splitName = split == cuda::MlpSplit::Units ? "unit split" : "column split";
  std::printf("the fused MLP step (%s), against the unfused CUDA run and the CPU\n", splitName.c_str());
  auto cpu = createBackend(DeviceKind::CPU, 2);
  auto gpu = createBackend(DeviceKind::CUDA);
  for (const FusedCase& c : kFusedRuns) {
    const ModelSpec spec = parseModelSpec(c.spec);
    const Data train = bands(c.count, c.C, c.H, c.W, c.classes, 51);
    const Data valid = bands(200, c.C, c.H, c.W, c.classes, 52);
    const DatasetView tv = train.view(), vv = valid.view();
    TrainOptions o = runOptions(c.epochs, c.batch);
    o.lrSchedule.kind = c.schedule;
    o.lrSchedule.maxLr = 0.01;
    const std::string name = splitName + ", " + c.name;
    const cuda::MlpStepShape shape = cuda::mlpStepShape(planNetwork(spec), spec.optimizer, c.batch);
    const bool fusable = split == cuda::MlpSplit::Units ? cuda::mlp_unit_step_layout(shape).blocks > 0
                                                        : cuda::mlp_step_blocks(shape) > 0;
    const cuda::DeviceCaps& caps = cuda::currentDeviceCaps();
    if (caps.clusterLaunch && caps.computeMajor >= 9)
      CHECK_MSG(fusable, name + ": a GPU with clusters (sm_90+) runs the fused step (it fits and co-schedules)");
    CHECK_MSG(cuda::mlpStepRefusal(planNetwork(spec), {}).empty(), name + ": the fused step takes the network");
    auto gpuRun = [&](cuda::Switch fused) {
      cuda::ScopedKernelOverride force([&](cuda::KernelOverrides& k) { k.fusedStep = fused; });
      return gpu->train(spec, tv, &vv, o, nullptr, nullptr);
    };
    const TrainResult ref = cpu->train(spec, tv, &vv, o, nullptr, nullptr);
    const TrainResult off = gpuRun(cuda::Switch::Off);
    const TrainResult on = gpuRun(cuda::Switch::On);
    CHECK_MSG(on.status == TrainStatus::Completed && on.steps == ref.steps && on.history.size() == ref.history.size(),
              name + ": completed " + std::to_string(on.steps) + " steps");
    if (fusable) CHECK_MSG(on.parameters != off.parameters, name + ": the fused step ran (its bits differ from the unfused run's)");
    else std::printf("  note  %s: no cluster for the fused step on this GPU (the unfused path ran)\n", c.name);
    const double wErr = relError(on.parameters, ref.parameters, 1e-3);
    const double wErrOff = relError(off.parameters, ref.parameters, 1e-3);
    CHECK_MSG(wErr <= 2e-3, name + ": final weights vs the CPU (rel error " + nnstudio_test::num(wErr) + "; unfused " +
                                nnstudio_test::num(wErrOff) + ")");
    for (size_t e = 0; e < ref.history.size() && e < on.history.size(); ++e) {
      const EpochStats &ea = ref.history[e], &eb = on.history[e];
      const bool close = std::fabs(ea.trainLoss - eb.trainLoss) <= 1e-3 * (1 + ea.trainLoss) &&
                         std::fabs(ea.trainAccuracy - eb.trainAccuracy) <= 0.01 &&
                         std::fabs(ea.validationLoss - eb.validationLoss) <= 1e-3 * (1 + ea.validationLoss);
      CHECK_MSG(close, name + ": epoch " + std::to_string(e + 1) + " train loss " + nnstudio_test::num(eb.trainLoss) +
                           " vs " + nnstudio_test::num(ea.trainLoss) + ", accuracy " + nnstudio_test::num(eb.trainAccuracy) +
                           " vs " + nnstudio_test::num(ea.trainAccuracy));
    }
    CHECK_MSG(gpuRun(cuda::Switch::On).parameters == on.parameters, name + ": deterministic");
    // TF32: one TF32 product per multiply in its two products (1xTF32 instead of 3xTF32)
    o.precision = Precision::Tf32;
    const TrainResult tf32 = gpuRun(cuda::Switch::On);
    const double tErr = relError(tf32.parameters, on.parameters, 1e-3);
    CHECK_MSG(tf32.status == TrainStatus::Completed && tErr <= 5e-2 && (!fusable || tf32.parameters != on.parameters),
              name + ": TF32 takes its own products and stays near the FP32 run (rel error " + nnstudio_test::num(tErr) + ")");
    CHECK_MSG(gpuRun(cuda::Switch::On).parameters == tf32.parameters, name + ": TF32 deterministic");
    o.precision = Precision::Mixed;  // the fused step keeps TF32 products in a mixed run (K slices of 8, not 16)
    if (fusable) CHECK_MSG(gpuRun(cuda::Switch::On).parameters == tf32.parameters, name + ": mixed runs the fused step in TF32");
  }
  testFusedStepDivergence();
  {  // a stop after 2 epochs and a resume give the 4-epoch run's bits (the state written back at each launch's end)
    cuda::ScopedKernelOverride fused([](cuda::KernelOverrides& o) { o.fusedStep = cuda::Switch::On; });
    const std::string label = "fused MLP step (" + splitName + "), SGD with momentum";
    nnstudio_test::checkResumeExact(*gpu, label.c_str(),
                                    R"({"input":[1,8,8],"layers":[{"kind":"flatten"},{"kind":"dense","units":16,"activation":"relu"},
                                      {"kind":"dense","units":2}],"loss":"softmax_cross_entropy",
                                      "optimizer":{"kind":"sgd","lr":0.05,"momentum":0.9},"seed":3})",
                                    LrSchedule{});
  }
}

// ---- TF32 and mixed precision ----

// A run with Precision::Tf32 (Mixed) takes the tensor-core convolutions with one TF32 (BF16) product per
// multiply: its weights differ from the FP32 run's (the path is taken, where the GPU has tensor cores and no
// NNSTUDIO_CONV_TC override decides), stay close to them (`near`: BF16 rounds 8x coarser), learn, and are the
// same bits run after run. The CPU ignores the setting (its run equals its FP32 run).
ModelSpec reducedPrecisionSpec() {
  return parseModelSpec(
      R"({"input":[1,16,16],"layers":[{"kind":"conv2d","filters":16,"kernel":[3,3],"padding":"same","activation":"relu"},
        {"kind":"conv2d","filters":32,"kernel":[3,3],"padding":"same","activation":"relu"},{"kind":"maxpool2d","size":2},
        {"kind":"flatten"},{"kind":"dense","units":4}],"loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":13})");
}

void testReducedPrecision(Precision precision, const std::string& name, double near) {
  std::printf("%s precision\n", name.c_str());
  const ModelSpec spec = reducedPrecisionSpec();
  const Data train = bands(960, 1, 16, 16, 4, 41), valid = bands(300, 1, 16, 16, 4, 42);
  const DatasetView tv = train.view(), vv = valid.view();
  auto gpu = createBackend(DeviceKind::CUDA);
  auto cpu = createBackend(DeviceKind::CPU, 2);
  TrainOptions fp32 = runOptions(2, 32), reduced = fp32, tf32 = fp32;
  reduced.precision = precision;
  tf32.precision = Precision::Tf32;
  const TrainResult a = gpu->train(spec, tv, &vv, fp32, nullptr, nullptr);
  const TrainResult b = gpu->train(spec, tv, &vv, reduced, nullptr, nullptr);
  CHECK_MSG(b.status == TrainStatus::Completed && b.steps == a.steps, name + ": the run completes");
  const double wErr = relError(b.parameters, a.parameters, 1e-3);
  // the reduced arithmetic runs where the GPU (and the build's code) has it: FP16 from Turing, TF32 and BF16
  // from Ampere on; a mixed run on Turing takes FP16
  const cuda::DeviceCaps& caps = cuda::currentDeviceCaps();
  const cuda::ConvTcMode mode = cuda::convTcModeFor(caps, cuda::kernelOverrides(), precision);
  const bool runs = cuda::kernelOverrides().convTc == cuda::ConvTcMode::Auto && cuda::tcMathRuns(caps, cuda::tcMathFor(mode));
  if (runs) CHECK_MSG(b.parameters != a.parameters, name + ": the weights differ from the fp32 run's (its kernels ran)");
  else CHECK_MSG(b.parameters == a.parameters, name + " without tensor cores (or under NNSTUDIO_CONV_TC): the fp32 run's bits");
  if (runs && precision == Precision::Mixed)
    CHECK_MSG(b.parameters != gpu->train(spec, tv, &vv, tf32, nullptr, nullptr).parameters,
              name + ": the weights differ from the tf32 run's (16-bit products)");
  std::printf("  note  %s: final weights' rel error against the fp32 run %s\n", name.c_str(), nnstudio_test::num(wErr).c_str());
  CHECK_MSG(wErr <= near, name + ": final weights near the fp32 run's (rel error " + nnstudio_test::num(wErr) + ")");
  const EpochStats& eb = b.history.back();
  CHECK_MSG(eb.hasValidation && eb.validationAccuracy >= 0.9,
            name + ": it learns (validation accuracy " + nnstudio_test::num(eb.validationAccuracy) + ")");
  const TrainResult again = gpu->train(spec, tv, &vv, reduced, nullptr, nullptr);
  CHECK_MSG(again.parameters == b.parameters, name + ": deterministic on the GPU");
  const TrainResult onCpu = cpu->train(spec, tv, &vv, reduced, nullptr, nullptr);
  const TrainResult onCpuFp32 = cpu->train(spec, tv, &vv, fp32, nullptr, nullptr);
  CHECK_MSG(onCpu.parameters == onCpuFp32.parameters, name + " on the CPU: the FP32 run's bits");
}

// ---- FP16 products with loss scaling ----

// The note a loss-scaled run leaves (driver.cpp noteLossScaling): the steps it skipped, of how many, and its
// final scale's exponent; false without one.
bool lossScalingNote(const TrainResult& r, long long& skipped, long long& steps, int& log2) {
  for (const std::string& note : r.notes) {
    const size_t colon = note.find("loss scaling"), scale = note.find("2^");
    if (colon == std::string::npos || scale == std::string::npos) continue;
    const size_t figures = note.find(": ", colon);
    if (figures == std::string::npos ||
        std::sscanf(note.c_str() + figures + 2, "%lld of %lld steps skipped", &skipped, &steps) != 2)
      return false;
    log2 = std::atoi(note.c_str() + scale + 2);
    return true;
  }
  return false;
}

// A mixed run as a GPU without BF16 runs it (NNSTUDIO_CUDA_MIXED=fp16; the op table checks the FP16 kernels
// themselves): FP16 products, not BF16's; a loss scale that starts at 2^16 and halves at each overflow, the
// step skipped; near the FP32 run and learning, as the BF16 run is. A scale far too large (2^30) overflows
// the first steps' gradients: those steps are skipped, the scale falls to where the gradients fit, and the
// run still learns with finite weights.
void testFp16LossScaling() {
  if (cuda::currentDeviceCaps().tensorCores < cuda::TensorCores::Fp16MmaSync ||
      cuda::kernelOverrides().convTc != cuda::ConvTcMode::Auto) {
    std::puts("FP16 loss scaling: skipped (no FP16 tensor cores, or NNSTUDIO_CONV_TC decides)");
    return;
  }
  {
    cuda::ScopedKernelOverride fp16([](cuda::KernelOverrides& o) { o.mixedHalf = cuda::MixedHalf::Fp16; });
    testReducedPrecision(Precision::Mixed, "mixed as FP16 with loss scaling", 2e-2);
  }
  const ModelSpec spec = reducedPrecisionSpec();
  const Data train = bands(960, 1, 16, 16, 4, 41), valid = bands(300, 1, 16, 16, 4, 42);
  const DatasetView tv = train.view(), vv = valid.view();
  auto gpu = createBackend(DeviceKind::CUDA);
  TrainOptions mixed = runOptions(2, 32);
  mixed.precision = Precision::Mixed;
  long long skipped = 0, steps = 0;
  int log2 = 0;
  // a plain mixed run: BF16 where the GPU (and the build's code) has it, no loss scaling; else FP16, scaled
  const TrainResult bf16 = gpu->train(spec, tv, &vv, mixed, nullptr, nullptr);
  const bool hasBf16 = cuda::currentDeviceCaps().tf32TensorCores();
  CHECK_MSG(lossScalingNote(bf16, skipped, steps, log2) != hasBf16,
            hasBf16 ? "a mixed run with BF16 products does not scale its loss"
                    : "a mixed run without BF16 (Turing code) takes FP16 and scales its loss");
  auto fp16Run = [&](int startLog2, const TrainOptions& o) {
    cuda::ScopedKernelOverride fp16([&](cuda::KernelOverrides& k) {
      k.mixedHalf = cuda::MixedHalf::Fp16;
      k.lossScaleLog2 = startLog2;
    });
    return gpu->train(spec, tv, &vv, o, nullptr, nullptr);
  };
  const TrainResult plain = fp16Run(cuda::kLossScaleStartLog2, mixed);
  if (cuda::currentDeviceCaps().tf32TensorCores())
    CHECK_MSG(plain.parameters != bf16.parameters, "FP16: its own products, not BF16's");
  const bool noted = lossScalingNote(plain, skipped, steps, log2);
  std::printf("  note  FP16 from 2^16: %lld of %lld steps skipped, the scale ends at 2^%d\n", skipped, steps, log2);
  CHECK_MSG(noted && steps == plain.steps && log2 == cuda::kLossScaleStartLog2 - int(skipped) && skipped <= 4,
            "FP16: the run notes its loss scaling; the scale fell once per skipped step (no growth within 2000 steps)");
  TrainOptions longer = mixed;
  longer.epochs = 3;
  const TrainResult high = fp16Run(30, longer);
  const bool highNoted = lossScalingNote(high, skipped, steps, log2);
  std::printf("  note  FP16 from 2^30: %lld of %lld steps skipped, the scale ends at 2^%d\n", skipped, steps, log2);
  CHECK_MSG(high.status == TrainStatus::Completed && highNoted && skipped >= 3 && log2 == 30 - int(skipped),
            "FP16 from 2^30: the overflowing steps are skipped and the scale halves at each");
  bool finite = true;
  for (float w : high.parameters) finite = finite && std::isfinite(w);
  const EpochStats& last = high.history.back();
  CHECK_MSG(finite && last.hasValidation && last.validationAccuracy >= 0.9,
            "FP16 from 2^30: finite weights, and it learns (validation accuracy " +
                nnstudio_test::num(last.validationAccuracy) + ")");
}

// ---- regression, class weights, weight decay ----

// (count, 8) features in [-1, 1] and `width` target columns: a linear mix plus a product, with noise.
struct TaskData {
  std::vector<float> x, t;
  std::vector<int32_t> labels;  // -1 each, as the app's regression datasets
  int width = 1;
  DatasetView view() const {
    DatasetView v{x.data(), labels.data(), int64_t(labels.size()), 8};
    v.targets = t.data();
    v.targetWidth = width;
    return v;
  }
};

TaskData taskData(int count, int width, uint64_t seed) {
  TaskData d;
  d.width = width;
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    float f[8];
    for (float& v : f) v = float(2 * rng.uniform() - 1);
    d.x.insert(d.x.end(), f, f + 8);
    d.t.push_back(1.5f * f[0] - f[1] + 0.5f * f[2] * f[3] + 0.05f * float(rng.uniform()));
    if (width > 1) d.t.push_back(f[4] * f[5] - 0.7f * f[6]);
    d.labels.push_back(-1);
  }
  return d;
}

// One batch: outputs and gradients of a regression head and of a class-weighted loss, CUDA vs CPU.
void testTaskNetworks() {
  std::printf("one batch: regression heads and class weights, CUDA vs CPU\n");
  const char* regression[] = {
      R"({"input":[8],"task":"regression","layers":[{"kind":"dense","units":12,"activation":"relu"},{"kind":"dense","units":2}],
         "loss":"mse","optimizer":{"kind":"adam","lr":0.001},"seed":3})",
      R"({"input":[8],"task":"regression","layers":[{"kind":"dense","units":12,"activation":"tanh"},{"kind":"dense","units":2}],
         "loss":"huber","huberDelta":0.3,"optimizer":{"kind":"adam","lr":0.001},"seed":4})",
      R"({"input":[8],"task":"regression","layers":[{"kind":"dense","units":12,"activation":"tanh"},{"kind":"dense","units":2}],
         "loss":"mae","optimizer":{"kind":"sgd","lr":0.01},"seed":5})"};
  const TaskData d = taskData(37, 2, 61);
  for (const char* text : regression) {
    const ModelSpec spec = parseModelSpec(text);
    const NetworkPlan plan = planNetwork(spec);
    const int N = 37;
    const auto params = initialParameters(spec, spec.seed);
    std::vector<float> cpuOut, cpuGrad;
    const double cpuLoss =
        forwardBackwardCpu(spec, params, d.x.data(), nullptr, N, false, cpuOut, cpuGrad, 0, d.t.data());
    cuda::Network net(spec, N);
    CHECK_MSG(!net.headFused(), std::string(lossName(spec.loss)) + " regression: the head is not fused");
    DeviceVector<float> dParams(params), dX(d.x), dT(d.t), dGrad(plan.parameterCount);
    DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{cuda::StepState{}});
    LossTargets targets;
    targets.targets = dT.ptr;
    net.forward(nullptr, dParams.ptr, dX.ptr, N, true, 0, dState.ptr);
    net.loss(nullptr, targets, N, dState.ptr);
    net.backward(nullptr, dParams.ptr, dGrad.ptr, N);
    const cuda::StepState s = dState.download()[0];
    const double gradErr = relError(dGrad.download(), cpuGrad, 1e-3);
    CHECK_MSG(gradErr <= 1e-4 && std::fabs(s.batchLossSum - cpuLoss) <= 1e-5 * (1 + cpuLoss),
              std::string(lossName(spec.loss)) + " regression: gradients (rel error " + nnstudio_test::num(gradErr) +
                  "), loss " + nnstudio_test::num(s.batchLossSum) + " vs " + nnstudio_test::num(cpuLoss));
  }
  {
    const ModelSpec spec = parseModelSpec(kRuns[1].spec);
    const NetworkPlan plan = planNetwork(spec);
    const int N = 29;
    const Data b = bands(N, 3, 5, 5, 3, 62);
    const std::vector<float> weights = {0.4f, 2.5f, 1.1f};
    const auto params = initialParameters(spec, spec.seed);
    std::vector<float> cpuOut, cpuGrad;
    const double cpuLoss = forwardBackwardCpu(spec, params, b.x.data(), b.y.data(), N, false, cpuOut, cpuGrad, 0,
                                              nullptr, weights.data());
    cuda::Network net(spec, N, false, true, /*weightedLoss=*/true);
    DeviceVector<float> dParams(params), dX(b.x), dW(weights), dGrad(plan.parameterCount);
    DeviceVector<int32_t> dLabels(b.y);
    DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{cuda::StepState{}});
    LossTargets targets;
    targets.labels = dLabels.ptr;
    targets.classWeights = dW.ptr;
    net.forward(nullptr, dParams.ptr, dX.ptr, N, true, 0, dState.ptr);
    net.loss(nullptr, targets, N, dState.ptr);
    net.backward(nullptr, dParams.ptr, dGrad.ptr, N);
    const cuda::StepState s = dState.download()[0];
    const double gradErr = relError(dGrad.download(), cpuGrad, 1e-3);
    CHECK_MSG(!net.headFused() && gradErr <= 1e-4 && std::fabs(s.batchLossSum - cpuLoss) <= 1e-5 * (1 + cpuLoss),
              "class-weighted cross-entropy: gradients (rel error " + nnstudio_test::num(gradErr) + "), loss " +
                  nnstudio_test::num(s.batchLossSum) + " vs " + nnstudio_test::num(cpuLoss));
  }
}

struct Checkpoints : ProgressSink {
  std::vector<TrainState> states;
  bool wantsCheckpoints() const override { return true; }
  void onCheckpoint(const TrainState& s) override { states.push_back(s); }
};

bool close(double a, double b, double rel) { return std::fabs(a - b) <= rel * (1 + std::fabs(b)); }

// Whole runs with the task features, CUDA vs CPU: weights, history (the regression metrics included) and
// evaluation; on the GPU the same seed gives the same bits and a resumed run the uninterrupted one's.
void testTaskRuns() {
  std::printf("whole runs: regression, class weights, weight decay, CUDA vs CPU\n");
  auto cpu = createBackend(DeviceKind::CPU, 2);
  auto gpu = createBackend(DeviceKind::CUDA);
  struct TaskRun {
    const char* name;
    const char* spec;
    int width, batch, epochs;
  };
  const TaskRun runs[] = {
      {"regression mse, adam + weight decay, 2 columns",
       R"({"input":[8],"task":"regression","layers":[{"kind":"dense","units":32,"activation":"relu"},{"kind":"dense","units":2}],
          "loss":"mse","optimizer":{"kind":"adam","lr":0.005,"weightDecay":0.001},"seed":13})",
       2, 16, 4},
      {"regression huber 0.5, sgd momentum + weight decay, last partial batch",
       R"({"input":[8],"task":"regression","layers":[{"kind":"dense","units":24,"activation":"tanh"},{"kind":"dense","units":1}],
          "loss":"huber","huberDelta":0.5,"optimizer":{"kind":"sgd","lr":0.05,"momentum":0.9,"weightDecay":0.01},"seed":14})",
       1, 30, 4},
      {"regression mae, 1 column",
       R"({"input":[8],"task":"regression","layers":[{"kind":"dense","units":24,"activation":"tanh"},{"kind":"dense","units":1}],
          "loss":"mae","optimizer":{"kind":"adam","lr":0.01},"seed":15})",
       1, 32, 3},
  };
  for (const TaskRun& c : runs) {
    const ModelSpec spec = parseModelSpec(c.spec);
    const TaskData train = taskData(1000, c.width, 71), valid = taskData(200, c.width, 72);
    const DatasetView tv = train.view(), vv = valid.view();
    TrainOptions o = runOptions(c.epochs, c.batch);
    o.targetMean.assign(size_t(c.width), 3.0f);  // the metrics in "original" units: y * 2 + 3
    o.targetStd.assign(size_t(c.width), 2.0f);
    const TrainResult a = cpu->train(spec, tv, &vv, o, nullptr, nullptr);
    Checkpoints sink;
    const TrainResult b = gpu->train(spec, tv, &vv, o, &sink, nullptr);
    const std::string name = c.name;
    CHECK_MSG(b.status == TrainStatus::Completed && b.steps == a.steps, name + ": completed");
    const double wErr = relError(b.parameters, a.parameters, 1e-3);
    CHECK_MSG(wErr <= 2e-3, name + ": final weights (rel error " + nnstudio_test::num(wErr) + ")");
    for (size_t e = 0; e < a.history.size() && e < b.history.size(); ++e) {
      const EpochStats &ea = a.history[e], &eb = b.history[e];
      CHECK_MSG(eb.hasRegression && close(eb.trainLoss, ea.trainLoss, 1e-3) && close(eb.validationLoss, ea.validationLoss, 1e-3) &&
                    close(eb.trainR2, ea.trainR2, 1e-3) && close(eb.validationR2, ea.validationR2, 1e-3) &&
                    close(eb.validationRmse, ea.validationRmse, 1e-3) && close(eb.validationMae, ea.validationMae, 1e-3) &&
                    eb.hasValidationMape == ea.hasValidationMape,
                name + ": epoch " + std::to_string(e + 1) + " loss " + nnstudio_test::num(eb.trainLoss) + " vs " +
                    nnstudio_test::num(ea.trainLoss) + ", validation R^2 " + nnstudio_test::num(eb.validationR2) + " vs " +
                    nnstudio_test::num(ea.validationR2));
    }
    CHECK_MSG(b.history.back().validationR2 > 0.5, name + ": it learned (R^2 " + nnstudio_test::num(b.history.back().validationR2) + ")");
    const TrainResult again = gpu->train(spec, tv, &vv, o, nullptr, nullptr);
    CHECK_MSG(again.parameters == b.parameters, name + ": deterministic on the GPU");
    TrainOptions rest = o;
    rest.resume = &sink.states[0];
    const TrainResult resumed = gpu->train(spec, tv, &vv, rest, nullptr, nullptr);
    CHECK_MSG(resumed.parameters == b.parameters && resumed.history.back().validationR2 == b.history.back().validationR2,
              name + ": resumed after epoch 1, the uninterrupted run's bits");
    // evaluation: outputs against the CPU's, the loss, and without targets
    const EvalResult ec = cpu->evaluate(spec, a.parameters, vv, 64), eg = gpu->evaluate(spec, a.parameters, vv, 64);
    CHECK_MSG(eg.outputs.size() == size_t(vv.count) * size_t(c.width) && relError(eg.outputs, ec.outputs, 1e-3) <= 1e-4 &&
                  close(eg.loss, ec.loss, 1e-4) && eg.predictions.empty() && eg.classes == 0,
              name + ": evaluation outputs and loss " + nnstudio_test::num(eg.loss) + " vs " + nnstudio_test::num(ec.loss));
    DatasetView unlabeled = vv;
    unlabeled.targets = nullptr;
    const EvalResult ep = gpu->evaluate(spec, a.parameters, unlabeled, 64);
    CHECK_MSG(ep.outputs == eg.outputs && ep.loss == 0, name + ": evaluation without targets");
  }
  {
    // classification: class weights and weight decay, validation loss weighted on both
    ModelSpec spec = parseModelSpec(kRuns[1].spec);
    spec.optimizer.weightDecay = 0.002f;
    const Data train = bands(1390, 3, 5, 5, 3, 31), valid = bands(300, 3, 5, 5, 3, 32);
    const DatasetView tv = train.view(), vv = valid.view();
    TrainOptions o = runOptions(3, 20);
    o.classWeights = {0.5f, 2.0f, 1.25f};
    const TrainResult a = cpu->train(spec, tv, &vv, o, nullptr, nullptr);
    const TrainResult b = gpu->train(spec, tv, &vv, o, nullptr, nullptr);
    const double wErr = relError(b.parameters, a.parameters, 1e-3);
    bool history = a.history.size() == b.history.size();
    for (size_t e = 0; history && e < a.history.size(); ++e)
      history = close(b.history[e].trainLoss, a.history[e].trainLoss, 1e-3) &&
                close(b.history[e].validationLoss, a.history[e].validationLoss, 1e-3) && !b.history[e].hasRegression;
    CHECK_MSG(wErr <= 2e-3 && history, "class weights + weight decay: weights (rel error " + nnstudio_test::num(wErr) +
                                           ") and weighted losses as the CPU's");
    TrainOptions unweighted = runOptions(3, 20);
    const TrainResult u = gpu->train(spec, tv, &vv, unweighted, nullptr, nullptr);
    CHECK_MSG(u.parameters != b.parameters, "class weights change the GPU run");
  }
}

struct Recorder : ProgressSink {
  std::vector<StepProgress> steps;
  std::vector<EpochStats> epochs;
  std::function<void(const StepProgress&)> onEachStep;
  void onStep(const StepProgress& s) override {
    steps.push_back(s);
    if (onEachStep) onEachStep(s);
  }
  void onEpoch(const EpochStats& e) override { epochs.push_back(e); }
};

void testRunBehaviour() {
  std::printf("progress, cancel, pause, divergence, errors\n");
  auto gpu = createBackend(DeviceKind::CUDA);
  const ModelSpec spec = parseModelSpec(kRuns[1].spec);
  const Data train = bands(4000, 3, 5, 5, 3, 41);
  const DatasetView tv = train.view();
  {
    Recorder rec;
    TrainOptions o = runOptions(2, 8);
    o.progressIntervalSeconds = 0.0;
    const TrainResult r = gpu->train(spec, tv, nullptr, o, &rec, nullptr);
    bool ordered = !rec.steps.empty();
    for (size_t i = 1; i < rec.steps.size(); ++i) ordered = ordered && rec.steps[i].globalStep > rec.steps[i - 1].globalStep;
    CHECK_MSG(ordered && rec.steps.back().globalStep == r.steps && rec.steps.back().step == rec.steps.back().stepsPerEpoch,
              "step events in order, the last at the run's last step (" + std::to_string(rec.steps.size()) + " events)");
    CHECK(rec.epochs.size() == 2 && rec.epochs[1].epoch == 2 && rec.epochs[1].seconds > 0);
    bool sane = true;
    for (const StepProgress& s : rec.steps) sane = sane && std::isfinite(s.loss) && s.loss > 0 && s.totalSteps == 1000;
    CHECK_MSG(sane, "every step event has a finite loss and the run's total steps");
  }
  {
    TrainControl control;
    Recorder rec;
    TrainOptions o = runOptions(5, 8);
    o.progressIntervalSeconds = 0.0;
    rec.onEachStep = [&](const StepProgress& s) {
      if (s.globalStep >= 20) control.cancel = true;
    };
    const TrainResult r = gpu->train(spec, tv, nullptr, o, &rec, &control);
    CHECK_MSG(r.status == TrainStatus::Cancelled && r.steps >= 20 && r.steps < 2500 && allFinite(r.parameters) &&
                  r.message.find("cancelled at epoch 1") != std::string::npos,
              "cancel stops the run within the queued steps (" + std::to_string(r.steps) + " steps): " + r.message);
    TrainControl early;
    early.cancel = true;
    const TrainResult none = gpu->train(spec, tv, nullptr, o, nullptr, &early);
    CHECK_MSG(none.status == TrainStatus::Cancelled && none.steps == 0 && none.parameters == initialParameters(spec, spec.seed),
              "cancelled before the first step: the initial weights");
  }
  {
    TrainControl control;
    std::thread resumer;
    Recorder rec;
    TrainOptions o = runOptions(1, 8);
    o.progressIntervalSeconds = 0.0;
    std::atomic<bool> paused{false};
    rec.onEachStep = [&](const StepProgress& s) {
      if (!paused && s.globalStep >= 2) {
        paused = true;
        control.pause = true;
        resumer = std::thread([&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          control.pause = false;
        });
      }
    };
    const auto t0 = std::chrono::steady_clock::now();
    const TrainResult r = gpu->train(spec, tv, nullptr, o, &rec, &control);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (resumer.joinable()) resumer.join();
    CHECK_MSG(r.status == TrainStatus::Completed && r.steps == 500 && wall >= 0.2 && r.history[0].seconds < wall - 0.15,
              "pause holds the run and is not counted in the epoch (" + nnstudio_test::num(r.history[0].seconds) + " s of " +
                  nnstudio_test::num(wall) + " s)");
  }
  {
    // a learning rate that explodes: Diverged, with the weights of the last step whose loss was finite
    const ModelSpec wild = parseModelSpec(
        R"({"input":[3,5,5],"layers":[{"kind":"flatten"},{"kind":"dense","units":16,"activation":"relu"},
            {"kind":"dense","units":3}],"loss":"mse","optimizer":{"kind":"sgd","lr":1000},"seed":1})");
    const TrainResult c = createBackend(DeviceKind::CPU, 2)->train(wild, tv, nullptr, runOptions(3, 8), nullptr, nullptr);
    const TrainResult g = gpu->train(wild, tv, nullptr, runOptions(3, 8), nullptr, nullptr);
    CHECK_MSG(g.status == TrainStatus::Diverged && allFinite(g.parameters) &&
                  g.message.find("training diverged at epoch") != std::string::npos,
              "divergence: " + g.message);
    CHECK_MSG(c.status == TrainStatus::Diverged && c.steps == g.steps && relError(g.parameters, c.parameters, 1e-3) <= 1e-3,
              "divergence at the CPU's step (" + std::to_string(g.steps) + " vs " + std::to_string(c.steps) +
                  ") with the same last finite weights");
  }
  {
    Data bad = train;
    bad.y[17] = 3;
    const DatasetView bv = bad.view();
    CHECK_THROWS(gpu->train(spec, bv, nullptr, runOptions(1, 8), nullptr, nullptr), EngineError,
                 "label 3 of sample 17 (0-based) is outside [0, 3)");
    DatasetView wrong = tv;
    wrong.featureSize = 74;
    CHECK_THROWS(gpu->evaluate(spec, initialParameters(spec, 0), wrong, 64), EngineError, "each sample has 74 features");
  }
  {
    // far more activation memory than any GPU has (1024 x 512 x 256 x 256 floats, twice): a clear
    // message, and the GPU trains normally afterwards
    const ModelSpec huge = parseModelSpec(
        R"({"input":[1,256,256],"layers":[{"kind":"conv2d","filters":512,"kernel":[3,3],"padding":"same"},{"kind":"flatten"},
            {"kind":"dense","units":2}],"loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":1})");
    Data big;
    big.featureSize = 256 * 256;
    big.x.assign(size_t(1024) * 256 * 256, 0.5f);
    big.y.assign(1024, 1);
    const DatasetView hv = big.view();
    CHECK_THROWS(gpu->train(huge, hv, nullptr, runOptions(1, 1024), nullptr, nullptr), EngineError,
                 "too little free memory");
    const TrainResult after = gpu->train(spec, tv, nullptr, runOptions(1, 50), nullptr, nullptr);
    CHECK_MSG(after.status == TrainStatus::Completed && after.steps == 80, "after running out of memory the GPU still trains");
  }
  {
    const std::vector<DeviceInfo> devices = listDevices();
    bool gpuListed = false;
    for (const DeviceInfo& d : devices)
      gpuListed = gpuListed || (d.kind == DeviceKind::CUDA && !d.name.empty() && d.memoryBytes > 0 && d.computeMajor >= 7);
    CHECK_MSG(gpuListed && cudaAvailable(), "listDevices names the GPU with its memory and compute capability");
  }
}

}  // namespace

int main() {
  if (!test::haveCudaDevice()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  try {
    testNetworks("conv + max pool fused where it pays");
    {
      cuda::ScopedKernelOverride fuse([](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::On; });
      testNetworks("conv + max pool fused wherever supported");
    }
    {
      cuda::ScopedKernelOverride never([](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::Off; });
      testNetworks("never fused");
    }
    {
      cuda::ScopedKernelOverride oneStream([](cuda::KernelOverrides& o) { o.weightStream = cuda::Switch::Off; });
      testNetworks("weight gradients on the step's stream");
    }
    {
      cuda::ScopedKernelOverride int32s([](cuda::KernelOverrides& o) {
        o.fusion = cuda::Switch::On;
        o.convPoolWindowBytes = cuda::Switch::Off;
      });
      testNetworks("conv + max pool fused wherever supported, the first one's int32 argmax (no window bytes)");
    }
    testWholeRuns();
    testFusedStep(cuda::MlpSplit::Columns);
    testFusedStep(cuda::MlpSplit::Units);
    testReducedPrecision(Precision::Tf32, "tf32", 5e-2);  // 2.6e-3 on an H100
    testReducedPrecision(Precision::Mixed, "mixed", 2e-2);  // 5.5e-3 on an H100
    testFp16LossScaling();
    testTaskNetworks();
    testTaskRuns();
    testRunBehaviour();
    auto gpu = createBackend(DeviceKind::CUDA);
    nnstudio_test::checkTrainControl(*gpu, /*exactSteps=*/false);
    {  // above, their MLPs took the fused step where the GPU has clusters (mlp_step.h); here, the separate kernels
      cuda::ScopedKernelOverride unfused([](cuda::KernelOverrides& o) { o.fusedStep = cuda::Switch::Off; });
      std::printf("(the same without the fused MLP step)\n");
      testRunBehaviour();
      nnstudio_test::checkTrainControl(*gpu, /*exactSteps=*/false);
    }
  } catch (const std::exception& e) {
    std::printf("  FAIL  unexpected exception: %s\n", e.what());
    ++nnstudio_test::failed();
  }
  return nnstudio_test::summary();
}
#else
#include <cstdio>
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
