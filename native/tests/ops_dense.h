// The op table's dense rows (test_cuda_ops.cpp): gemm() in its four transpose modes with its epilogues
// against a double-precision product, the dense layer's passes against cpu::dense_*, each over every GEMM
// plan the chooser reaches (the four tiles, split-K on and off); and the fused classifier head over every
// cluster size, against its four separate launches, which run against the CPU.
#pragma once

#ifdef NNSTUDIO_WITH_CUDA

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cpu/thread_pool.h"
#include "cuda/kernels.h"
#include "cuda/network.h"
#include "nnstudio/engine.h"
#include "op_table.h"
#include "spec/model.h"

namespace nnstudio::test {

// what the kernels apply for an activation: Softmax is a row operation, never fused (Linear)
inline ActivationFn fusedAct(ActivationFn a) { return a == ActivationFn::Softmax ? ActivationFn::Linear : a; }
// the engine's name; Softmax runs as Linear in these kernels
inline std::string actName(ActivationFn a) {
  return std::string(activationName(a)) + (a == ActivationFn::Softmax ? "(as linear)" : "");
}

// the GEMM plans: the choice by shape, each tile forced (NNSTUDIO_GEMM_TILE), split-K off, the streaming kernels
// forced (NNSTUDIO_GEMM_STREAM=1) with and without split-K
inline std::vector<Variant> gemmVariants() {
  using cuda::GemmTileForce;
  using cuda::KernelOverrides;
  std::vector<Variant> v = {{"default", nullptr}};
  const std::pair<const char*, GemmTileForce> tiles[] = {{"64x64", GemmTileForce::Large64x64},
                                                          {"32x32", GemmTileForce::Medium32x32},
                                                          {"16x64", GemmTileForce::Wide16x64},
                                                          {"16x16", GemmTileForce::Small16x16}};
  for (const auto& [name, tile] : tiles)
    v.push_back({std::string("tile ") + name, [tile = tile](KernelOverrides& o) { o.gemmTile = tile; }});
  v.push_back({"no split-K", [](KernelOverrides& o) { o.gemmSplitK = false; }});
  // the streaming kernels at any length, split and unsplit
  v.push_back({"stream", [](KernelOverrides& o) { o.gemmStream = cuda::Switch::On; }});
  v.push_back({"stream, no split", [](KernelOverrides& o) {
                 o.gemmStream = cuda::Switch::On;
                 o.gemmSplitK = false;
               }});
  v.push_back({"stream, 2 rows a lane", [](KernelOverrides& o) {
                 o.gemmStream = cuda::Switch::On;
                 o.gemmNarrowRowsPerLane = 2;
               }});
  v.push_back({"stream, 2 rows a lane, no split", [](KernelOverrides& o) {
                 o.gemmStream = cuda::Switch::On;
                 o.gemmNarrowRowsPerLane = 2;
                 o.gemmSplitK = false;
               }});
  return v;
}

inline std::string gemmPlan(const cuda::KernelOverrides& o, int M, int N, int K) {
  return cuda::chooseGemm(caps(), o, M, N, K).name();
}
// the plan of gemm() with these transposes: the shallow one-pass kernel or a tile
inline std::string gemmPlan(const cuda::KernelOverrides& o, bool transA, bool transB, int M, int N, int K) {
  return cuda::gemmPlanName(caps(), o, transA, transB, M, N, K);
}

// ---- gemm() ----

struct GemmRow {
  int M, N, K;
  bool transA, transB;
  size_t pad = 0;  // operands start `pad` floats into their buffers (1: only 4-byte aligned, scalar loads)
  ActivationFn act = ActivationFn::Linear;
  bool bias = false;
  ActivationFn gateAct = ActivationFn::Linear;  // the epilogue's derivative gate (Linear: none)
};

// C = op(A) . op(B) in double, then + bias, act, * gateAct'(gate): the epilogue of kernels.h
inline std::vector<float> referenceGemm(const GemmRow& r, const std::vector<float>& A, const std::vector<float>& B,
                                        const std::vector<float>& bias, const std::vector<float>& gate) {
  std::vector<double> a(size_t(r.M) * r.K), bt(size_t(r.N) * r.K);  // op(A) (M, K), op(B)^T (N, K)
  for (int m = 0; m < r.M; ++m)
    for (int k = 0; k < r.K; ++k) a[size_t(m) * r.K + k] = r.transA ? A[size_t(k) * r.M + m] : A[size_t(m) * r.K + k];
  for (int n = 0; n < r.N; ++n)
    for (int k = 0; k < r.K; ++k) bt[size_t(n) * r.K + k] = r.transB ? B[size_t(n) * r.K + k] : B[size_t(k) * r.N + n];
  std::vector<float> C(size_t(r.M) * r.N);
  for (int m = 0; m < r.M; ++m)
    for (int n = 0; n < r.N; ++n) {
      double s = 0;
      for (int k = 0; k < r.K; ++k) s += a[size_t(m) * r.K + k] * bt[size_t(n) * r.K + k];
      C[size_t(m) * r.N + n] = float(s) + (r.bias ? bias[n] : 0.0f);
    }
  cpu::activation_forward(C.data(), C.data(), r.M, r.N, fusedAct(r.act), 0.1f);
  if (r.gateAct != ActivationFn::Linear)
    cpu::activation_backward(C.data(), C.data(), gate.data(), r.M, r.N, fusedAct(r.gateAct), 0.05f);
  return C;
}

inline std::vector<float> withPad(const std::vector<float>& v, size_t pad) {
  std::vector<float> p(v.size() + pad, 0.0f);
  std::copy(v.begin(), v.end(), p.begin() + pad);
  return p;
}

// Every plan against the double product; nothing written outside C (37 poisoned floats each side).
inline void checkGemmRow(const GemmRow& r, uint64_t seed) {
  const auto A = randomVector(size_t(r.M) * r.K, seed * 8 + 1), B = randomVector(size_t(r.K) * r.N, seed * 8 + 2);
  const auto bias = randomVector(size_t(r.N), seed * 8 + 3);
  std::vector<float> gate = randomVector(size_t(r.M) * r.N, seed * 8 + 4, 2.0f);
  cpu::activation_forward(gate.data(), gate.data(), r.M, r.N, fusedAct(r.gateAct), 0.05f);  // a real activation output
  const std::vector<float> ref = referenceGemm(r, A, B, bias, gate);
  DeviceVector<float> dA(withPad(A, r.pad)), dB(withPad(B, r.pad)), dBias(bias), dGate(gate);
  const size_t guard = 37, start = guard + r.pad, size = size_t(r.M) * r.N;
  DeviceVector<float> dC(guard + size + guard + r.pad);
  cuda::GemmEpilogue e;
  e.act = r.act;
  e.alpha = 0.1f;
  if (r.bias) e.bias = dBias.ptr;
  if (r.gateAct != ActivationFn::Linear) {
    e.gate = dGate.ptr;
    e.gateAct = r.gateAct;
    e.gateAlpha = 0.05f;
  }
  char shape[160];
  std::snprintf(shape, sizeof shape, "%s%s M=%d N=%d K=%d%s%s%s%s", r.transA ? "T" : "N", r.transB ? "T" : "N", r.M,
                r.N, r.K, r.pad ? " misaligned" : "", r.bias ? " +bias" : "",
                r.act != ActivationFn::Linear ? (" act " + actName(r.act)).c_str() : "",
                r.gateAct != ActivationFn::Linear ? (" gate " + actName(r.gateAct)).c_str() : "");
  auto plan = [&](const cuda::KernelOverrides& o) { return gemmPlan(o, r.transA, r.transB, r.M, r.N, r.K); };
  for (const Reached& v : reached(gemmVariants(), plan)) {
    Row line("gemm", shape, v.label());
    under(v.variant, [&] {
      poison(dC);
      cuda::gemm(nullptr, r.transA, r.transB, r.M, r.N, r.K, dA.ptr + r.pad, dB.ptr + r.pad, dC.ptr + start, e);
    });
    const std::vector<float> got = dC.download();
    line.compare("C", std::vector<float>(got.begin() + start, got.begin() + start + size), ref);
    line.check(guardsIntact(got, start, size), "nothing written outside C");
  }
}

// ---- dense layer ----

// the presets' dense layers (inputs, units) and the batch sizes they train with
inline constexpr int kPresetDenseLayers[][2] = {{784, 128},   {128, 10},   {196, 128},  {392, 128},
                                                {10816, 10}, {43264, 10}, {9216, 128}, {1152, 128}};
inline constexpr int kPresetBatches[] = {32, 64, 100, 128, 1000};

struct DenseRow {
  int N, inputs, units;
  ActivationFn act, inAct;  // the layer's activation; the one that produced its input (the input gradient's gate)
  bool graph = false;       // also capture the three passes in a CUDA graph and replay them
};

struct DenseOutputs {
  DeviceVector<float> out, dW, dB, dIn;
  explicit DenseOutputs(const DenseRow& r)
      : out(size_t(r.N) * r.units), dW(size_t(r.units) * r.inputs), dB(size_t(r.units)), dIn(size_t(r.N) * r.inputs) {}
  std::vector<std::vector<float>> download() const {
    return {out.download(), dW.download(), dB.download(), dIn.download()};
  }
};

// Forward, weight and bias gradients and the gated input gradient against cpu::dense_* and the CPU's
// activations; each plan twice gives the same bits (and, for graph rows, replayed from a CUDA graph).
inline void checkDenseRow(cpu::ThreadPool& pool, const DenseRow& r, uint64_t seed) {
  const float alpha = 0.02f, inAlpha = 0.03f;
  std::vector<float> in = randomVector(size_t(r.N) * r.inputs, seed * 8 + 1, 2.0f);
  // the previous layer's output
  cpu::activation_forward(in.data(), in.data(), r.N, r.inputs, fusedAct(r.inAct), inAlpha);
  const auto weight = randomVector(size_t(r.units) * r.inputs, seed * 8 + 2, 1.0f / std::sqrt(float(r.inputs)));
  const auto bias = randomVector(size_t(r.units), seed * 8 + 3, 0.5f);
  const auto dOut = randomVector(size_t(r.N) * r.units, seed * 8 + 4);
  std::vector<float> out(size_t(r.N) * r.units), dW(weight.size()), dB(bias.size()), dIn(in.size());
  cpu::dense_forward(pool, out.data(), in.data(), weight.data(), bias.data(), r.N, r.inputs, r.units);
  cpu::activation_forward(out.data(), out.data(), r.N, r.units, fusedAct(r.act), alpha);
  cpu::dense_backward_weights(pool, dW.data(), dB.data(), dOut.data(), in.data(), r.N, r.inputs, r.units);
  cpu::dense_backward_input(pool, dIn.data(), dOut.data(), weight.data(), r.N, r.inputs, r.units);
  cpu::activation_backward(dIn.data(), dIn.data(), in.data(), r.N, r.inputs, fusedAct(r.inAct), inAlpha);

  DeviceVector<float> gIn(in), gW(weight), gB(bias), gDOut(dOut);
  auto enqueue = [&](cudaStream_t stream, DenseOutputs& o) {
    cuda::dense_forward(stream, o.out.ptr, gIn.ptr, gW.ptr, gB.ptr, r.N, r.inputs, r.units, r.act, alpha);
    cuda::dense_backward_weights(stream, o.dW.ptr, o.dB.ptr, gDOut.ptr, gIn.ptr, r.N, r.inputs, r.units, nullptr);
    cuda::dense_backward_input(stream, o.dIn.ptr, gDOut.ptr, gW.ptr, gIn.ptr, r.N, r.inputs, r.units, r.inAct, inAlpha);
  };
  auto run = [&](DenseOutputs& o) {
    for (DeviceVector<float>* v : {&o.out, &o.dW, &o.dB, &o.dIn}) poison(*v);
    enqueue(nullptr, o);
    return o.download();
  };
  const std::string shape = "N=" + std::to_string(r.N) + " " + std::to_string(r.inputs) + "->" +
                            std::to_string(r.units) + " " + actName(r.act) + ", gate " + actName(r.inAct);
  auto plans = [&](const cuda::KernelOverrides& o) {
    return "fwd " + gemmPlan(o, false, true, r.N, r.units, r.inputs) + ", dW " +
           gemmPlan(o, true, false, r.units, r.inputs, r.N) + ", dIn " +
           gemmPlan(o, false, false, r.N, r.inputs, r.units);
  };
  for (const Reached& v : reached(gemmVariants(), plans)) {
    Row line("dense", shape, v.label());
    under(v.variant, [&] {
      DenseOutputs first(r), second(r);
      const std::vector<std::vector<float>> got = run(first);
      line.compare("forward", got[0], out);
      line.compare("dWeight", got[1], dW);
      line.compare("dBias", got[2], dB);
      line.compare("dInput", got[3], dIn);
      const std::vector<std::vector<float>> again = run(second);
      bool same = true;
      for (size_t i = 0; i < got.size(); ++i) same = same && sameBits(got[i], again[i]);
      line.check(same, "a second run gives the same bits");
      if (!r.graph) return;
      cudaStream_t stream;
      cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
      DenseOutputs graphed(r);
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
      enqueue(stream, graphed);
      cudaOk(cudaStreamEndCapture(stream, &graph), "capture");
      cudaOk(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
      cudaOk(cudaGraphLaunch(exec, stream), "graph launch");
      cudaOk(cudaStreamSynchronize(stream), "graph");
      const std::vector<std::vector<float>> replayed = graphed.download();
      bool graphSame = true;
      for (size_t i = 0; i < got.size(); ++i) graphSame = graphSame && sameBits(got[i], replayed[i]);
      line.check(graphSame, "the three passes replayed from a CUDA graph give the same bits");
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(stream);
    });
  }
}

// ---- the fused classifier head (dense_head.cu) ----

struct HeadRow {
  int N, I, K;
  LossKind loss;
  ActivationFn act;    // the head's activation (Linear: logits)
  ActivationFn inAct;  // the previous layer's, applied by the input gradient
  bool inputGrad;
};

constexpr int kHeadGuard = 16;  // poisoned floats after every output, which must stay poisoned
constexpr float kHeadAlpha = 0.1f, kHeadInAlpha = 0.2f;

struct HeadResult {
  std::vector<float> out, dW, dB, dIn;  // device results carry kHeadGuard floats after each
  cuda::StepState state;
};

inline cuda::StepState someState() {
  cuda::StepState s;
  s.globalStep = 41;
  s.epochStep = 5;
  s.sampleLossSum = 12.5;
  s.correct = 17;
  s.samples = 40;
  s.batchLossSum = 3.25;
  s.lossSteps = 4;
  return s;
}

// the layer's inputs: the previous activation's outputs (ReLU: non-negative with exact zeros)
inline std::vector<float> headInput(const HeadRow& r, uint64_t seed) {
  std::vector<float> x = randomVector(size_t(r.N) * r.I, seed);
  if (r.inAct == ActivationFn::ReLU)
    for (float& v : x) v = v > 0 ? v : 0.0f;
  return x;
}

inline std::vector<int32_t> headLabels(const HeadRow& r) {
  std::vector<int32_t> y(static_cast<size_t>(r.N));
  const int classes = r.K == 1 ? 2 : r.K;
  for (int n = 0; n < r.N; ++n) y[size_t(n)] = (n * 7 + 3) % classes;
  return y;
}

// One head step on the GPU, fused over `blocks` blocks (0: the chooser's) or as the four separate launches;
// every output poisoned first, with guard zones.
inline HeadResult runHead(const HeadRow& r, bool fused, int blocks, const std::vector<float>& x,
                          const std::vector<float>& w, const std::vector<float>& b, const std::vector<int32_t>& labels,
                          const cuda::StepState& start) {
  const size_t NK = size_t(r.N) * r.K, KI = size_t(r.K) * r.I, NI = size_t(r.N) * r.I;
  DeviceVector<float> dX(x), dW(w), dB(b), out(NK + kHeadGuard), gW(KI + kHeadGuard), gB(size_t(r.K) + kHeadGuard),
      gIn(NI + kHeadGuard), dOut(NK);
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{start});
  float* dIn = r.inputGrad ? gIn.ptr : nullptr;
  if (fused) {
    cuda::dense_head_fused(nullptr, r.loss, out.ptr, gW.ptr, gB.ptr, dIn, dX.ptr, dW.ptr, dB.ptr, dLabels.ptr, r.N, r.I,
                           r.K, r.act, kHeadAlpha, r.inAct, kHeadInAlpha, dState.ptr, blocks);
  } else {
    cuda::dense_forward(nullptr, out.ptr, dX.ptr, dW.ptr, dB.ptr, r.N, r.I, r.K, r.act, kHeadAlpha);
    cuda::loss_forward_backward(nullptr, r.loss, out.ptr, dLabels.ptr, r.N, r.K, dOut.ptr, dState.ptr);
    if (r.act != ActivationFn::Linear)
      cuda::activation_backward(nullptr, dOut.ptr, dOut.ptr, out.ptr, r.N, r.K, r.act, kHeadAlpha);
    cuda::dense_backward_weights(nullptr, gW.ptr, gB.ptr, dOut.ptr, dX.ptr, r.N, r.I, r.K, nullptr);
    if (dIn) cuda::dense_backward_input(nullptr, dIn, dOut.ptr, dW.ptr, dX.ptr, r.N, r.I, r.K, r.inAct, kHeadInAlpha);
  }
  return {out.download(), gW.download(), gB.download(), gIn.download(), dState.download()[0]};
}

// The same step on the CPU: cpu::dense_forward, the activation, cpu::loss_forward_backward, the activation's
// backward, cpu::dense_backward_weights and dense_backward_input gated by inAct.
inline HeadResult cpuHead(cpu::ThreadPool& pool, const HeadRow& r, const std::vector<float>& x,
                          const std::vector<float>& w, const std::vector<float>& b,
                          const std::vector<int32_t>& labels) {
  HeadResult h;
  h.out.resize(size_t(r.N) * r.K);
  std::vector<float> dz(h.out.size());
  cpu::dense_forward(pool, h.out.data(), x.data(), w.data(), b.data(), r.N, r.I, r.K);
  cpu::activation_forward(h.out.data(), h.out.data(), r.N, r.K, r.act, kHeadAlpha);
  int64_t correct = 0;
  cpu::loss_forward_backward(r.loss, h.out.data(), labels.data(), r.N, r.K, dz.data(), &correct);
  cpu::activation_backward(dz.data(), dz.data(), h.out.data(), r.N, r.K, r.act, kHeadAlpha);
  h.dW.resize(w.size());
  h.dB.resize(b.size());
  h.dIn.resize(x.size());
  cpu::dense_backward_weights(pool, h.dW.data(), h.dB.data(), dz.data(), x.data(), r.N, r.I, r.K);
  cpu::dense_backward_input(pool, h.dIn.data(), dz.data(), w.data(), r.N, r.I, r.K);
  cpu::activation_backward(h.dIn.data(), h.dIn.data(), x.data(), r.N, r.I, r.inAct, kHeadInAlpha);
  return h;
}

inline std::string headShape(const HeadRow& r) {
  const std::string gate = r.inputGrad ? std::string(" dIn gate ") + activationName(r.inAct) : " no dIn";
  return std::to_string(r.N) + "x" + std::to_string(r.I) + "->" + std::to_string(r.K) + " " + lossName(r.loss) +
         " act " + activationName(r.act) + gate;
}

inline bool sameTotals(const cuda::StepState& s, const cuda::StepState& r) {
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-6 * (1 + std::fabs(b)); };
  return s.diverged == 0 && r.diverged == 0 && s.samples == r.samples && s.correct == r.correct &&
         s.lossSteps == r.lossSteps && close(s.batchLossSum, r.batchLossSum) &&
         close(s.sampleLossSum, r.sampleLossSum) && s.globalStep == r.globalStep && s.epochStep == r.epochStep;
}

