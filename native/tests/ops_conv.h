// The op table's convolution rows (test_cuda_ops.cpp): conv2d forward, input gradient and weight gradient
// over every variant the chooser reaches (direct launch shapes, tensor-core tiles, the SIMT implicit GEMM,
// forced weight-gradient splits), and conv2d + max pool, fused and separate. Against cpu::conv2d_forward /
// conv2d_backward (and maxpool_*, activation_backward), outputs poisoned with NaN before every launch.
#pragma once

#ifdef NNSTUDIO_WITH_CUDA

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cpu/thread_pool.h"
#include "cuda/conv2d_pool.h"
#include "cuda/kernels.h"
#include "op_table.h"
#include "spec/model.h"

namespace nnstudio::test {

// ---- shapes ----

struct ConvCase {
  std::string name;
  int N, C, H, W, F, kh, kw, stride;
  char pad;  // 'v'alid, 's'ame, 'f'ull
};

inline cpu::ConvGeometry geometryOf(const ConvCase& c) {
  const Padding padding = c.pad == 's' ? Padding::Same : c.pad == 'f' ? Padding::Full : Padding::Valid;
  cpu::ConvGeometry g;
  g.C = c.C;
  g.H = c.H;
  g.W = c.W;
  g.F = c.F;
  g.kh = c.kh;
  g.kw = c.kw;
  g.stride = c.stride;
  convAxis(c.H, c.kh, c.stride, padding, g.OH, g.padTop);
  convAxis(c.W, c.kw, c.stride, padding, g.OW, g.padLeft);
  return g;
}

// "name [N32 1x28x28 -> 4x28x28 k2x2 s1 pad 0,0<more>]"
inline std::string describe(const ConvCase& c, const cpu::ConvGeometry& g, const std::string& more = "") {
  char text[200];
  std::snprintf(text, sizeof text, "%s [N%d %dx%dx%d -> %dx%dx%d k%dx%d s%d pad %d,%d", c.name.c_str(), c.N, g.C, g.H,
                g.W, g.F, g.OH, g.OW, g.kh, g.kw, g.stride, g.padTop, g.padLeft);
  return text + more + "]";
}

// What the forced direct variants must do on a row: run the direct kernel (square 2x2 / 3x3 / 5x5 kernels
// of the few-channel layers), never (other kernel shapes), or either.
enum class Expect { Any, All, None };

struct ConvRow {
  ConvCase c;
  Expect direct = Expect::Any;
  bool tensorCores = false;     // the forced tensor-core variants must run on them (where the GPU has TF32)
  std::vector<int> splits = {};  // weight-gradient chunk counts forced besides the chooser's
};

// ---- variants ----

// every launch shape of the direct kernel once: filters x pixels per thread, the planner's rows, forced ones
inline std::vector<cuda::ConvDirectShape> forcedDirectShapes() {
  std::vector<cuda::ConvDirectShape> shapes;
  for (int ftpx : {41, 42, 44, 81, 82}) shapes.push_back({ftpx / 10, ftpx % 10, 1, 0, 0});
  shapes.push_back({4, 2, 0, 0, 0});   // the planner's splits and rows
  shapes.push_back({4, 2, 2, 0, 0});   // channel splits
  shapes.push_back({8, 1, 4, 0, 0});
  shapes.push_back({4, 4, 3, 0, 0});   // a split count that does not divide the channels
  shapes.push_back({4, 1, 8, 1, 0});
  shapes.push_back({8, 2, 1, 1, 0});   // one row per block
  shapes.push_back({4, 4, 2, 3, 0});   // three rows per block
  shapes.push_back({8, 1, 1, 0, 16});  // few blocks: many rows per block
  return shapes;
}

// a 16-bit arithmetic's variants: by shape, split and unsplit, each forced tile
inline void addHalfVariants(std::vector<Variant>& v, const std::string& name, cuda::ConvTcMode mode) {
  using cuda::KernelOverrides;
  using cuda::Switch;
  v.push_back({name, [mode](KernelOverrides& o) { o.convDirect = Switch::Off, o.convTc = mode; }});
  for (int split : {2, 1})
    v.push_back({name + (split == 2 ? " split K" : " unsplit"), [mode, split](KernelOverrides& o) {
                   o.convDirect = Switch::Off, o.convTc = mode, o.convTcSplitK = split;
                 }});
  for (int t = 1; t <= cuda::kConvTcVariants; ++t)
    v.push_back({name + " tile " + std::to_string(t), [mode, t](KernelOverrides& o) {
                   o.convDirect = Switch::Off, o.convTc = mode, o.convTcVariant = t;
                 }});
}

// the ways to ask the chooser for each conv2d kernel: the direct kernel (planner's and forced launch shapes),
// the tensor cores (the choice by shape and every tile; plain TF32; BF16 and FP16 by shape, split or not, and every tile),
// the SIMT implicit GEMM
inline std::vector<Variant> convVariants() {
  using cuda::ConvTcMode;
  using cuda::KernelOverrides;
  using cuda::Switch;
  std::vector<Variant> v = {
      {"default", nullptr},
      {"implicit gemm", [](KernelOverrides& o) { o.convDirect = Switch::Off, o.convTc = ConvTcMode::Off; }},
      {"direct", [](KernelOverrides& o) { o.convDirect = Switch::On; }}};
  for (const cuda::ConvDirectShape& s : forcedDirectShapes()) {
    const std::string name = "direct " + std::to_string(s.ft) + "x" + std::to_string(s.px) + "/" +
                             std::to_string(s.splits) + " rows " + std::to_string(s.rows) + " @" +
                             std::to_string(s.blocks);
    v.push_back({name, [s](KernelOverrides& o) { o.convDirect = Switch::On, o.convDirectShape = s; }});
  }
  v.push_back({"tensor cores", [](KernelOverrides& o) { o.convDirect = Switch::Off, o.convTc = ConvTcMode::On; }});
  for (int t = 1; t <= cuda::kConvTcVariants; ++t)
    v.push_back({"tc tile " + std::to_string(t), [t](KernelOverrides& o) {
                   o.convDirect = Switch::Off, o.convTc = ConvTcMode::On, o.convTcVariant = t;
                 }});
  for (int t = 1; t <= cuda::kConvTcVariants; ++t)  // where the tile has a split kernel; else the same as tile t
    v.push_back({"tc tile " + std::to_string(t) + " split K", [t](KernelOverrides& o) {
                   o.convDirect = Switch::Off, o.convTc = ConvTcMode::On, o.convTcVariant = t, o.convTcSplitK = 2;
                 }});
  v.push_back({"tc split K", [](KernelOverrides& o) {
                 o.convDirect = Switch::Off, o.convTc = ConvTcMode::On, o.convTcSplitK = 2;
               }});
  v.push_back({"tc unsplit", [](KernelOverrides& o) {
                 o.convDirect = Switch::Off, o.convTc = ConvTcMode::On, o.convTcSplitK = 1;
               }});
  v.push_back({"tf32", [](KernelOverrides& o) { o.convDirect = Switch::Off, o.convTc = ConvTcMode::Tf32; }});
  for (const auto& [name, mode] : {std::pair{"bf16", ConvTcMode::Bf16}, std::pair{"fp16", ConvTcMode::Fp16}})
    addHalfVariants(v, name, mode);
  return v;
}

// BF16 products (a 7-bit mantissa: 8x TF32's rounding, about 2e-3 (1 + max |cpu|) on these rows) are checked
// against the CPU within 5x that; a wrong fragment layout or a lost K step errs by O(1).
inline constexpr Tolerance kBf16Parity{1e-2, -1.0};
inline constexpr Tolerance kBf16WgradParity{3e-2, -1.0};  // sums over every pixel of the batch
// FP16 products round 8x finer than BF16's (an 11-bit significand) on these rows' values, all well inside its
// range: 5x the expected error, as for BF16
inline constexpr Tolerance kFp16Parity{2e-3, -1.0};
inline constexpr Tolerance kFp16WgradParity{5e-3, -1.0};

inline bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// ---- one conv row ----

// A row's tensors, random and never zero (a zero input hides a wrong gate or a missed tap), and the CPU's
// results: the forward for every activation, the weight and bias gradients, the input gradient gated by
// every activation (dOut taken as dLoss/d(pre-activation), `in` as the previous activation's output).
struct ConvData {
  static constexpr float kAlpha = 0.1f;
  cpu::ConvGeometry g;
  std::vector<float> in, weight, bias, dOut;
  std::vector<std::vector<float>> out, dIn;  // per elementwise activation (op_table.h's order)
  std::vector<float> dW, dB;
  DeviceVector<float> dIn_, dWeight, dBias, dDOut;

