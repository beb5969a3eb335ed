// `test_cuda_ops --bench`: microseconds per launch of every variant the chooser reaches, on the presets'
// full shapes, inside a CUDA graph of 20 launches (median of 50), as the engine runs them. The measurements
// behind the chooser's thresholds (cuda/choose_*.cpp) are taken this way.
#pragma once

#ifdef NNSTUDIO_WITH_CUDA

#include <cstdio>
#include <string>
#include <vector>

#include "cuda/mlp_step_launch.h"
#include "cuda_timing.h"
#include "ops_conv.h"
#include "ops_dense.h"

namespace nnstudio::test {

class Bench {
 public:
  Bench() { cudaOk(cudaStreamCreate(&stream_), "stream"); }
  ~Bench() { cudaStreamDestroy(stream_); }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;
  cudaStream_t stream() const { return stream_; }

  // "what 12.3 us": µs per call of fn (it enqueues on stream()), in a CUDA graph
  template <class Fn>
  std::string time(const char* what, Fn&& fn) const {
    char text[64];
    std::snprintf(text, sizeof text, "%s%s%.1f us", what, *what ? " " : "", timeLaunches(fn, stream_, true));
    return text;
  }
  static void line(const std::string& op, const std::string& shape, const std::string& variant, const std::string& t) {
    std::printf("  %s | %s | %s | %s\n", op.c_str(), shape.c_str(), variant.c_str(), t.c_str());
  }

