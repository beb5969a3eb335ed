// The op table's normalisation rows (test_cuda_ops.cpp): batchnorm forward (training: output, saved
// statistics and the running statistics' update; evaluation), backward (training and evaluation: input,
// gamma and beta gradients), the global average pool, gelu, and whole networks of these layers (one
// training step and an evaluation pass of cuda::Network against cpu::Network). The GPU reduces in fp32
// (Welford per slice, slices combined in double), the CPU in double: 1e-5 of the values' scale forward,
// 1e-4 for the gradients' sums over up to 100k values. Each batchnorm row runs three ways: the chooser's
// kernels, the two-pass kernels, and a cluster per channel (batchnorm_cluster.cu, forced on wherever the
// GPU has clusters, so small and odd shapes and empty slices run it too); the networks run with the
// chooser's kernels and again with the clusters forced on.
#pragma once

#ifdef NNSTUDIO_WITH_CUDA

#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cpu/network.h"
#include "cpu/thread_pool.h"
#include "cuda/device_caps.h"
#include "cuda/kernels.h"
#include "cuda/network.h"
#include "op_table.h"
#include "ops_dense.h"
#include "ops_small.h"  // kOneKernel
#include "spec/model.h"

namespace nnstudio::test {

struct BatchNormRow {
  int N, C, S;
  bool affine;
  int maxN;        // the network's largest batch (the slices follow it); >= N
  float offset;    // added to the inputs: a mean large against the spread
};

// The batchnorm's kernels a row runs: the chooser's, the two-pass ones, a cluster per channel wherever the
// GPU has clusters (batchnorm_cluster.cu; the two-pass ones elsewhere)
struct BatchNormPath {
  cuda::Switch cluster, quads;
  const char* name;
};
inline constexpr BatchNormPath kBatchNormPaths[] = {
    {cuda::Switch::Auto, cuda::Switch::Auto, "the chooser's kernels"},
    {cuda::Switch::Off, cuda::Switch::Auto, "two passes"},
    {cuda::Switch::On, cuda::Switch::Auto, "a cluster per channel (where the GPU has them; quads where S % 4 == 0)"},
    {cuda::Switch::On, cuda::Switch::Off, "a cluster per channel, a value a load"}};

inline void checkBatchNorm(cpu::ThreadPool& pool, const BatchNormRow& r, uint64_t seed, const BatchNormPath& path) {
  cuda::ScopedKernelOverride use([&](cuda::KernelOverrides& o) {
    o.batchnormCluster = path.cluster;
    o.batchnormQuads = path.quads;
  });
  const std::string shape = "N" + std::to_string(r.N) + " (max " + std::to_string(r.maxN) + ") C" + std::to_string(r.C) +
                            " S" + std::to_string(r.S) + (r.affine ? "" : " not affine") + " offset " +
                            nnstudio_test::num(r.offset);
  const size_t n = size_t(r.N) * r.C * r.S, C = size_t(r.C);
  auto x = randomVector(n, seed, 2.0f);
  for (float& v : x) v += r.offset;
  const auto dy = randomVector(n, seed + 1);
  const auto gamma = randomVector(C, seed + 2, 0.5f), beta = randomVector(C, seed + 3);
  std::vector<float> g = gamma, b = beta;
  for (float& v : g) v += 1.0f;
  auto runMean = randomVector(C, seed + 4, 0.3f), runVar = randomVector(C, seed + 5, 0.4f);
  for (float& v : runVar) v += 1.0f;
  cpu::BatchNormArgs a;
  a.N = r.N, a.C = r.C, a.S = r.S, a.eps = 1e-5f, a.momentum = 0.1f;
  if (r.affine) a.gamma = g.data(), a.beta = b.data();
  // the CPU
  std::vector<float> y(n), saved(2 * C), rm = runMean, rv = runVar, dx(n), dg(C), db(C);
  std::vector<float> yEval(n), savedEval(2 * C), dxEval(n), dgEval(C), dbEval(C);
  cpu::batchnorm_forward_train(pool, y.data(), x.data(), saved.data(), rm.data(), rv.data(), a);
  cpu::batchnorm_backward(pool, dx.data(), dg.data(), db.data(), dy.data(), x.data(), saved.data(), a, true);
  cpu::batchnorm_forward_eval(pool, yEval.data(), x.data(), savedEval.data(), runMean.data(), runVar.data(), a);
  cpu::batchnorm_backward(pool, dxEval.data(), dgEval.data(), dbEval.data(), dy.data(), x.data(), savedEval.data(), a,
                          false);
  // the GPU
  DeviceVector<float> dX(x), dDy(dy), dGamma(g), dBeta(b), dRm(runMean), dRv(runVar), dY(n), dSaved(2 * C), dDx(n),
      dDg(C), dDb(C), work(cuda::batchnorm_workspace(r.maxN, r.C, r.S));
  for (auto* v : {&dY, &dSaved, &dDx, &dDg, &dDb}) poison(*v);
  cuda::BatchNormArgs ga = a;
  ga.gamma = r.affine ? dGamma.ptr : nullptr;
  ga.beta = r.affine ? dBeta.ptr : nullptr;
  {
    Row line("batchnorm training", shape, path.name);
    cuda::batchnorm_forward_train(nullptr, dY.ptr, dX.ptr, dSaved.ptr, dRm.ptr, dRv.ptr, ga, r.maxN, work.ptr);
    line.compare("forward", dY.download(), y, relative(1e-5));
    line.compare("batch mean, inverse std", dSaved.download(), saved, relative(1e-5, 1e-20));
    line.compare("running mean", dRm.download(), rm, relative(1e-5));
    line.compare("running variance (unbiased)", dRv.download(), rv, relative(1e-5));
    cuda::batchnorm_backward(nullptr, dDx.ptr, r.affine ? dDg.ptr : nullptr, r.affine ? dDb.ptr : nullptr, dDy.ptr,
                             dX.ptr, dSaved.ptr, ga, true, r.maxN, work.ptr);
    line.compare("input gradient", dDx.download(), dx, relative(1e-4));
    if (r.affine) {
      line.compare("gamma gradient", dDg.download(), dg, relative(1e-4));
      line.compare("beta gradient", dDb.download(), db, relative(1e-4));
    }
  }
  {
    Row line("batchnorm evaluation", shape, path.name);
    for (auto* v : {&dY, &dSaved, &dDx, &dDg, &dDb}) poison(*v);
    DeviceVector<float> dRm0(runMean), dRv0(runVar);
    cuda::batchnorm_forward_eval(nullptr, dY.ptr, dX.ptr, dSaved.ptr, dRm0.ptr, dRv0.ptr, ga);
    line.compare("forward", dY.download(), yEval, relative(1e-5));
    line.check(dRm0.download() == runMean && dRv0.download() == runVar, "running statistics unchanged");
    cuda::batchnorm_backward(nullptr, dDx.ptr, r.affine ? dDg.ptr : nullptr, r.affine ? dDb.ptr : nullptr, dDy.ptr,
                             dX.ptr, dSaved.ptr, ga, false, r.maxN, work.ptr);
    line.compare("input gradient", dDx.download(), dxEval, relative(1e-5));
    if (r.affine) line.compare("gamma gradient", dDg.download(), dgEval, relative(1e-4));
  }
}

inline void checkGlobalAvgPool(cpu::ThreadPool& pool, int N, int C, int S) {
  Row line("global_avgpool", "N" + std::to_string(N) + " C" + std::to_string(C) + " S" + std::to_string(S), kOneKernel);
  const size_t in = size_t(N) * C * S, out = size_t(N) * C;
  const auto x = randomVector(in, 71), dy = randomVector(out, 72);
  std::vector<float> y(out), dx(in);
  cpu::global_avgpool_forward(pool, y.data(), x.data(), N, C, S);
  cpu::global_avgpool_backward(pool, dx.data(), dy.data(), N, C, S);
  DeviceVector<float> dX(x), dDy(dy), dY(out), dDx(in);
  poison(dY);
  poison(dDx);
  cuda::global_avgpool_forward(nullptr, dY.ptr, dX.ptr, N, C, S);
  cuda::global_avgpool_backward(nullptr, dDx.ptr, dDy.ptr, N, C, S);
  line.compare("forward", dY.download(), y, relative(1e-5));
  line.compare("backward", dDx.download(), dx, relative(1e-6));
}

inline void checkGelu(int rows, int width) {
  Row line("activation gelu", std::to_string(rows) + "x" + std::to_string(width), kOneKernel);
  const size_t n = size_t(rows) * width;
  const auto x = randomVector(n, 81, 6.0f), dy = randomVector(n, 82);
  std::vector<float> y(n), dx(n);
  cpu::activation_forward(y.data(), x.data(), rows, width, ActivationFn::GELU, 0);
  cpu::gelu_backward(dx.data(), dy.data(), x.data(), int64_t(n));
  DeviceVector<float> dX(x), dY(n), dDy(dy), dDx(n);
  poison(dY);
  poison(dDx);
  cuda::activation_forward(nullptr, dY.ptr, dX.ptr, rows, width, ActivationFn::GELU, 0);
  cuda::gelu_backward(nullptr, dDx.ptr, dDy.ptr, dX.ptr, int64_t(n));
  line.compare("forward", dY.download(), y, relative(1e-5));
  line.compare("backward (from the input)", dDx.download(), dx, relative(1e-5));
}

// residual blocks' sum: y = a + b (aligned: 4 per thread; misaligned by one float: one per thread)
// y = f(a + b), and f's backward into two outputs, against cpu::activation_forward/backward; f the
// identity (exact) or an activation layer fused into the block's sum (the activations' 1e-5)
inline void checkResidualAdd(int64_t n, int offset, ActivationFn fn, float alpha) {
  Row line("residual add", std::to_string(n) + (offset ? " values, misaligned, " : " values, ") + activationName(fn),
           kOneKernel);
  const size_t count = size_t(n), at = size_t(offset);
  const auto a = randomVector(count + 1, 85, 2.0f), b = randomVector(count + 1, 86, 2.0f), dy = randomVector(count + 1, 87);
  std::vector<float> sum(count), y(count), g(count);
  for (size_t k = 0; k < count; ++k) sum[k] = a[k + at] + b[k + at];
  cpu::activation_forward(y.data(), sum.data(), 1, n, fn, alpha);
  cpu::activation_backward(g.data(), dy.data() + at, y.data(), 1, n, fn, alpha);
  DeviceVector<float> dA(a), dB(b), dDy(dy), dY(count + 1), dG1(count + 1), dG2(count + 1);
  poison(dY);
  cuda::residual_add(nullptr, dY.ptr + at, dA.ptr + at, dB.ptr + at, n, fn, alpha);
  const auto slice = [&](const std::vector<float>& v) { return std::vector<float>(v.begin() + offset, v.begin() + offset + n); };
  const double tolerance = fn == ActivationFn::Linear ? 0.0 : 1e-5;
  line.compare("forward", slice(dY.download()), y, relative(tolerance));
  if (fn == ActivationFn::Linear) return;
  cuda::residual_activation_backward(nullptr, dG1.ptr + at, dG2.ptr + at, dDy.ptr + at, dY.ptr + at, n, fn, alpha);
  line.compare("backward, to the block's layers", slice(dG1.download()), g, relative(tolerance));
  line.compare("backward, to the shortcut", slice(dG2.download()), g, relative(tolerance));
}

// ---- whole networks: one training step, then evaluation, GPU against CPU ----

struct NormNetworkRow {
  const char* name;
  const char* spec;
  int N;
};

// One training step of cuda::Network (the running statistics move in `params`), then an evaluation pass
struct GpuStep {
  std::vector<float> outputs, grads, inputGrad, params, evalOutputs;
};
// inputGradient false: as training runs, where a stem conv's weight gradient may come from the batchnorm's
// backward (BatchNormConvWgrad); inputGrad stays empty
inline GpuStep gpuNetworkStep(const ModelSpec& spec, const std::vector<float>& params, const std::vector<float>& x,
                              const std::vector<int32_t>& labels, int N, bool inputGradient = true) {
  const NetworkPlan plan = planNetwork(spec);
  const size_t outputs = size_t(N) * plan.outputWidth;
  cuda::Network gnet(spec, N, inputGradient);
  DeviceVector<float> dParams(params), dX(x), dGrad(plan.parameterCount);
  poison(dGrad);
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{someState()});
  gnet.forward(nullptr, dParams.ptr, dX.ptr, N, true, 5, dState.ptr, dParams.ptr);
  gnet.loss(nullptr, dLabels.ptr, N, dState.ptr);
  gnet.backward(nullptr, dParams.ptr, dGrad.ptr, N);
  cudaOk(cudaDeviceSynchronize(), "network step");
  auto copy = [](const float* from, size_t count) {
    std::vector<float> host(count);
    cudaOk(cudaMemcpy(host.data(), from, sizeof(float) * count, cudaMemcpyDeviceToHost), "download");
    return host;
  };
  GpuStep step;
  step.outputs = copy(gnet.outputs(), outputs);
  step.grads = dGrad.download();
  if (inputGradient) step.inputGrad = copy(gnet.inputGradient(), size_t(N) * plan.inputSize);
  step.params = dParams.download();
  gnet.forward(nullptr, dParams.ptr, dX.ptr, N, false, 5, dState.ptr);
  cudaOk(cudaDeviceSynchronize(), "network evaluation");
  step.evalOutputs = copy(gnet.outputs(), outputs);
  return step;
}