  ConvData(cpu::ThreadPool& pool, const ConvCase& c, uint64_t seed)
      : g(geometryOf(c)),
        in(randomNonZero(size_t(c.N) * g.C * g.H * g.W, seed * 16 + 1, 1.0f)),
        weight(randomNonZero(size_t(g.F) * size_t(g.colRows()), seed * 16 + 2, 1.0f / std::sqrt(float(g.colRows())))),
        bias(randomNonZero(size_t(g.F), seed * 16 + 3, 0.5f)),
        dOut(randomNonZero(size_t(c.N) * g.F * g.OH * g.OW, seed * 16 + 4, 1.0f)),
        dIn_(in), dWeight(weight), dBias(bias), dDOut(dOut) {
    cpu::ConvScratch scratch;
    scratch.reserve(g, pool.size(), true);
    std::vector<float> y(dOut.size()), dInLinear(in.size()), dOutCopy = dOut;  // the CPU backward gates dOut in place
    dW.resize(weight.size());
    dB.resize(bias.size());
    for (ActivationFn act : elementwiseActivations()) {
      cpu::conv2d_forward(pool, scratch, y.data(), in.data(), weight.data(), bias.data(), c.N, g, act, kAlpha);
      out.push_back(y);
    }
    cpu::conv2d_forward(pool, scratch, y.data(), in.data(), weight.data(), bias.data(), c.N, g, ActivationFn::Linear,
                        0.0f);
    cpu::conv2d_backward(pool, scratch, dInLinear.data(), dW.data(), dB.data(), dOutCopy.data(), y.data(), in.data(),
                         weight.data(), c.N, g, ActivationFn::Linear, 0.0f);
    for (ActivationFn gate : elementwiseActivations()) {
      std::vector<float> gated(in.size());
      cpu::activation_backward(gated.data(), dInLinear.data(), in.data(), 1, int64_t(in.size()), gate, kAlpha);
      dIn.push_back(gated);
    }
  }
};

// The forward or input gradient through the engine's launcher with the activation (gate) `act`, into a
// poisoned output.
inline std::vector<float> runConvPass(cuda::ConvPass pass, ConvData& d, DeviceVector<float>& result, int N,
                                      ActivationFn act) {
  poison(result);
  if (pass == cuda::ConvPass::Forward)
    cuda::conv2d_forward(nullptr, result.ptr, d.dIn_.ptr, d.dWeight.ptr, d.dBias.ptr, N, d.g, act, ConvData::kAlpha);
  else
    cuda::conv2d_backward_input(nullptr, result.ptr, d.dDOut.ptr, d.dWeight.ptr, d.dIn_.ptr, N, d.g, act,
                                ConvData::kAlpha);
  return result.download();
}

// What the candidates reach: the forced direct variants run the direct kernel on every row that expects it
// and on none that must refuse it; the forced tensor-core variants run on the tensor cores where expected.
inline void checkReached(const ConvRow& row, cuda::ConvPass pass, const ConvData& d, const std::string& op) {
  Row line(op, describe(row.c, d.g), "the variants the chooser reaches");
  int direct = 0, directAsked = 0, tc = 0, tcAsked = 0;
  for (const Variant& v : convVariants()) {
    const cuda::ConvKernel k = cuda::chooseConvPass(caps(), overridesOf(v), pass, row.c.N, d.g).kernel;
    if (startsWith(v.name, "direct")) directAsked++, direct += k == cuda::ConvKernel::Direct;
    if (startsWith(v.name, "tensor cores") || startsWith(v.name, "tc tile"))
      tcAsked++, tc += k == cuda::ConvKernel::TensorCore3xTf32;
  }
  line.note(std::to_string(direct) + " of " + std::to_string(directAsked) + " direct, " + std::to_string(tc) + " of " +
            std::to_string(tcAsked) + " tensor-core variants");
  if (row.direct == Expect::All) line.check(direct == directAsked, "the direct kernel takes every forced launch shape");
  if (row.direct == Expect::None) line.check(direct == 0, "the direct kernel refuses the kernel shape");
  if (row.tensorCores && caps().tf32TensorCores())
    line.check(tc == tcAsked, "every forced tensor-core variant runs on the tensor cores");
}

// One pass over every kernel it reaches: each activation (gate) against the CPU, a second run the same bits;
// the tensor cores also against the SIMT implicit GEMM, and every 3xTF32 tile the same bits as the first.
inline void checkConvPass(const ConvRow& row, cuda::ConvPass pass, ConvData& d) {
  const bool forward = pass == cuda::ConvPass::Forward;
  const std::string op = forward ? "conv2d forward" : "conv2d input gradient";
  const int N = row.c.N;
  const std::vector<std::vector<float>>& ref = forward ? d.out : d.dIn;
  DeviceVector<float> result(forward ? d.dOut.size() : d.in.size());
  checkReached(row, pass, d, op);
  std::vector<std::vector<float>> simt;  // the SIMT implicit GEMM's results, per activation
  under(variantNamed(convVariants(), "implicit gemm"), [&] {
    for (ActivationFn act : elementwiseActivations()) simt.push_back(runConvPass(pass, d, result, N, act));
  });
  // by arithmetic and K split: a split adds the same products in another order
  std::map<std::pair<cuda::ConvKernel, int>, std::vector<float>> firstTcLinear;
  auto choiceOf = [&](const cuda::KernelOverrides& o) { return cuda::chooseConvPass(caps(), o, pass, N, d.g); };
  for (const Reached& r : reached(convVariants(), [&](const cuda::KernelOverrides& o) { return choiceOf(o).name(); })) {
    Row line(op, describe(row.c, d.g), r.label());
    const cuda::ConvPassChoice choice = choiceOf(overridesOf(r.variant));
    const cuda::ConvKernel kernel = choice.kernel;
    under(r.variant, [&] {
      const auto& acts = elementwiseActivations();
      std::vector<float> linear;
      for (size_t a = 0; a < acts.size(); ++a) {
        const std::vector<float> got = runConvPass(pass, d, result, N, acts[a]);
        if (a == 0) linear = got;
        const std::string what = activationName(acts[a]);
        if (kernel == cuda::ConvKernel::TensorCoreTf32) {  // comparisons only: not within the FP32 tolerance
          if (a == 0)
            line.note("1xTF32 error " + nnstudio_test::num(normalisedError(got, ref[a], kParity)) + ", not checked");
          continue;
        }
        if (kernel == cuda::ConvKernel::TensorCoreBf16) {
          line.compare(what + " (BF16 products)", got, ref[a], kBf16Parity);
          continue;
        }
        if (kernel == cuda::ConvKernel::TensorCoreFp16) {
          line.compare(what + " (FP16 products)", got, ref[a], kFp16Parity);
          continue;
        }
        line.compare(what, got, ref[a]);
        if (kernel == cuda::ConvKernel::TensorCore3xTf32) line.compare(what + " vs the SIMT GEMM", got, simt[a]);
      }
      line.check(sameBits(runConvPass(pass, d, result, N, acts[0]), linear), "a second run gives the same bits");
      if (kernel != cuda::ConvKernel::TensorCore3xTf32 && kernel != cuda::ConvKernel::TensorCoreBf16 &&
          kernel != cuda::ConvKernel::TensorCoreFp16)
        return;
      std::vector<float>& first = firstTcLinear[{kernel, choice.tc.splitK}];
      if (first.empty()) first = linear;
      else line.check(sameBits(linear, first), "the same bits as the first tensor-core tile of its arithmetic and K split");
    });
  }
}

// the weight gradient's kernels: the chooser's, the SIMT kernel, the tensor cores (the choice by shape and
// every tile; plain TF32; BF16 and FP16 by shape and every tile)
inline std::vector<Variant> convWgradVariants() {
  using cuda::ConvTcMode;
  using cuda::KernelOverrides;
  std::vector<Variant> v = {{"default", nullptr},
                            {"simt", [](KernelOverrides& o) { o.convTc = ConvTcMode::Off; }},
                            {"tensor cores", [](KernelOverrides& o) { o.convTc = ConvTcMode::On; }}};
  for (int t = 1; t <= cuda::kConvTcVariants; ++t)
    v.push_back({"tc tile " + std::to_string(t), [t](KernelOverrides& o) {
                   o.convTc = ConvTcMode::On, o.convTcVariant = t;
                 }});
  v.push_back({"tf32", [](KernelOverrides& o) { o.convTc = ConvTcMode::Tf32; }});
  v.push_back({"bf16", [](KernelOverrides& o) { o.convTc = ConvTcMode::Bf16; }});
  for (int t = 1; t <= cuda::kConvTcVariants; ++t)
    v.push_back({"bf16 tile " + std::to_string(t), [t](KernelOverrides& o) {
                   o.convTc = ConvTcMode::Bf16, o.convTcVariant = t;
                 }});
  v.push_back({"fp16", [](KernelOverrides& o) { o.convTc = ConvTcMode::Fp16; }});
  for (int t = 1; t <= cuda::kConvTcVariants; ++t)
    v.push_back({"fp16 tile " + std::to_string(t), [t](KernelOverrides& o) {
                   o.convTc = ConvTcMode::Fp16, o.convTcVariant = t;
                 }});
  return v;
}

// The weight and bias gradients of every kernel reached, with the chooser's split and each forced one,
// against the CPU; 3 launches in a row and 5 replays of a CUDA graph of 2 launches give the same bits.
inline void checkConvWeightGradient(const ConvRow& row, ConvData& d) {
  const int N = row.c.N;
  std::vector<Variant> variants;
  for (const Variant& base : convWgradVariants()) {
    variants.push_back(base);
    for (int forced : row.splits)
      variants.push_back({base.name + ", splits " + std::to_string(forced), [base, forced](cuda::KernelOverrides& o) {
                            if (base.edit) base.edit(o);
                            o.convWgradSplits = forced;
                          }});
  }
  auto planOf = [&](const cuda::KernelOverrides& o) { return cuda::chooseConvWeightGrad(caps(), o, N, d.g); };
  DeviceVector<float> gDW(d.dW.size()), gDB(d.dB.size());
  cudaStream_t stream;
  cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  for (const Reached& r : reached(variants, [&](const cuda::KernelOverrides& o) { return planOf(o).name(); })) {
    const cuda::ConvWgradPlan plan = planOf(overridesOf(r.variant));
    Row line("conv2d weight gradient", describe(row.c, d.g), r.label());
    const bool tcAsked = startsWith(r.variant.name, "tensor cores") || startsWith(r.variant.name, "tc tile");
    if (tcAsked && row.tensorCores && caps().tf32TensorCores())
      line.check(plan.tc, "the forced tensor-core variant runs on the tensor cores");
    under(r.variant, [&] {
      DeviceVector<float> work(std::max<size_t>(cuda::conv2d_weights_workspace(N, d.g), 1));
      auto launch = [&] {
        cuda::conv2d_backward_weights(stream, gDW.ptr, gDB.ptr, d.dDOut.ptr, d.dIn_.ptr, N, d.g, work.ptr);
      };
      poison(gDW);
      poison(gDB);
      poison(work);
      launch();
      cudaOk(cudaStreamSynchronize(stream), "weight gradient");
      const std::vector<float> dW = gDW.download(), dB = gDB.download();
      if (plan.tc && plan.math == cuda::TcMath::Tf32) {  // comparisons only: not within the FP32 tolerance
        line.note("1xTF32 error " + nnstudio_test::num(normalisedError(dW, d.dW, kParity)));
        line.compare("dWeight within 100x the FP32 tolerance (1xTF32)", dW, d.dW, Tolerance{1e-2, -1.0});
        line.compare("dBias", dB, d.dB);  // summed in FP32 all the same
      } else if (plan.tc && plan.math == cuda::TcMath::Bf16) {
        line.compare("dWeight (BF16 products)", dW, d.dW, kBf16WgradParity);
        line.compare("dBias", dB, d.dB);  // summed in FP32 from the FP32 tiles
      } else if (plan.tc && plan.math == cuda::TcMath::Fp16) {
        line.compare("dWeight (FP16 products)", dW, d.dW, kFp16WgradParity);
        line.compare("dBias", dB, d.dB);
      } else {
        line.compare("dWeight", dW, d.dW);
        line.compare("dBias", dB, d.dB);
      }
      line.check(sameBitsWhenRepeated(stream, launch, {&gDW, &gDB}, {dW, dB}, 5),
                 "3 launches in a row and 5 graph replays give the same bits");
    });
  }
  cudaOk(cudaStreamDestroy(stream), "stream");
}

inline void checkConvRow(cpu::ThreadPool& pool, const ConvRow& row, uint64_t seed) {
  ConvData d(pool, row.c, seed);
  checkConvPass(row, cuda::ConvPass::Forward, d);
  checkConvPass(row, cuda::ConvPass::InputGradient, d);
  checkConvWeightGradient(row, d);
}

// ---- conv2d + max pool ----

struct ConvPoolRow {
  ConvCase c;
  int poolSize, poolStride;
  ActivationFn act;
};

inline cpu::PoolGeometry poolAfter(const ConvPoolRow& row, const cpu::ConvGeometry& g) {
  cpu::PoolGeometry p;
  p.C = g.F;
  p.H = g.OH;
  p.W = g.OW;
  p.size = row.poolSize;
  p.stride = row.poolStride;
  p.OH = (g.OH - p.size) / p.stride + 1;
  p.OW = (g.OW - p.size) / p.stride + 1;
  return p;
}

// Dyadic inputs and weights (multiples of 1/16 and 1/256): every conv sum is exact in any order, so the
// argmax is well defined and the weight gradient is held to 1e-4 of its largest magnitude, no absolute slack.
struct ConvPoolData {
  static constexpr float kAlpha = 0.1f;
  cpu::ConvGeometry g;
  cpu::PoolGeometry p;
  std::vector<float> in, weight, bias, dPooled, pooled, dW, dB;
  std::vector<int32_t> argmax;
  DeviceVector<float> dIn_, dWeight, dBias, dDPooled;