// The separate launches against the CPU; the fused kernel at every cluster size the device co-schedules
// against the separate launches (1e-4 of the largest magnitude, at least 1e-3), its guards, the StepState
// totals, and a second run's bits.
inline void checkHeadRow(cpu::ThreadPool& pool, const HeadRow& r, uint64_t seed) {
  const std::string shape = headShape(r);
  const auto x = headInput(r, 11 + seed);
  const auto w = randomVector(size_t(r.K) * r.I, seed * 4 + 12, 1.0f / std::sqrt(float(r.I)));
  const auto b = randomVector(size_t(r.K), seed * 4 + 13, 0.1f);
  const auto labels = headLabels(r);
  const size_t NK = size_t(r.N) * r.K, KI = size_t(r.K) * r.I, NI = size_t(r.N) * r.I;
  const HeadResult cpuRef = cpuHead(pool, r, x, w, b, labels);
  const HeadResult separate = runHead(r, false, 0, x, w, b, labels, someState());
  {
    Row line("dense head", shape, "separate (fusion off: four launches)");
    line.compare("outputs", prefix(separate.out, NK), cpuRef.out);
    line.compare("dWeight", prefix(separate.dW, KI), cpuRef.dW);
    line.compare("dBias", prefix(separate.dB, size_t(r.K)), cpuRef.dB);
    if (r.inputGrad) line.compare("dInput", prefix(separate.dIn, NI), cpuRef.dIn);
    if (caps().clusterLaunch)  // measured and sized for clusters (a build without sm_90 code has none)
      line.check(cuda::denseHeadSupported(caps(), r.N, r.I, r.K), "the fused kernel takes it");
  }
  std::vector<int> done;
  for (int requested : {0, 1, 2, 4, 8, 16}) {
    const int blocks = cuda::denseHeadBlocks(caps(), requested);
    const int used = cuda::denseHeadLayout(r.N, r.I, r.K, blocks).blocks;
    if (!cuda::denseHeadFits(caps(), r.N, r.I, r.K, blocks) || std::count(done.begin(), done.end(), used)) continue;
    done.push_back(used);
    Row line("dense head", shape, "fused, " + std::to_string(used) + " block(s)" + (requested ? "" : " (default)"));
    const HeadResult got = runHead(r, true, requested, x, w, b, labels, someState());
    const Tolerance vsSeparate = relative(1e-4, 1e-3);
    line.compare("outputs", prefix(got.out, NK), prefix(separate.out, NK), vsSeparate);
    line.compare("dWeight", prefix(got.dW, KI), prefix(separate.dW, KI), vsSeparate);
    line.compare("dBias", prefix(got.dB, size_t(r.K)), prefix(separate.dB, size_t(r.K)), vsSeparate);
    if (r.inputGrad) line.compare("dInput", prefix(got.dIn, NI), prefix(separate.dIn, NI), vsSeparate);
    line.check(guardsIntact(got.out, 0, NK) && guardsIntact(got.dW, 0, KI) && guardsIntact(got.dB, 0, size_t(r.K)) &&
                   guardsIntact(got.dIn, 0, r.inputGrad ? NI : 0),
               "nothing written past the outputs (nor dIn when not asked for)");
    line.check(sameTotals(got.state, separate.state), "StepState totals as the separate launches",
               "loss " + nnstudio_test::num(got.state.batchLossSum) + " vs " +
                   nnstudio_test::num(separate.state.batchLossSum));
    const HeadResult again = runHead(r, true, requested, x, w, b, labels, someState());
    line.check(sameBits(again.out, got.out) && sameBits(again.dW, got.dW) && sameBits(again.dB, got.dB) &&
                   sameBits(again.dIn, got.dIn) && again.state.batchLossSum == got.state.batchLossSum,
               "a second run gives the same bits");
  }
}