 private:
  cudaStream_t stream_ = nullptr;
};

// the forward and input gradient over every variant (ReLU, ReLU-gated), the weight gradient once
inline void benchConv(const Bench& b, const ConvCase& c) {
  const cpu::ConvGeometry g = geometryOf(c);
  const std::string shape = describe(c, g);
  const int N = c.N;
  DeviceVector<float> in(randomNonZero(size_t(N) * g.C * g.H * g.W, 1, 1.0f)),
      weight(randomNonZero(size_t(g.F) * size_t(g.colRows()), 2, 0.3f)), bias(randomNonZero(size_t(g.F), 3, 0.1f)),
      dOut(randomNonZero(size_t(N) * g.F * g.OH * g.OW, 4, 1.0f)), out(dOut.count), dIn(in.count), dW(weight.count),
      dB(bias.count);
  const cudaStream_t s = b.stream();
  const ActivationFn R = ActivationFn::ReLU;
  for (cuda::ConvPass pass : {cuda::ConvPass::Forward, cuda::ConvPass::InputGradient}) {
    const bool forward = pass == cuda::ConvPass::Forward;
    auto choiceOf = [&](const cuda::KernelOverrides& o) { return cuda::chooseConvPass(caps(), o, pass, N, g).name(); };
    for (const Reached& r : reached(convVariants(), choiceOf)) {
      const std::string t = under(r.variant, [&] {
        return b.time("", [&] {
          if (forward) cuda::conv2d_forward(s, out.ptr, in.ptr, weight.ptr, bias.ptr, N, g, R, 0);
          else cuda::conv2d_backward_input(s, dIn.ptr, dOut.ptr, weight.ptr, in.ptr, N, g, R, 0);
        });
      });
      Bench::line(forward ? "conv2d forward" : "conv2d input gradient", shape, r.label(), t);
    }
  }
  auto wgradPlan = [&](const cuda::KernelOverrides& o) { return cuda::chooseConvWeightGrad(caps(), o, N, g).name(); };
  for (const Reached& r : reached(convWgradVariants(), wgradPlan)) {
    const std::string t = under(r.variant, [&] {
      DeviceVector<float> work(std::max<size_t>(cuda::conv2d_weights_workspace(N, g), 1));
      return b.time("", [&] { cuda::conv2d_backward_weights(s, dW.ptr, dB.ptr, dOut.ptr, in.ptr, N, g, work.ptr); });
    });
    Bench::line("conv2d weight gradient", shape, r.label(), t);
  }
}

// fused against the conv and the pool's own kernels: forward, and the weight gradient from the pool's gradient
inline void benchConvPool(const Bench& b, const ConvPoolRow& row) {
  const cpu::ConvGeometry g = geometryOf(row.c);
  const cpu::PoolGeometry p = poolAfter(row, g);
  const std::string shape = describe(row.c, g, "; pool " + std::to_string(p.size) + "/" + std::to_string(p.stride));
  if (!cuda::convPoolSupported(g, p)) return Bench::line("conv2d + max pool", shape, "fused", "not supported");
  const int N = row.c.N;
  const size_t outSize = size_t(N) * g.F * g.OH * g.OW, pooledSize = size_t(N) * g.F * p.OH * p.OW;
  DeviceVector<float> in(randomNonZero(size_t(N) * g.C * g.H * g.W, 1, 1.0f)),
      weight(randomNonZero(size_t(g.F) * size_t(g.colRows()), 2, 0.3f)), bias(randomNonZero(size_t(g.F), 3, 0.1f)),
      dPooled(randomNonZero(pooledSize, 4, 1.0f)), pooled(pooledSize), dW(weight.count), dB(bias.count), out(outSize),
      dOut(outSize);
  DeviceVector<int32_t> argmax(pooledSize);
  const size_t ws = std::max(cuda::conv2d_maxpool_weights_workspace(N, g, p), cuda::conv2d_weights_workspace(N, g));
  DeviceVector<float> work(std::max<size_t>(ws, 1));
  const cudaStream_t s = b.stream();
  const ActivationFn act = row.act;
  Bench::line("conv2d + max pool", shape, "fused",
              b.time("forward",
                     [&] {
                       cuda::conv2d_maxpool_forward(s, pooled.ptr, argmax.ptr, in.ptr, weight.ptr, bias.ptr, N, g, p,
                                                    act, 0);
                     }) +
                  ", " + b.time("weight gradient", [&] {
                    cuda::conv2d_maxpool_backward_weights(s, dW.ptr, dB.ptr, dPooled.ptr, pooled.ptr, argmax.ptr,
                                                          in.ptr, N, g, p, act, 0, work.ptr);
                  }));
  Bench::line("conv2d + max pool", shape, "separate",
              b.time("forward",
                     [&] {
                       cuda::conv2d_forward(s, out.ptr, in.ptr, weight.ptr, bias.ptr, N, g, act, 0);
                       cuda::maxpool_forward(s, pooled.ptr, argmax.ptr, out.ptr, N, p);
                     }) +
                  ", " + b.time("weight gradient", [&] {
                    cuda::maxpool_backward_from_output(s, dOut.ptr, dPooled.ptr, argmax.ptr, pooled.ptr, N, p, act, 0);
                    cuda::conv2d_backward_weights(s, dW.ptr, dB.ptr, dOut.ptr, in.ptr, N, g, work.ptr);
                  }));
}

// the three passes over every GEMM plan (ReLU forward, ReLU-gated input gradient)
inline void benchDense(const Bench& b, int N, int inputs, int units) {
  DeviceVector<float> in(randomVector(size_t(N) * inputs, 5)), w(randomVector(size_t(units) * inputs, 6, 0.02f)),
      bias(randomVector(size_t(units), 7)), dOut(randomVector(size_t(N) * units, 8)), out(size_t(N) * units),
      dW(w.count), dB(bias.count), dIn(in.count);
  const cudaStream_t s = b.stream();
  const ActivationFn R = ActivationFn::ReLU;
  auto plans = [&](const cuda::KernelOverrides& o) {
    return gemmPlan(o, N, units, inputs) + " " + gemmPlan(o, units, inputs, N) + " " +
           gemmPlan(o, false, false, N, inputs, units);
  };
  const std::string shape = "N=" + std::to_string(N) + " " + std::to_string(inputs) + "->" + std::to_string(units);
  for (const Reached& r : reached(gemmVariants(), plans)) {
    const std::string t = under(r.variant, [&] {
      return b.time("forward",
                    [&] { cuda::dense_forward(s, out.ptr, in.ptr, w.ptr, bias.ptr, N, inputs, units, R, 0); }) +
             ", " + b.time("dW+dB", [&] {
               cuda::dense_backward_weights(s, dW.ptr, dB.ptr, dOut.ptr, in.ptr, N, inputs, units, nullptr);
             }) +
             ", " + b.time("dIn", [&] {
               cuda::dense_backward_input(s, dIn.ptr, dOut.ptr, w.ptr, in.ptr, N, inputs, units, R, 0);
             });
    });
    Bench::line("dense", shape, r.label(), t);
  }
}

// a training step's head: the four separate launches, then fused at every cluster size that fits
inline void benchHead(const Bench& b, int N, int I, int K, bool inputGrad) {
  const HeadRow r{N, I, K, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, inputGrad};
  DeviceVector<float> x(headInput(r, 1)), w(randomVector(size_t(K) * I, 2, 0.05f)), bias(randomVector(size_t(K), 3)),
      out(size_t(N) * K), gW(w.count), gB(bias.count), gIn(x.count), dOut(out.count);
  DeviceVector<int32_t> labels(headLabels(r));
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{cuda::StepState{}});
  float* dIn = inputGrad ? gIn.ptr : nullptr;
  const cudaStream_t s = b.stream();
  Bench::line("dense head", headShape(r), "separate", b.time("", [&] {
                cuda::dense_forward(s, out.ptr, x.ptr, w.ptr, bias.ptr, N, I, K, ActivationFn::Linear, 0.0f);
                cuda::loss_forward_backward(s, r.loss, out.ptr, labels.ptr, N, K, dOut.ptr, state.ptr);
                cuda::dense_backward_weights(s, gW.ptr, gB.ptr, dOut.ptr, x.ptr, N, I, K, nullptr);
                if (dIn) cuda::dense_backward_input(s, dIn, dOut.ptr, w.ptr, x.ptr, N, I, K, r.inAct, 0.0f);
              }));
  for (int blocks : {1, 2, 4, 8, 16}) {
    if (cuda::denseHeadBlocks(caps(), blocks) != blocks || !cuda::denseHeadFits(caps(), N, I, K, blocks)) continue;
    Bench::line("dense head", headShape(r), "fused, " + std::to_string(blocks) + " block(s)", b.time("", [&] {
                  cuda::dense_head_fused(s, r.loss, out.ptr, gW.ptr, gB.ptr, dIn, x.ptr, w.ptr, bias.ptr, labels.ptr, N,
                                         I, K, ActivationFn::Linear, 0.0f, r.inAct, 0.0f, state.ptr, blocks);
                }));
  }
}