  ConvPoolData(cpu::ThreadPool& pool, const ConvPoolRow& row, uint64_t seed)
      : g(geometryOf(row.c)),
        p(poolAfter(row, g)),
        in(randomNonZero(size_t(row.c.N) * g.C * g.H * g.W, seed * 16 + 1, 1.0f, 1.0f / 16)),
        weight(randomNonZero(size_t(g.F) * size_t(g.colRows()), seed * 16 + 2, 0.5f / std::sqrt(float(g.colRows())),
                             1.0f / 256)),
        bias(randomNonZero(size_t(g.F), seed * 16 + 3, 0.25f, 1.0f / 256)),
        dPooled(randomNonZero(size_t(row.c.N) * g.F * p.OH * p.OW, seed * 16 + 4, 1.0f)),
        dIn_(in), dWeight(weight), dBias(bias), dDPooled(dPooled) {
    const int N = row.c.N;
    cpu::ConvScratch scratch;
    scratch.reserve(g, pool.size(), true);
    std::vector<float> y(size_t(N) * g.F * g.OH * g.OW), dY(y.size());
    pooled.resize(dPooled.size());
    argmax.resize(dPooled.size());
    dW.resize(weight.size());
    dB.resize(bias.size());
    cpu::conv2d_forward(pool, scratch, y.data(), in.data(), weight.data(), bias.data(), N, g, row.act, kAlpha);
    cpu::maxpool_forward(pool, pooled.data(), argmax.data(), y.data(), N, p);
    cpu::maxpool_backward(pool, dY.data(), dPooled.data(), argmax.data(), N, p);
    cpu::activation_backward(dY.data(), dY.data(), y.data(), 1, int64_t(y.size()), row.act, kAlpha);
    cpu::conv2d_backward(pool, scratch, nullptr, dW.data(), dB.data(), dY.data(), y.data(), in.data(), weight.data(), N,
                         g, ActivationFn::Linear, 0.0f);
  }
};

inline std::vector<Variant> convPoolVariants() {
  return {{"default", nullptr},
          {"fused", [](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::On; }},
          {"fused, 1 filter block a block",
           [](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::On, o.convPoolLoops = 1; }},
          {"fused, 3 filter blocks a block",
           [](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::On, o.convPoolLoops = 3; }},
          {"fused, thin chunks for 64 blocks",
           [](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::On, o.convPoolThinBlocks = 64; }},
          {"separate", [](cuda::KernelOverrides& o) { o.fusion = cuda::Switch::Off; }}};
}

// the fused kernels' plans as the op table names them: "fused" and, where they apply, the forward's filter loops,
// the thin weight gradient, its prefetch and its chunks
inline std::string convPoolPlanName(const cuda::KernelOverrides& o, int N, const cpu::ConvGeometry& g,
                                    const cpu::PoolGeometry& p) {
  const cuda::ConvPoolForwardPlan f = cuda::planConvPoolForward(caps(), N, g, p, o.convPoolLoops);
  const cuda::ConvPoolWeightsPlan w = cuda::planConvPoolWeights(N, g, p, o.convPoolThinBlocks);
  std::string name = "fused";
  if (f.FL > 1) name += ", " + std::to_string(f.FL) + " filter blocks a block";
  if (w.thin) name += std::string(", thin") + (w.prefetch ? " prefetched" : "") + " in " + std::to_string(w.chunks) + " chunks";
  return name;
}

// The forward's window bytes (conv2d_pool.h `windows`, as the network runs a first conv + pool): the same pooled
// bits with the int32 argmax not written, each byte the argmax's row and column in its window and the pooled
// value's sign; the thin weight gradient from them gives the bits it gives from the argmax.
inline void checkPoolWindowBytes(const ConvPoolRow& row, const ConvPoolData& d, const std::string& shape,
                                 const std::string& variant, const DeviceVector<float>& gPooled,
                                 const DeviceVector<int32_t>& gArgmax, cudaStream_t stream) {
  const int N = row.c.N;
  Row line("conv2d + max pool", shape, variant + ", window bytes");
  line.check(cuda::chooseConvPoolWindowBytes(cuda::kernelOverrides(), d.g, d.p), "the chooser takes it");
  DeviceVector<float> pooled(d.dPooled.size());
  DeviceVector<uint8_t> windows(d.dPooled.size());
  poison(pooled);
  cuda::conv2d_maxpool_forward(stream, pooled.ptr, nullptr, d.dIn_.ptr, d.dWeight.ptr, d.dBias.ptr, N, d.g, d.p,
                               row.act, ConvPoolData::kAlpha, windows.ptr);
  cudaOk(cudaStreamSynchronize(stream), "forward with window bytes");
  const std::vector<float> want = gPooled.download(), got = pooled.download();
  line.check(sameBits(got, want), "pooled: the bits written beside the int32 argmax");
  const std::vector<int32_t> argmax = gArgmax.download();
  const std::vector<uint8_t> bytes = windows.download();
  const int PQ = d.p.OH * d.p.OW, plane = d.g.OH * d.g.OW;
  size_t wrong = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int q = int(i % size_t(PQ)), f = int(i / size_t(PQ) % size_t(d.g.F));
    const int oy = q / d.p.OW * d.p.stride + (bytes[i] >> 2 & 3), ox = q % d.p.OW * d.p.stride + (bytes[i] & 3);
    const bool positive = (bytes[i] & 0x80) != 0;
    wrong += argmax[i] != f * plane + oy * d.g.OW + ox || positive != (want[i] > 0.0f) || (bytes[i] & 0x70) != 0;
  }
  line.check(wrong == 0, "each byte: the argmax's place in its window and the pooled value's sign",
             std::to_string(wrong) + " wrong");
  const size_t ws = cuda::conv2d_maxpool_weights_workspace(N, d.g, d.p);
  DeviceVector<float> work(std::max<size_t>(ws, 1)), dW(d.dW.size()), dB(d.dB.size());
  auto run = [&](const int32_t* am, const uint8_t* wb) {
    poison(dW);
    poison(dB);
    cuda::conv2d_maxpool_backward_weights(stream, dW.ptr, dB.ptr, d.dDPooled.ptr, gPooled.ptr, am, d.dIn_.ptr, N, d.g,
                                          d.p, row.act, ConvPoolData::kAlpha, work.ptr, wb);
    cudaOk(cudaStreamSynchronize(stream), "weight gradient from window bytes");
    return std::make_pair(dW.download(), dB.download());
  };
  const auto fromArgmax = run(gArgmax.ptr, nullptr), fromBytes = run(nullptr, windows.ptr);
  line.check(sameBits(fromBytes.first, fromArgmax.first) && sameBits(fromBytes.second, fromArgmax.second),
             "dWeight and dBias from the bytes: the argmax's bits");
}