// A NaN input flags divergence as the loss kernel does; overflowing logits diverge as the separate
// launches do; a run that diverged earlier keeps its totals.
inline void checkHeadDivergence(LossKind loss) {
  const HeadRow r{37, 50, 10, loss, ActivationFn::Linear, ActivationFn::ReLU, true};
  Row line("dense head", headShape(r), "fused: divergence");
  const auto w = randomVector(size_t(r.K) * r.I, 6, 0.2f);
  const auto b = randomVector(size_t(r.K), 7, 0.1f);
  const auto labels = headLabels(r);
  const cuda::StepState start = someState();
  auto x = headInput(r, 5);
  x[size_t(3 * r.I + 7)] = NAN;
  const cuda::StepState s = runHead(r, true, 0, x, w, b, labels, start).state;
  line.check(s.diverged == 1 && s.divergedNaN == 1 && s.divergedAt == start.globalStep + 1 &&
                 s.samples == start.samples && s.correct == start.correct && s.lossSteps == start.lossSteps &&
                 s.batchLossSum == start.batchLossSum && s.sampleLossSum == start.sampleLossSum,
             "a NaN input sets diverged (NaN, at the step) and leaves the totals");
  // logits that overflow to +inf in any summation order (x >= 0, every weight huge)
  const std::vector<float> big(w.size(), 3e38f);
  const auto xPos = headInput(r, 8);
  const cuda::StepState inf = runHead(r, true, 0, xPos, big, b, labels, start).state;
  const cuda::StepState infRef = runHead(r, false, 0, xPos, big, b, labels, start).state;
  line.check(inf.diverged == 1 && infRef.diverged == 1 && inf.divergedNaN == infRef.divergedNaN &&
                 inf.divergedAt == start.globalStep + 1,
             "overflowing logits diverge as the separate launches do");
  cuda::StepState done = start;
  done.diverged = 1;
  done.divergedAt = 3;
  const cuda::StepState later = runHead(r, true, 0, headInput(r, 9), w, b, labels, done).state;
  line.check(later.diverged == 1 && later.divergedAt == 3 && later.samples == start.samples &&
                 later.batchLossSum == start.batchLossSum,
             "an already diverged run keeps its totals");
}