inline void checkNormNetwork(cpu::ThreadPool& pool, const NormNetworkRow& c, const std::string& variant = "",
                             bool inputGradient = true) {
  Row line("network", c.name, "the chooser's kernels" + variant + (inputGradient ? "" : ", no input gradient"));
  const ModelSpec spec = parseModelSpec(c.spec);
  const NetworkPlan plan = planNetwork(spec);
  const int N = c.N, classes = int(plan.outputWidth);
  auto params = initialParameters(spec, 7);
  const auto x = randomVector(size_t(N) * plan.inputSize, 91, 2.0f);
  std::vector<int32_t> labels(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) labels[size_t(i)] = (i * 7 + 3) % classes;
  // the CPU: a training step (running statistics move in cpuParams), then evaluation with them
  std::vector<float> cpuParams = params, cpuGrads(plan.parameterCount);
  cpu::Network net(spec, N, pool, true);
  const float* out = net.forward(cpuParams.data(), x.data(), N, true, 5, cpuParams.data());
  const std::vector<float> cpuOut(out, out + size_t(N) * classes);
  LossTargets targets;
  targets.labels = labels.data();
  net.loss(targets, N, true, nullptr);
  net.backward(cpuParams.data(), cpuGrads.data(), N);
  const std::vector<float> cpuInGrad(net.inputGradient(), net.inputGradient() + size_t(N) * plan.inputSize);
  const float* evalOut = net.forward(cpuParams.data(), x.data(), N, false, 5);
  const std::vector<float> cpuEval(evalOut, evalOut + size_t(N) * classes);
  const GpuStep gpu = gpuNetworkStep(spec, params, x, labels, N, inputGradient);
  line.compare("training outputs", gpu.outputs, cpuOut, kParity);
  line.compare("every parameter gradient", gpu.grads, cpuGrads, relative(1e-3));
  if (inputGradient) line.compare("input gradient", gpu.inputGrad, cpuInGrad, relative(1e-3));
  line.compare("parameters with the running statistics moved", gpu.params, cpuParams, relative(1e-5));
  line.compare("evaluation outputs (running statistics)", gpu.evalOutputs, cpuEval, kParity);
}