// Forward and weight gradient, fused (one kernel, the conv's output never stored) or as the conv and the
// pool's own kernels (as the network runs them): the pooled values, the argmax (exact), dW and dB, and the
// weight gradient repeated (3 launches, 4 graph replays) gives the same bits.
inline void checkConvPoolRow(cpu::ThreadPool& pool, const ConvPoolRow& row, uint64_t seed) {
  ConvPoolData d(pool, row, seed);
  const int N = row.c.N;
  char more[100];
  std::snprintf(more, sizeof more, "; pool %d/%d -> %dx%d; %s", d.p.size, d.p.stride, d.p.OH, d.p.OW,
                activationName(row.act));
  const std::string shape = describe(row.c, d.g, more);
  auto choiceOf = [&](const cuda::KernelOverrides& o) {
    return cuda::chooseConvPoolFusion(o, d.g, d.p, row.act, row.c.N) ? convPoolPlanName(o, N, d.g, d.p)
                                                                       : std::string("separate");
  };
  {
    Row line("conv2d + max pool", shape, "the variants the chooser reaches");
    const Variant fused = variantNamed(convPoolVariants(), "fused");
    line.check(choiceOf(overridesOf(fused)) != "separate", "the fused kernel takes it");
  }
  DeviceVector<float> gPooled(d.dPooled.size()), gDW(d.dW.size()), gDB(d.dB.size());
  DeviceVector<int32_t> gArgmax(d.dPooled.size());
  DeviceVector<float> convOut(size_t(N) * d.g.F * d.g.OH * d.g.OW), convGrad(convOut.count);
  cudaStream_t stream;
  cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  for (const Reached& r : reached(convPoolVariants(), choiceOf)) {
    Row line("conv2d + max pool", shape, r.label());
    const bool fused = r.choice != "separate";
    under(r.variant, [&] {
      poison(gPooled);
      poison(gArgmax);
      if (fused) {
        cuda::conv2d_maxpool_forward(stream, gPooled.ptr, gArgmax.ptr, d.dIn_.ptr, d.dWeight.ptr, d.dBias.ptr, N, d.g,
                                     d.p, row.act, ConvPoolData::kAlpha);
      } else {
        cuda::conv2d_forward(stream, convOut.ptr, d.dIn_.ptr, d.dWeight.ptr, d.dBias.ptr, N, d.g, row.act,
                             ConvPoolData::kAlpha);
        cuda::maxpool_forward(stream, gPooled.ptr, gArgmax.ptr, convOut.ptr, N, d.p);
      }
      cudaOk(cudaStreamSynchronize(stream), "forward");
      line.compare("pooled", gPooled.download(), d.pooled);
      const std::vector<int32_t> am = gArgmax.download();
      size_t mismatches = 0;
      for (size_t i = 0; i < am.size(); ++i) mismatches += am[i] != d.argmax[i];
      line.check(mismatches == 0, "argmax exact", std::to_string(mismatches) + " differ");
      const size_t ws =
          fused ? cuda::conv2d_maxpool_weights_workspace(N, d.g, d.p) : cuda::conv2d_weights_workspace(N, d.g);
      DeviceVector<float> work(std::max<size_t>(ws, 1));
      poison(work);
      auto launch = [&] {
        if (fused) {
          cuda::conv2d_maxpool_backward_weights(stream, gDW.ptr, gDB.ptr, d.dDPooled.ptr, gPooled.ptr, gArgmax.ptr,
                                                d.dIn_.ptr, N, d.g, d.p, row.act, ConvPoolData::kAlpha, work.ptr);
        } else {
          cuda::maxpool_backward_from_output(stream, convGrad.ptr, d.dDPooled.ptr, gArgmax.ptr, gPooled.ptr, N, d.p,
                                             row.act, ConvPoolData::kAlpha);
          cuda::conv2d_backward_weights(stream, gDW.ptr, gDB.ptr, convGrad.ptr, d.dIn_.ptr, N, d.g, work.ptr);
        }
      };
      poison(gDW);
      poison(gDB);
      launch();
      cudaOk(cudaStreamSynchronize(stream), "weight gradient");
      const std::vector<float> dW = gDW.download(), dB = gDB.download();
      line.compare("dWeight", dW, d.dW, kRelative);
      line.compare("dBias", dB, d.dB, kRelative);
      line.check(sameBitsWhenRepeated(stream, launch, {&gDW, &gDB}, {dW, dB}, 4),
                 "the weight gradient: 3 launches in a row and 4 graph replays give the same bits");
      if (fused && cuda::planConvPoolWeights(N, d.g, d.p, cuda::kernelOverrides().convPoolThinBlocks).thin)
        checkPoolWindowBytes(row, d, shape, r.label(), gPooled, gArgmax, stream);
    });
  }
  cudaOk(cudaStreamDestroy(stream), "stream");
}

}  // namespace nnstudio::test

#endif