// Replayed from a graph twice: the bits of a direct launch, the totals counted twice.
inline void checkHeadGraph() {
  const HeadRow r{64, 128, 10, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, true};
  Row line("dense head", headShape(r), "fused, in a CUDA graph");
  const auto x = headInput(r, 21);
  const auto w = randomVector(size_t(r.K) * r.I, 22, 0.1f);
  const auto b = randomVector(size_t(r.K), 23, 0.1f);
  const auto labels = headLabels(r);
  const HeadResult direct = runHead(r, true, 0, x, w, b, labels, someState());
  DeviceVector<float> dX(x), dW(w), dB(b), out(size_t(r.N) * r.K), gW(size_t(r.K) * r.I), gB(size_t(r.K)),
      gIn(size_t(r.N) * r.I);
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{someState()});
  cudaStream_t stream;
  cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  cuda::dense_head_fused(stream, r.loss, out.ptr, gW.ptr, gB.ptr, gIn.ptr, dX.ptr, dW.ptr, dB.ptr, dLabels.ptr, r.N,
                         r.I, r.K, r.act, kHeadAlpha, r.inAct, kHeadInAlpha, dState.ptr);
  cudaOk(cudaStreamEndCapture(stream, &graph), "capture");
  cudaOk(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cudaOk(cudaGraphLaunch(exec, stream), "launch");
  cudaOk(cudaGraphLaunch(exec, stream), "launch");
  cudaOk(cudaStreamSynchronize(stream), "graph");
  const cuda::StepState s = dState.download()[0];
  line.check(sameBits(out.download(), prefix(direct.out, out.count)) &&
                 sameBits(gW.download(), prefix(direct.dW, gW.count)) &&
                 sameBits(gIn.download(), prefix(direct.dIn, gIn.count)) && s.lossSteps == someState().lossSteps + 2 &&
                 s.samples == someState().samples + 2 * r.N,
             "replayed twice: the same bits, the totals counted twice");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// ---- the head inside a network: fused (NNSTUDIO_CUDA_FUSION on) against unfused (off) ----

struct HeadNetworkRow {
  const char* name;
  const char* spec;
  bool inputGradient;
};

struct NetworkResult {
  std::vector<float> out, grads, inputGrad, evalOut;
  cuda::StepState state;
  bool fused = false;
};

// One training step (forward, loss, backward) of the spec's network on a batch of N, then an evaluation
// forward of the same batch.
inline NetworkResult runHeadNetwork(const HeadNetworkRow& c, int N) {
  const ModelSpec spec = parseModelSpec(c.spec);
  const NetworkPlan plan = planNetwork(spec);
  const int classes = plan.outputWidth == 1 ? 2 : int(plan.outputWidth);
  const auto params = initialParameters(spec, spec.seed);
  const auto x = randomVector(size_t(N) * plan.inputSize, 100);
  std::vector<int32_t> labels(static_cast<size_t>(N));
  for (int i = 0; i < N; ++i) labels[size_t(i)] = (i * 5 + 1) % classes;
  cuda::Network net(spec, N, c.inputGradient);
  DeviceVector<float> dParams(params), dX(x), dGrad(plan.parameterCount);
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{someState()});
  net.forward(nullptr, dParams.ptr, dX.ptr, N, true, 9, dState.ptr);
  net.loss(nullptr, dLabels.ptr, N, dState.ptr);
  net.backward(nullptr, dParams.ptr, dGrad.ptr, N);
  cudaOk(cudaDeviceSynchronize(), "network");
  NetworkResult r;
  r.fused = net.headFused();
  auto copy = [](const float* from, size_t n) {
    std::vector<float> host(n);
    cudaOk(cudaMemcpy(host.data(), from, sizeof(float) * n, cudaMemcpyDeviceToHost), "download");
    return host;
  };
  r.out = copy(net.outputs(), size_t(N) * plan.outputWidth);
  r.grads = dGrad.download();
  if (c.inputGradient) r.inputGrad = copy(net.inputGradient(), size_t(N) * plan.inputSize);
  r.state = dState.download()[0];
  net.forward(nullptr, dParams.ptr, dX.ptr, N, false, 9, dState.ptr);
  cudaOk(cudaDeviceSynchronize(), "evaluation");
  r.evalOut = copy(net.outputs(), r.out.size());
  return r;
}