// The batchnorm + activation + max pool fusion against the three layers' own kernels on the GPU: the same
// float operations in the same order, so every value bit for bit
inline void checkBatchNormPoolFusion(const NormNetworkRow& c, const std::string& variant = "") {
  Row line("network", std::string(c.name) + ": batchnorm + max pool fused / not", "the chooser's kernels" + variant);
  const ModelSpec spec = parseModelSpec(c.spec);
  const NetworkPlan plan = planNetwork(spec);
  const auto params = initialParameters(spec, 7);
  const auto x = randomVector(size_t(c.N) * plan.inputSize, 92, 2.0f);
  std::vector<int32_t> labels(static_cast<size_t>(c.N));
  for (int i = 0; i < c.N; ++i) labels[size_t(i)] = (i * 5 + 1) % int(plan.outputWidth);
  const GpuStep fused = gpuNetworkStep(spec, params, x, labels, c.N);
  GpuStep apart;
  {
    cuda::ScopedKernelOverride off([](cuda::KernelOverrides& o) { o.batchnormPool = cuda::Switch::Off; });
    apart = gpuNetworkStep(spec, params, x, labels, c.N);
  }
  line.compare("training outputs", fused.outputs, apart.outputs, relative(0));
  line.compare("every parameter gradient", fused.grads, apart.grads, relative(0));
  line.compare("input gradient", fused.inputGrad, apart.inputGrad, relative(0));
  line.compare("parameters with the running statistics moved", fused.params, apart.params, relative(0));
  line.compare("evaluation outputs", fused.evalOutputs, apart.evalOutputs, relative(0));
}