// the fused MLP step (mlp_step.h), 8 steps a launch, in the column split and in the unit split, on the mlp preset's
// shape and on table-sized ones (few inputs): microseconds a step, plain SGD, mixed precision (1xTF32)
inline void benchMlpStep(const Bench& b, int I, int H, int K, int N) {
  constexpr int kSteps = 8, kRows = 4096;
  const size_t P = size_t(H) * I + H + size_t(K) * H + K;
  DeviceVector<float> features(randomVector(size_t(kRows) * I, 11)), params(randomVector(P, 12, 0.05f)), backup(P);
  std::vector<int32_t> hostLabels(kRows);
  std::vector<uint32_t> hostOrder(size_t(kSteps) * N);
  Rng rng(13);
  for (int32_t& y : hostLabels) y = int32_t(rng.uniform() * K) % K;
  for (uint32_t& row : hostOrder) row = uint32_t(rng.uniform() * kRows) % kRows;
  DeviceVector<int32_t> labels(hostLabels);
  DeviceVector<uint32_t> order(hostOrder);
  cuda::StepState start{};
  start.baseLr = 0.01;
  DeviceVector<cuda::StepState> state(std::vector<cuda::StepState>{start}), initial(std::vector<cuda::StepState>{start});
  cuda::MlpStepArgs a;
  a.features = features.ptr;
  a.labels = labels.ptr;
  a.order = order.ptr;
  a.batch = N;
  a.inputs = I;
  a.hidden = H;
  a.classes = K;
  a.params = params.ptr;
  a.backup = backup.ptr;
  a.w1 = 0;
  a.b1 = size_t(H) * I;
  a.w2 = a.b1 + H;
  a.b2 = a.w2 + size_t(K) * H;
  a.state = state.ptr;
  a.schedule.initialLr = 0.01;
  a.precision = Precision::Mixed;
  cuda::MlpStepShape shape;
  shape.inputs = I;
  shape.hidden = H;
  shape.classes = K;
  shape.maxRows = N;
  const cudaStream_t s = b.stream();
  auto restart = [&] {  // every launch starts at the epoch's step 0 (the step counters advance)
    cudaOk(cudaMemcpyAsync(state.ptr, initial.ptr, sizeof(cuda::StepState), cudaMemcpyDeviceToDevice, s), "state");
  };
  const std::string what = std::to_string(I) + "-" + std::to_string(H) + "-" + std::to_string(K) + " N=" + std::to_string(N);
  auto perStep = [&](const char* label, auto launch) {
    const float us = timeLaunches([&] { restart(); launch(); }, s, true) / kSteps;
    char t[64];
    std::snprintf(t, sizeof t, "%.2f us a step", us);
    Bench::line("fused MLP step", what, label, t);
  };
  if (const int blocks = cuda::mlp_step_blocks(shape); blocks >= 2) {
    const cuda::MlpStepLayout l = cuda::mlpStepLayout(shape, blocks);
    perStep(("columns, " + std::to_string(blocks) + " blocks").c_str(), [&] { cuda::mlp_step_fused(s, a, l, N, kSteps); });
  }
  if (const cuda::MlpUnitLayout u = cuda::mlp_unit_step_layout(shape); u.blocks >= 2) {
    DeviceVector<float> staging(u.stagingFloats(I));
    a.staging = staging.ptr;
    perStep(("units, " + std::to_string(u.blocks) + " blocks, ring " + std::to_string(u.ring)).c_str(),
            [&] { cuda::mlp_unit_step_fused(s, a, u, N, kSteps); });
  }
}