inline void checkHeadNetwork(const HeadNetworkRow& c) {
  const int N = 37;
  const NetworkResult u = under(Variant{"unfused", [](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::Off; }},
                                [&] { return runHeadNetwork(c, N); });
  const NetworkResult f = under(Variant{"fused", [](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::On; }},
                                [&] { return runHeadNetwork(c, N); });
  Row line("dense head in a network", c.name, "fused (fusion on) vs unfused (off)");
  line.check(f.fused && !u.fused, "fused with fusion on, not with it off");
  const Tolerance vsUnfused = relative(1e-4, 1e-3);
  line.compare("outputs", f.out, u.out, vsUnfused);
  line.compare("every parameter gradient", f.grads, u.grads, vsUnfused);
  if (c.inputGradient) line.compare("input gradient", f.inputGrad, u.inputGrad, vsUnfused);
  line.check(std::fabs(f.state.batchLossSum - u.state.batchLossSum) <= 1e-6 * (1 + std::fabs(u.state.batchLossSum)) &&
                 f.state.samples == u.state.samples && f.state.correct == u.state.correct &&
                 f.state.lossSteps == u.state.lossSteps && f.state.diverged == 0,
             "StepState totals");
  if (std::string(c.spec).find("dropout") == std::string::npos) {  // dropout: training and evaluation differ
    line.compare("fused: evaluation outputs = training outputs", f.evalOut, f.out, vsUnfused);
    line.compare("unfused: evaluation outputs = training outputs", u.evalOut, u.out, vsUnfused);
  }
}

}  // namespace nnstudio::test

#endif