inline const std::vector<NormNetworkRow>& normNetworks() {
  static const std::vector<NormNetworkRow> rows = {
      {"conv -> batchnorm -> relu -> gap -> dense",
       R"({"input":[3,12,12],"layers":[{"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm"},
          {"kind":"activation","fn":"relu"},{"kind":"conv2d","filters":6,"kernel":[3,3],"stride":2,"padding":"same","activation":"gelu"},
          {"kind":"batchnorm","affine":false,"momentum":0.3},{"kind":"global_avgpool"},{"kind":"dense","units":5}],
          "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})",
       24},
      // batchnorm + activation + a max pool whose windows tile the input run as one (bnPoolFused_): 11x11
      // and 5x5 leave a row and a column outside every window
      {"conv -> batchnorm -> relu -> maxpool 2 -> conv -> batchnorm -> leaky relu -> maxpool 2 -> dense",
       R"({"input":[3,11,11],"layers":[{"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm"},
          {"kind":"activation","fn":"relu"},{"kind":"maxpool2d","size":2,"stride":2},
          {"kind":"conv2d","filters":6,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm","affine":false},
          {"kind":"activation","fn":"leaky_relu","alpha":0.1},{"kind":"maxpool2d","size":2,"stride":2},
          {"kind":"flatten"},{"kind":"dense","units":4}],
          "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})",
       13},
      {"dense gelu -> batchnorm -> dense gelu head (mse)",
       R"({"input":[20],"layers":[{"kind":"dense","units":32,"activation":"gelu"},{"kind":"batchnorm"},
          {"kind":"dropout","rate":0},{"kind":"dense","units":4,"activation":"gelu"}],
          "loss":"mse","optimizer":{"kind":"sgd","lr":0.1},"seed":1})",
       33},
      {"conv gelu -> maxpool (not fused) -> flatten -> batchnorm -> dense",
       R"({"input":[1,10,10],"layers":[{"kind":"conv2d","filters":4,"kernel":[3,3],"padding":"same","activation":"gelu"},
          {"kind":"maxpool2d","size":2},{"kind":"flatten"},{"kind":"batchnorm"},{"kind":"dense","units":3}],
          "loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":1})",
       16},
      // residual blocks: identity (conv + batchnorm inside), then a stride-2 projection to more channels
      // (the 1x1 convolution through the chooser's conv kernels), then a flat identity block; the
      // activations after the first two blocks fuse into their sums (relu; leaky relu after the projection)
      {"conv -> residual (identity, batchnorm) -> residual (projection, stride 2) -> gap -> residual (flat) -> dense",
       R"({"input":[3,12,12],"layers":[{"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"same","activation":"relu"},
          {"kind":"residual","layers":[{"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm"},
            {"kind":"activation","fn":"relu"},{"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm"}]},
          {"kind":"activation","fn":"relu"},
          {"kind":"residual","layers":[{"kind":"conv2d","filters":16,"kernel":[3,3],"stride":2,"padding":"same","activation":"relu"},
            {"kind":"conv2d","filters":16,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm"}]},
          {"kind":"activation","fn":"leaky_relu","alpha":0.1},{"kind":"global_avgpool"},
          {"kind":"residual","layers":[{"kind":"dense","units":16,"activation":"tanh"},{"kind":"dense","units":16}]},
          {"kind":"dense","units":5}],
          "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})",
       20},
      {"residual first (input gradient through both branches), projection by channels, conv + maxpool inside",
       R"({"input":[2,8,8],"layers":[
          {"kind":"residual","layers":[{"kind":"conv2d","filters":6,"kernel":[3,3],"padding":"same","activation":"relu"},
            {"kind":"maxpool2d","size":2,"stride":2}]},
          {"kind":"residual","layers":[{"kind":"conv2d","filters":6,"kernel":[3,3],"padding":"same","activation":"relu"}]},
          {"kind":"flatten"},{"kind":"dense","units":3}],
          "loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":1})",
       12},
  };
  return rows;
}