// `section`: "mlp" times the fused MLP step alone; anything else, every op
inline int bench(const std::string& section = "") {
  const Bench b;
  std::printf("microseconds per launch inside a CUDA graph of 20 launches (median of 50)\n");
  const int mlpShapes[][4] = {{784, 128, 10, 64}, {784, 128, 10, 256}, {20, 128, 3, 64}, {20, 64, 2, 32},
                              {54, 128, 7, 256}, {100, 256, 10, 128}, {8, 32, 2, 64}, {200, 512, 5, 64}};
  for (const auto& m : mlpShapes) benchMlpStep(b, m[0], m[1], m[2], m[3]);
  if (section == "mlp") return 0;
  const ActivationFn R = ActivationFn::ReLU;
  const ConvCase convs[] = {
      {"seed000 conv1", 32, 1, 28, 28, 4, 2, 2, 1, 's'},      {"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'},
      {"seed001 F64", 100, 1, 28, 28, 64, 3, 3, 1, 'v'},      {"seed001 F256", 1000, 1, 28, 28, 256, 3, 3, 1, 'v'},
      {"seed002 conv1", 32, 1, 28, 28, 8, 5, 5, 1, 'v'},      {"seed002 conv2", 32, 8, 24, 24, 8, 5, 5, 1, 'v'},
      {"keras conv1", 128, 1, 28, 28, 32, 3, 3, 1, 'v'},      {"keras conv2", 128, 32, 26, 26, 64, 3, 3, 1, 'v'},
      {"lenet conv1", 64, 1, 28, 28, 6, 5, 5, 1, 's'},        {"lenet conv2", 64, 6, 14, 14, 16, 5, 5, 1, 'v'},
      {"fast_mnist conv1", 256, 1, 28, 28, 24, 5, 5, 1, 'v'}, {"fast_mnist conv2", 256, 24, 12, 12, 32, 5, 5, 1, 'v'},
      {"C16 F16 3x3", 32, 16, 28, 28, 16, 3, 3, 1, 's'},      {"C64 F64 s 3x3", 128, 64, 14, 14, 64, 3, 3, 1, 's'},
      {"C32 F64 s2", 128, 32, 26, 26, 64, 3, 3, 2, 's'},
  };
  for (const ConvCase& c : convs) benchConv(b, c);
  const ConvPoolRow pools[] = {
      {{"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'}, 4, 4, R},
      {{"seed001 F64", 100, 1, 28, 28, 64, 3, 3, 1, 'v'}, 2, 2, R},
      {{"seed001 F256", 1000, 1, 28, 28, 256, 3, 3, 1, 'v'}, 2, 2, R},
      {{"seed002 conv2", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, 2, 2, R},
      {{"keras conv2", 128, 32, 26, 26, 64, 3, 3, 1, 'v'}, 2, 2, R},
      {{"lenet conv2", 128, 6, 14, 14, 16, 5, 5, 1, 'v'}, 2, 2, R},
      {{"fast_mnist conv1", 256, 1, 28, 28, 24, 5, 5, 1, 'v'}, 2, 2, R},
      {{"fast_mnist conv2", 256, 24, 12, 12, 32, 5, 5, 1, 'v'}, 2, 2, R},
  };
  for (const ConvPoolRow& row : pools) benchConvPool(b, row);
  for (const auto& l : kPresetDenseLayers)
    for (int N : kPresetBatches) benchDense(b, N, l[0], l[1]);
  const int heads[][3] = {{32, 128, 10},  {64, 84, 10},   {64, 128, 10},  {100, 128, 10}, {128, 128, 10},
                          {128, 256, 10}, {64, 512, 10},  {128, 320, 10}, {32, 1024, 10}, {256, 128, 10},
                          {128, 128, 32}, {256, 512, 10}, {128, 784, 10}, {32, 2048, 10}};
  for (const auto& h : heads)
    for (bool inputGrad : {true, false}) benchHead(b, h[0], h[1], h[2], inputGrad);
  return 0;
}

}  // namespace nnstudio::test

#endif