// A one-channel 3x3 stem conv whose input gradient nobody needs: on GPUs with clusters the batchnorm's backward
// sums the conv's weight gradient (BatchNormConvWgrad); against the CPU with it forced on
// (NNSTUDIO_CUDA_BN_CONV_WGRAD=1: the chooser takes it only for long slices) and off, for the stem at MNIST's
// size (pooled, 'same') and a 'valid' stem, unpooled
inline void checkStemConvWgrad(cpu::ThreadPool& pool, const NormNetworkRow& stem) {
  const NormNetworkRow valid{"a 'valid' stem, 30x30 -> 28x28, no pool", R"({"input":[1,30,30],"layers":[
      {"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"valid"},{"kind":"batchnorm"},
      {"kind":"activation","fn":"leaky_relu","alpha":0.1},{"kind":"global_avgpool"},{"kind":"dense","units":10}],
      "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})", 32};
  const cuda::DeviceCaps& caps = cuda::currentDeviceCaps();
  for (const NormNetworkRow* row : {&stem, &valid}) {
    const NetworkPlan plan = planNetwork(parseModelSpec(row->spec));
    const LayerPlan& conv = plan.layers[0];
    const cpu::ConvGeometry g{conv.inC, conv.inH, conv.inW, conv.outC, conv.outH, conv.outW, 3, 3, 1, conv.padTop, conv.padLeft};
    {
      cuda::ScopedKernelOverride fused([](cuda::KernelOverrides& o) { o.batchnormConvWgrad = cuda::Switch::On; });
      Row probe("network", std::string(row->name) + ": the batchnorm takes the conv's weight gradient",
                "NNSTUDIO_CUDA_BN_CONV_WGRAD=1");
      probe.check(cuda::batchnormConvWgradFits(g, row->N) == (caps.batchnormMaxCluster >= 2),
                  "on GPUs with clusters (and only there)");
      checkNormNetwork(pool, *row, " (the conv's weight gradient in the batchnorm's backward)", false);
    }
    cuda::ScopedKernelOverride apart([](cuda::KernelOverrides& o) { o.batchnormConvWgrad = cuda::Switch::Off; });
    checkNormNetwork(pool, *row, " (NNSTUDIO_CUDA_BN_CONV_WGRAD=0)", false);
  }
}

inline void runNormRows(cpu::ThreadPool& pool) {
  const BatchNormRow rows[] = {
      {32, 16, 28 * 28, true, 32, 0.0f},   // a conv's channels, MNIST-sized
      {256, 64, 1, true, 256, 0.0f},       // a dense layer's features
      {3, 5, 7, false, 3, 0.0f},           // odd sizes, not affine
      {17, 8, 5 * 5, true, 128, 0.0f},     // the last, smaller batch of an epoch: slices follow maxN
      {64, 4, 14 * 14, true, 64, 100.0f},  // a large mean against the spread (std ~1)
      {1, 6, 1, true, 1, 0.0f},            // one value per channel: variance 0, the output beta
      {128, 32, 28 * 28, true, 128, 0.0f}, // resnet_fast's stem: the chooser's cluster of 8, quads
      {96, 64, 7 * 7, true, 128, 3.0f},    // the last batch of an epoch: the chooser's cluster of 4 for 128
  };
  {
    const cuda::DeviceCaps& caps = cuda::currentDeviceCaps();
    Row line("batchnorm cluster probe",
             "sm_" + std::to_string(caps.computeMajor * 10 + caps.computeMinor) + ", largest cluster " +
                 std::to_string(caps.batchnormMaxCluster) + " blocks",
             "device caps");
    line.check(!caps.clusterLaunch || caps.batchnormMaxCluster >= 2, "a GPU with clusters co-schedules the batchnorm's");
  }
  uint64_t seed = 300;
  for (const BatchNormRow& r : rows) {
    seed += 10;
    for (const BatchNormPath& path : kBatchNormPaths) checkBatchNorm(pool, r, seed, path);
  }
  checkGlobalAvgPool(pool, 7, 16, 7 * 7);
  checkGlobalAvgPool(pool, 3, 5, 1);
  checkGelu(37, 45);
  checkResidualAdd(4 * 1000 + 3, 0, ActivationFn::Linear, 0.0f);
  checkResidualAdd(777, 1, ActivationFn::Linear, 0.0f);
  checkResidualAdd(4 * 1000 + 3, 0, ActivationFn::ReLU, 0.0f);
  checkResidualAdd(777, 1, ActivationFn::LeakyReLU, 0.1f);
  checkResidualAdd(1001, 0, ActivationFn::Tanh, 0.0f);
  for (const NormNetworkRow& r : normNetworks()) checkNormNetwork(pool, r);
  {
    cuda::ScopedKernelOverride clusters([](cuda::KernelOverrides& o) { o.batchnormCluster = cuda::Switch::On; });
    for (const NormNetworkRow& r : normNetworks()) checkNormNetwork(pool, r, " (batchnorm: a cluster per channel)");
  }
  const NormNetworkRow stem{"a ResNet stem at MNIST's size", R"({"input":[1,28,28],"layers":[
      {"kind":"conv2d","filters":16,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm"},{"kind":"activation","fn":"relu"},
      {"kind":"maxpool2d","size":2,"stride":2},
      {"kind":"residual","layers":[{"kind":"conv2d","filters":16,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm"}]},
      {"kind":"activation","fn":"relu"},{"kind":"global_avgpool"},{"kind":"dense","units":10}],
      "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})", 128};
  checkBatchNormPoolFusion(normNetworks()[1]);
  checkBatchNormPoolFusion(stem);
  {  // the cluster kernels: at 28x28 the fused pool takes window pairs (a float4 of each row, a quad's two windows)
    cuda::ScopedKernelOverride clusters([](cuda::KernelOverrides& o) { o.batchnormCluster = cuda::Switch::On; });
    checkBatchNormPoolFusion(normNetworks()[1], " (batchnorm: a cluster per channel)");
    checkBatchNormPoolFusion(stem, " (batchnorm: a cluster per channel, quads, window pairs)");
  }
  checkStemConvWgrad(pool, stem);
  {  // without pairs the pooled backward gathers its quads one value at a time, in the loads' order
    cuda::ScopedKernelOverride clusters([](cuda::KernelOverrides& o) {
      o.batchnormCluster = cuda::Switch::On;
      o.batchnormPairs = cuda::Switch::Off;
    });
    checkBatchNormPoolFusion(stem, " (batchnorm: a cluster per channel, quads, a window at a time)");
  }
}

}  // namespace nnstudio::test

#endif
