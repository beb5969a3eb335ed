// The kernel chooser (cuda/kernel_choice.h), the environment overrides (cuda/kernel_overrides.h) and the
// per-device table behind DeviceCaps (cuda/per_device.h), on the CPU: no GPU needed.
// - Every preset's layers at the preset's batch size, with an H100's caps, get the variants they got
//   before the chooser existed. The expected table was taken from the chooser and checked against the
//   code it replaced (the thresholds then spread over conv2d*.cu, gemm.cu, dense_head.cu, network.cu,
//   optim.cu) on 11.7 million random shapes and overrides: no difference. A deliberate change of a
//   threshold changes this table: `test_kernel_choice --print` prints the new one.
// - Another GPU: only what does not change the bits follows the SM count; no tensor cores before sm_80;
//   tiles that do not fit the shared memory are not chosen.
// - The direct kernel's hard limits hold even when forced; every variable parses as documented; scoped
//   overrides stack and restore; the per-device table makes each device's value once, from any number of
//   threads, and retries after a failure.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "cuda/kernel_choice.h"
#include "cuda/kernel_overrides.h"
#include "cuda/loss_scale.h"
#include "cuda/mlp_step.h"
#include "cuda/per_device.h"
#include "spec/json.h"
#include "spec/model.h"
#include "test_util.h"

using namespace nnstudio;
using namespace nnstudio::cuda;

namespace {

// ---- caps ----

// a GPU's caps: SMs, compute capability, shared memory a block may opt into, the clusters our kernels get
DeviceCaps gpu(int sms, int major, int minor, int sharedKiB, TensorCores tensorCores, int clusters) {
  DeviceCaps c;
  c.sms = sms;
  c.computeMajor = major;
  c.computeMinor = minor;
  c.sharedOptin = size_t(sharedKiB) * 1024;
  c.tensorCores = tensorCores;
  c.clusterLaunch = clusters > 1;
  c.gemmMaxCluster = clusters;
  c.headMaxCluster = clusters;
  c.batchnormMaxCluster = clusters;
  c.headSharedBytes = c.sharedOptin - 1024;
  return c;
}

DeviceCaps h100() { return gpu(132, 9, 0, 227, TensorCores::Wgmma, 16); }
DeviceCaps smallGpu() { return gpu(46, 8, 9, 99, TensorCores::Tf32MmaSync, 1); }  // RTX 4070-like: no clusters
DeviceCaps turing() { return gpu(40, 7, 5, 64, TensorCores::Fp16MmaSync, 1); }     // sm_75: no TF32 tensor cores

// ---- the presets' layers ----

struct Preset {
  ModelSpec spec;
  int batch;
};

Preset loadPreset(const std::string& name) {
  const std::string text =
      nnstudio_test::readFile(std::string(NNSTUDIO_SOURCE_DIR) + "/../resources/presets/" + name + ".json");
  const json::Value root = json::parse(text);
  const json::Value* spec = root.find("spec");
  const json::Value* training = root.find("training");
  const json::Value* batch = training ? training->find("batchSize") : nullptr;
  if (!spec || !batch) throw std::runtime_error("preset " + name + " has no spec or batch size");
  return {parseModelSpec(json::serialize(*spec)), int(batch->number)};
}

ConvGeometry convOf(const LayerPlan& lp) {
  ConvGeometry g;
  g.C = lp.inC, g.H = lp.inH, g.W = lp.inW, g.F = lp.outC, g.OH = lp.outH, g.OW = lp.outW;
  g.kh = lp.kh, g.kw = lp.kw, g.stride = lp.stride, g.padTop = lp.padTop, g.padLeft = lp.padLeft;
  return g;
}

PoolGeometry poolOf(const LayerPlan& lp) {
  PoolGeometry p;
  p.C = lp.inC, p.H = lp.inH, p.W = lp.inW, p.OH = lp.outH, p.OW = lp.outW, p.size = lp.kh, p.stride = lp.stride;
  return p;
}


// one line per choice the chooser makes for the preset's training step
std::vector<std::string> presetChoices(const std::string& name, const DeviceCaps& caps, const KernelOverrides& o) {
  const Preset preset = loadPreset(name);
  const NetworkPlan plan = planNetwork(preset.spec);
  const int N = preset.batch;
  std::vector<std::string> lines;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& lp = plan.layers[i];
    const std::string at = name + " " + lp.label + ": ";
    if (lp.kind == LayerKind::Conv2D) {
      const ConvGeometry g = convOf(lp);
      lines.push_back(at + "forward " + chooseConvPass(caps, o, ConvPass::Forward, N, g).name());
      lines.push_back(at + "input gradient " + chooseConvPass(caps, o, ConvPass::InputGradient, N, g).name());
      lines.push_back(at + "weight gradient " + chooseConvWeightGrad(caps, o, N, g).name());
      if (i + 1 < plan.layers.size() && plan.layers[i + 1].kind == LayerKind::MaxPool2D)
        lines.push_back(at + "max pool after it " +
                        (chooseConvPoolFusion(o, g, poolOf(plan.layers[i + 1]), lp.activation, N) ? "fused" : "separate"));
    } else if (lp.kind == LayerKind::Dense) {
      const int inputs = int(lp.inSize), units = int(lp.outSize);
      lines.push_back(at + "gemm forward " + gemmPlanName(caps, o, false, true, N, units, inputs) +
                      ", weight gradient " + gemmPlanName(caps, o, true, false, units, inputs, N) + ", input gradient " +
                      gemmPlanName(caps, o, false, false, N, inputs, units));
    }
  }
  const LayerPlan& head = plan.layers.back();
  const bool fused = head.kind == LayerKind::Dense &&
                     chooseDenseHeadFusion(caps, o, N, head.inSize, head.outSize, head.activation);
  lines.push_back(name + ": head " + (fused ? "fused" : "separate") + ", optimizer " +
                  std::to_string(optimizerBlocks(caps, plan.parameterCount, 256)) + " blocks");
  return lines;
}

const char* const kPresets[] = {"seed000",   "seed001", "seed001_256", "seed002",
                                "keras_cnn", "lenet5",  "mlp",         "fast_mnist"};

// The H100's choices, as before the chooser (see the header).
const char* const kH100Choices[] = {
#include "kernel_choice_h100.inc"
};

void testPresetChoices() {
  std::vector<std::string> got;
  for (const char* name : kPresets)
    for (const std::string& line : presetChoices(name, h100(), KernelOverrides())) got.push_back(line);
  const size_t expected = sizeof kH100Choices / sizeof kH100Choices[0];
  CHECK_MSG(got.size() == expected, "one choice line per expected line (" + std::to_string(got.size()) + " vs " +
                                        std::to_string(expected) + ")");
  for (size_t i = 0; i < got.size() && i < expected; ++i)
    CHECK_MSG(got[i] == kH100Choices[i],
              got[i] + (got[i] == kH100Choices[i] ? "" : "  (was: " + std::string(kH100Choices[i]) + ")"));
}

// ---- other GPUs ----

ConvGeometry geometry(int C, int H, int W, int F, int k, int OH, int OW) {
  ConvGeometry g;
  g.C = C, g.H = H, g.W = W, g.F = F, g.kh = g.kw = k, g.OH = OH, g.OW = OW;
  return g;
}

// FP16 products: a mixed run's on Turing (the only tensor-core arithmetic there), forced on newer GPUs; the
// same tiles as BF16 (k16 steps); loss scaling exactly where the convolutions take them.
void testFp16() {
  const KernelOverrides o;
  const ConvGeometry keras2 = geometry(32, 26, 26, 64, 3, 24, 24);
  CHECK(convTcModeFor(h100(), o, Precision::Fp32) == ConvTcMode::Auto);
  CHECK(convTcModeFor(h100(), o, Precision::Tf32) == ConvTcMode::Tf32);
  CHECK(convTcModeFor(h100(), o, Precision::Mixed) == ConvTcMode::Bf16);
  CHECK(convTcModeFor(smallGpu(), o, Precision::Mixed) == ConvTcMode::Bf16);
  CHECK_MSG(convTcModeFor(turing(), o, Precision::Mixed) == ConvTcMode::Fp16, "sm_75: mixed takes FP16");
  KernelOverrides forced = o;
  forced.mixedHalf = MixedHalf::Fp16;
  CHECK_MSG(convTcModeFor(h100(), forced, Precision::Mixed) == ConvTcMode::Fp16, "NNSTUDIO_CUDA_MIXED=fp16 on an H100");
  CHECK_MSG(convTcModeFor(h100(), forced, Precision::Fp32) == ConvTcMode::Auto, "it does not touch an fp32 run");
  KernelOverrides off = forced;
  off.convTc = ConvTcMode::Off;
  CHECK_MSG(convTcModeFor(h100(), off, Precision::Mixed) == ConvTcMode::Off, "NNSTUDIO_CONV_TC wins");
  CHECK(lossScalingFor(ConvTcMode::Fp16) && !lossScalingFor(ConvTcMode::Bf16) && !lossScalingFor(ConvTcMode::Auto));

  // Turing: FP16 runs on the tensor cores, in all three passes; BF16 and TF32 stay on the SIMT kernels
  KernelOverrides fp16 = o;
  fp16.convTc = ConvTcMode::Fp16;
  for (ConvPass pass : {ConvPass::Forward, ConvPass::InputGradient}) {
    const ConvPassChoice c = chooseConvPass(turing(), fp16, pass, 128, keras2);
    CHECK_MSG(c.kernel == ConvKernel::TensorCoreFp16 && convTcSharedBytes(c.tc) <= turing().sharedOptin,
              "sm_75, keras conv2 in FP16: " + c.name());
  }
  const ConvWgradPlan w = chooseConvWeightGrad(turing(), fp16, 128, keras2);
  CHECK_MSG(w.tc && w.math == TcMath::Fp16 && w.name().rfind("tc fp16 ", 0) == 0 &&
                convTcWgradSharedBytes(w.tile) <= turing().sharedOptin,
            "sm_75, keras conv2's weight gradient in FP16: " + w.name());
  for (ConvTcMode mode : {ConvTcMode::Bf16, ConvTcMode::Tf32}) {
    KernelOverrides other = o;
    other.convTc = mode;
    CHECK(chooseConvPass(turing(), other, ConvPass::Forward, 128, keras2).kernel == ConvKernel::ImplicitGemm);
    CHECK(!chooseConvWeightGrad(turing(), other, 128, keras2).tc);
  }
  // an H100 forced to FP16 takes BF16's tiles and splits, pass by pass, on the presets' shapes
  KernelOverrides bf16 = o;
  bf16.convTc = ConvTcMode::Bf16;
  const ConvGeometry shapes[] = {keras2, {96, 7, 7, 96, 7, 7, 3, 3, 1, 1, 1}, {48, 14, 14, 48, 14, 14, 3, 3, 1, 1, 1},
                                 geometry(32, 14, 14, 32, 3, 14, 14)};
  for (const ConvGeometry& g : shapes)
    for (ConvPass pass : {ConvPass::Forward, ConvPass::InputGradient}) {
      const ConvPassChoice h = chooseConvPass(h100(), fp16, pass, 128, g), b = chooseConvPass(h100(), bf16, pass, 128, g);
      CHECK_MSG(h.kernel == ConvKernel::TensorCoreFp16 && h.tc == b.tc, "H100, FP16 as BF16: " + h.name() + " / " + b.name());
    }
  // the weight gradient's workspace of a mixed run on Turing is the FP16 plan's, not the FP32 run's (SIMT)
  KernelOverrides fp32Run = o;
  fp32Run.convTc = convTcModeFor(turing(), o, Precision::Fp32);
  CHECK(!chooseConvWeightGrad(turing(), fp32Run, 128, keras2).tc);
}

// The loss scale's rule (loss_scale.h): PyTorch's GradScaler defaults
void testLossScaleRule() {
  int log2 = kLossScaleStartLog2, good = 0;
  long long skipped = 0;
  advanceLossScale(log2, good, skipped, true);
  CHECK_MSG(log2 == 15 && good == 0 && skipped == 1, "an overflow halves the scale and counts the skipped step");
  for (int i = 0; i < kLossScaleGrowthSteps - 1; ++i) advanceLossScale(log2, good, skipped, false);
  CHECK_MSG(log2 == 15 && good == kLossScaleGrowthSteps - 1, "1999 good steps keep it");
  advanceLossScale(log2, good, skipped, false);
  CHECK_MSG(log2 == 16 && good == 0 && skipped == 1, "the 2000th doubles it");
  advanceLossScale(log2, good, skipped, false);
  advanceLossScale(log2, good, skipped, true);
  CHECK_MSG(log2 == 15 && good == 0 && skipped == 2, "an overflow restarts the count");
  log2 = kLossScaleMinLog2;
  advanceLossScale(log2, good, skipped, true);
  CHECK(log2 == kLossScaleMinLog2);
  log2 = kLossScaleMaxLog2, good = kLossScaleGrowthSteps - 1;
  advanceLossScale(log2, good, skipped, false);
  CHECK(log2 == kLossScaleMaxLog2 && good == 0);
}

void testOtherDevices() {
  const KernelOverrides o;
  const ConvGeometry keras2 = geometry(32, 26, 26, 64, 3, 24, 24);
  ConvGeometry lenet1Same = geometry(1, 28, 28, 6, 5, 28, 28);
  lenet1Same.padTop = lenet1Same.padLeft = 2;
  // no TF32 tensor cores before sm_80, even when forced
  KernelOverrides forced;
  forced.convTc = ConvTcMode::On;
  CHECK_MSG(chooseConvPass(turing(), forced, ConvPass::Forward, 128, keras2).kernel == ConvKernel::ImplicitGemm,
            "sm_75: keras conv2 stays on the SIMT implicit GEMM even with NNSTUDIO_CONV_TC=1");
  CHECK_MSG(chooseConvPass(h100(), o, ConvPass::Forward, 128, keras2).kernel == ConvKernel::TensorCore3xTf32,
            "sm_90: keras conv2 runs on the tensor cores");
  // the default tensor-core tiles fit the device's shared memory
  for (int M : {24, 32, 64}) {
    const ConvGeometry g = geometry(M == 64 ? 32 : 64, 26, 26, M, 3, 24, 24);
    const ConvPassChoice c = chooseConvPass(smallGpu(), o, ConvPass::Forward, 256, g);
    CHECK_MSG(c.kernel == ConvKernel::TensorCore3xTf32 && convTcSharedBytes(c.tc) <= smallGpu().sharedOptin,
              "99 KiB GPU, " + std::to_string(M) + " rows: " + c.name() + " fits");
  }
  // the weight gradient: SIMT before sm_80 even when forced, the tensor cores on the H100; its default tile
  // fits 99 KiB; its split does not follow the SM count (it orders the sums)
  CHECK_MSG(!chooseConvWeightGrad(turing(), forced, 128, keras2).tc,
            "sm_75: keras conv2's weight gradient stays on the SIMT kernel even with NNSTUDIO_CONV_TC=1");
  const ConvWgradPlan kerasWgrad = chooseConvWeightGrad(h100(), o, 128, keras2);
  CHECK_MSG(kerasWgrad.tc, "sm_90: keras conv2's weight gradient runs on the tensor cores");
  const ConvWgradPlan smallWgrad = chooseConvWeightGrad(smallGpu(), o, 128, keras2);
  CHECK_MSG(smallWgrad.tc && convTcWgradSharedBytes(smallWgrad.tile) <= smallGpu().sharedOptin &&
                smallWgrad.S == kerasWgrad.S && smallWgrad.chunk == kerasWgrad.chunk,
            "99 KiB GPU: the weight gradient's tile fits and its split is the H100's (" + smallWgrad.name() + ")");
  KernelOverrides eightChunks = forced;
  eightChunks.convWgradSplits = 8;
  CHECK_MSG(chooseConvWeightGrad(h100(), eightChunks, 128, keras2).S == 8, "a forced split of the tensor-core weight gradient");
  // a kernel of more than 32 taps stays on the SIMT kernel (the pixel's tap mask is 32 bits)
  CHECK_MSG(!chooseConvWeightGrad(h100(), forced, 128, geometry(32, 26, 26, 64, 7, 20, 20)).tc,
            "7x7 kernels: the weight gradient stays on the SIMT kernel");
  // what orders the sums does not follow the SM count: the direct kernel's channel splits here (the fused
  // conv + pool weight gradient's chunks take no caps at all)
  const DeviceCaps gpus[] = {h100(), smallGpu(), turing()};
  for (const DeviceCaps& caps : gpus) {
    const ConvPassChoice d = chooseConvPass(caps, o, ConvPass::Forward, 64, lenet1Same);
    const ConvPassChoice d0 = chooseConvPass(h100(), o, ConvPass::Forward, 64, lenet1Same);
    CHECK_MSG(d.kernel == ConvKernel::Direct && d.direct.splits == d0.direct.splits,
              "LeNet conv1 on " + std::to_string(caps.sms) + " SMs: direct with the H100's channel splits (" +
                  d.name() + ")");
  }
  // placement follows the SM count: rows per block of the direct kernel (a block per SM)
  const int rowsH100 = chooseConvPass(h100(), o, ConvPass::Forward, 64, lenet1Same).direct.rows;
  const int rowsSmall = chooseConvPass(smallGpu(), o, ConvPass::Forward, 64, lenet1Same).direct.rows;
  CHECK_MSG(rowsSmall >= rowsH100, "fewer SMs, no fewer rows per block (" + std::to_string(rowsSmall) + " vs " +
                                       std::to_string(rowsH100) + ")");
  // no clusters: no split-K, the dense head in one block
  CHECK_MSG(chooseGemm(smallGpu(), o, 100, 10, 10816).splits == 1 && chooseGemm(h100(), o, 100, 10, 10816).splits > 1,
            "split-K only where clusters launch (seed001's head: " + chooseGemm(h100(), o, 100, 10, 10816).name() +
                ")");
  CHECK_MSG(denseHeadBlocks(smallGpu(), 0) == 1 && denseHeadBlocks(h100(), 0) == 8 && denseHeadBlocks(h100(), 16) == 16,
            "dense head blocks: 1 without clusters, 8 by default, 16 on request where co-scheduled");
  CHECK_MSG(optimizerBlocks(smallGpu(), 100000000, 256) == 4 * 46 && optimizerBlocks(h100(), 1000, 256) == 4,
            "optimizer grid: 4 blocks per SM at most, no more than the work");
}

// ---- the direct kernel's hard limits ----

// Two warp groups per K tile where a launch has under two blocks per SM (resnet_fast's 14 x 14 layers at batch
// 128: 196 blocks), one where it has more (keras conv2: 576); forced either way; never for a forced tile.
void testSplitK() {
  const KernelOverrides o;
  ConvGeometry small;  // resnet_fast's 32 -> 32 channels at 14 x 14
  small.C = 32, small.H = small.W = 14, small.F = 32, small.kh = small.kw = 3, small.OH = small.OW = 14;
  small.padTop = small.padLeft = 1;
  const ConvGeometry keras2 = geometry(32, 26, 26, 64, 3, 24, 24);
  CHECK_MSG(chooseConvPass(h100(), o, ConvPass::Forward, 128, small).tc.splitK == 2, "resnet_fast's 14 x 14: split");
  CHECK_MSG(chooseConvPass(h100(), o, ConvPass::Forward, 128, keras2).tc.splitK == 1, "keras conv2: not split");
  KernelOverrides on = o, off = o, tile = o;
  on.convTcSplitK = 2, off.convTcSplitK = 1, tile.convTcVariant = 2;
  CHECK(chooseConvPass(h100(), on, ConvPass::Forward, 128, keras2).tc.splitK == 2);
  CHECK(chooseConvPass(h100(), off, ConvPass::Forward, 128, small).tc.splitK == 1);
  CHECK(chooseConvPass(h100(), tile, ConvPass::Forward, 128, small).tc.splitK == 1);
  KernelOverrides tileOn = on;  // a forced tile splits only when forced to, and where it has a split kernel
  tileOn.convTcVariant = 3;     // 32 x 128, BK 32: it has
  CHECK(chooseConvPass(h100(), tileOn, ConvPass::Forward, 128, small).tc.splitK == 2);
  tileOn.convTcVariant = 2;     // 32 x 64: it has not
  CHECK(chooseConvPass(h100(), tileOn, ConvPass::Forward, 128, small).tc.splitK == 1);
  // BF16: the same rule, but a K tile of 16 is one k16 step and does not split
  KernelOverrides bf16 = o;
  bf16.convTc = ConvTcMode::Bf16;
  const ConvPassChoice b = chooseConvPass(h100(), bf16, ConvPass::Forward, 128, small);
  CHECK_MSG(b.kernel == ConvKernel::TensorCoreBf16 && b.tc.splitK == 2 && b.tc.bk == 32 &&
                b.name() == "tc bf16 32x128 bk32 st3 ks2",
            "bf16, resnet_fast's 14 x 14: " + b.name());
  // BF16, more than 32 rows on a grid that 64 x 64 tiles leave under two blocks per SM (resnet_mnist's
  // 96-channel 7x7 layers): BK 32, so that the K tile splits; where 64 x 64 fills the grid, BK 16 unsplit
  ConvGeometry wide7{96, 7, 7, 96, 7, 7, 3, 3, 1, 1, 1}, wide14{48, 14, 14, 48, 14, 14, 3, 3, 1, 1, 1};
  for (ConvPass pass : {ConvPass::Forward, ConvPass::InputGradient}) {
    const ConvPassChoice deep = chooseConvPass(h100(), bf16, pass, 128, wide7);
    CHECK_MSG(deep.name() == "tc bf16 64x64 bk32 st3 ks2", "bf16, resnet_mnist's 7 x 7 x 96: " + deep.name());
    const ConvPassChoice filled = chooseConvPass(h100(), bf16, pass, 128, wide14);
    CHECK_MSG(filled.name() == "tc bf16 64x64 bk16 st3", "bf16, resnet_mnist's 14 x 14 x 48: " + filled.name());
  }
  KernelOverrides bf16Unsplit = bf16;
  bf16Unsplit.convTcSplitK = 1;
  CHECK(chooseConvPass(h100(), bf16Unsplit, ConvPass::Forward, 128, wide7).tc == (ConvTcTile{64, 2, 32, 3, 1}));
  KernelOverrides tf32 = o;  // TF32 splits a K tile of 16 (two k8 steps): the 64 x 64 BK 16 tile, split
  tf32.convTc = ConvTcMode::Tf32;
  CHECK(chooseConvPass(h100(), tf32, ConvPass::Forward, 128, wide7).tc == (ConvTcTile{64, 2, 16, 3, 1, 2}));
  bf16.convTcSplitK = 2, bf16.convTcVariant = 1;  // 32 x 128, BK 16: no BF16 split
  CHECK(chooseConvPass(h100(), bf16, ConvPass::Forward, 128, small).tc.splitK == 1);
  bf16.convTc = ConvTcMode::Tf32;  // the same forced tile splits in TF32
  CHECK(chooseConvPass(h100(), bf16, ConvPass::Forward, 128, small).tc.splitK == 2);
  // one product per multiply on a large grid: the tiles bounded to more blocks per SM; 3xTF32 keeps its own
  for (ConvTcMode mode : {ConvTcMode::Bf16, ConvTcMode::Tf32}) {
    KernelOverrides single = o;
    single.convTc = mode;
    CHECK_MSG(chooseConvPass(h100(), single, ConvPass::Forward, 128, keras2).tc == (ConvTcTile{64, 4, 16, 3, 3}) &&
                  chooseConvPass(h100(), single, ConvPass::InputGradient, 128, keras2).tc == (ConvTcTile{32, 4, 16, 3, 6}),
              std::string("keras conv2, one product per multiply: ") + chooseConvPass(h100(), single, ConvPass::Forward, 128, keras2).name());
  }
  CHECK(chooseConvPass(h100(), o, ConvPass::Forward, 128, keras2).tc == (ConvTcTile{64, 4, 32, 3, 1}));
  KernelOverrides bf16Wgrad = o;
  bf16Wgrad.convTc = ConvTcMode::Bf16;
  const ConvWgradPlan w = chooseConvWeightGrad(h100(), bf16Wgrad, 128, keras2);
  CHECK_MSG(w.tc && w.math == TcMath::Bf16 && w.name().rfind("tc bf16 ", 0) == 0, "bf16 weight gradient: " + w.name());

  for (const ConvGeometry& g : {small, keras2}) {  // a split tile's shared memory (the groups' sums) fits
    const ConvPassChoice c = chooseConvPass(smallGpu(), on, ConvPass::Forward, 128, g);
    CHECK_MSG(convTcSharedBytes(c.tc) <= smallGpu().sharedOptin, "99 KiB GPU: " + c.name() + " fits");
  }
}

void testDirectLimits() {
  KernelOverrides forced;
  forced.convDirect = Switch::On;
  forced.convDirectShape = ConvDirectShape{8, 2, 1, 0, 0};
  ConvGeometry g = geometry(2, 9, 9, 3, 3, 4, 4);
  g.stride = 2;
  for (ConvPass pass : {ConvPass::Forward, ConvPass::InputGradient})
    CHECK_MSG(chooseConvPass(h100(), forced, pass, 1, g).kernel != ConvKernel::Direct,
              std::string("direct refuses stride 2 (") + (pass == ConvPass::Forward ? "forward" : "input gradient") +
                  ")");
  g = geometry(2, 9, 9, 3, 1, 9, 9);
  CHECK_MSG(chooseConvPass(h100(), forced, ConvPass::Forward, 1, g).kernel != ConvKernel::Direct, "direct refuses 1x1");
  g = geometry(2, 9, 9, 3, 7, 3, 3);
  CHECK_MSG(chooseConvPass(h100(), forced, ConvPass::Forward, 1, g).kernel != ConvKernel::Direct, "direct refuses 7x7");
  g = geometry(2, 9, 9, 3, 3, 7, 7);
  CHECK_MSG(chooseConvPass(h100(), forced, ConvPass::Forward, 1, g).kernel == ConvKernel::Direct,
            "direct takes 3x3 when forced, below its thresholds");
  forced.convDirectShape = ConvDirectShape{8, 4, 1, 0, 0};
  CHECK_MSG(chooseConvPass(h100(), forced, ConvPass::Forward, 1, g).kernel != ConvKernel::Direct,
            "direct refuses the 8x4 thread tile");
  g = geometry(2, 9, 9, 3, 3, 7, 7);
  g.kw = 2;
  g.OW = 8;
  forced.convDirectShape = ConvDirectShape{};
  CHECK_MSG(chooseConvPass(h100(), forced, ConvPass::Forward, 1, g).kernel != ConvKernel::Direct,
            "direct refuses 3x2 (not square)");
  KernelOverrides off;
  off.convDirect = Switch::Off;
  const ConvGeometry lenet1 = [] {
    ConvGeometry l = geometry(1, 28, 28, 6, 5, 28, 28);
    l.padTop = l.padLeft = 2;
    return l;
  }();
  CHECK_MSG(chooseConvPass(h100(), off, ConvPass::Forward, 64, lenet1).kernel == ConvKernel::ImplicitGemm,
            "NNSTUDIO_CONV_DIRECT=0: LeNet conv1 on the implicit GEMM");
}

// ---- the environment ----

KernelOverrides parse(std::vector<std::pair<const char*, const char*>> env) {
  return parseKernelOverrides([&](const char* name) -> const char* {
    for (const auto& [key, value] : env)
      if (std::strcmp(key, name) == 0) return value;
    return nullptr;
  });
}

void testParsing() {
  const KernelOverrides d = parse({});
  CHECK_MSG(d.fusion == Switch::Auto && !d.programmaticLaunch && d.gemmSplitK && d.gemmWideClusters &&
                d.gemmTile == GemmTileForce::Auto && d.convTc == ConvTcMode::Auto && d.convDirect == Switch::Auto &&
                d.convDirectShape == ConvDirectShape{} && d.stepsPerGraph == 8 && d.memoryCheck,
            "nothing set: every default");
  CHECK(parse({{"NNSTUDIO_CUDA_FUSION", "0"}}).fusion == Switch::Off);
  CHECK(parse({{"NNSTUDIO_CUDA_FUSION", "1"}}).fusion == Switch::On);
  CHECK(parse({{"NNSTUDIO_CUDA_FUSION", "yes"}}).fusion == Switch::On);
  CHECK(parse({}).batchnormPool == Switch::Auto);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_POOL", "0"}}).batchnormPool == Switch::Off);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_POOL", "1"}}).batchnormPool == Switch::On);
  CHECK(parse({}).batchnormCluster == Switch::Auto);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_CLUSTER", "0"}}).batchnormCluster == Switch::Off);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_CLUSTER", "1"}}).batchnormCluster == Switch::On);
  CHECK(parse({}).batchnormQuads == Switch::Auto);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_QUADS", "0"}}).batchnormQuads == Switch::Off);
  CHECK(parse({}).batchnormPairs == Switch::Auto);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_PAIRS", "0"}}).batchnormPairs == Switch::Off);
  CHECK(parse({}).batchnormConvWgrad == Switch::Auto);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_CONV_WGRAD", "0"}}).batchnormConvWgrad == Switch::Off);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_CONV_WGRAD", "1"}}).batchnormConvWgrad == Switch::On);
  CHECK(parse({}).batchnormClusterGrid == 0);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_CLUSTER_GRID", "396"}}).batchnormClusterGrid == 396);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_CLUSTER_GRID", "-5"}}).batchnormClusterGrid == 0);
  CHECK(parse({{"NNSTUDIO_CUDA_BN_CLUSTER_VALUES", "200000"}}).batchnormClusterValues == 200000);
  CHECK(parse({}).convPoolLoops == 0 && parse({}).convPoolThinBlocks == 0);
  CHECK(parse({{"NNSTUDIO_CONVPOOL_LOOPS", "4"}}).convPoolLoops == 4);
  CHECK(parse({{"NNSTUDIO_CONVPOOL_LOOPS", "-1"}}).convPoolLoops == 0);
  CHECK(parse({{"NNSTUDIO_CONVPOOL_THIN_BLOCKS", "1056"}}).convPoolThinBlocks == 1056);
  CHECK(parse({}).convPoolWindowBytes == Switch::Auto &&
        parse({{"NNSTUDIO_CUDA_POOL_WINDOW_BYTES", "0"}}).convPoolWindowBytes == Switch::Off &&
        parse({{"NNSTUDIO_CUDA_POOL_WINDOW_BYTES", "1"}}).convPoolWindowBytes == Switch::On);
  CHECK(parse({}).weightStream == Switch::Auto &&
        parse({{"NNSTUDIO_CUDA_WEIGHT_STREAM", "0"}}).weightStream == Switch::Off);
  CHECK(parse({{"NNSTUDIO_CUDA_PDL", "1"}}).programmaticLaunch);
  CHECK(!parse({{"NNSTUDIO_CUDA_PDL", "true"}}).programmaticLaunch);
  CHECK(!parse({{"NNSTUDIO_GEMM_SPLITK", "0"}}).gemmSplitK);
  CHECK(parse({{"NNSTUDIO_GEMM_SPLITK", "1"}}).gemmSplitK);
  CHECK(!parse({{"NNSTUDIO_GEMM_MAXSPLIT", "8"}}).gemmWideClusters);
  CHECK(!parse({{"NNSTUDIO_GEMM_MAXSPLIT", "2"}}).gemmWideClusters);
  CHECK(parse({{"NNSTUDIO_GEMM_MAXSPLIT", "16"}}).gemmWideClusters);
  CHECK(parse({{"NNSTUDIO_GEMM_TILE", "16x64"}}).gemmTile == GemmTileForce::Wide16x64);
  CHECK(parse({{"NNSTUDIO_GEMM_TILE", "64x64"}}).gemmTile == GemmTileForce::Large64x64);
  CHECK(parse({{"NNSTUDIO_GEMM_TILE", "8x8"}}).gemmTile == GemmTileForce::Auto);
  CHECK(parse({{"NNSTUDIO_CONV_TC", "0"}}).convTc == ConvTcMode::Off);
  CHECK(parse({{"NNSTUDIO_CONV_TC", "tf32"}}).convTc == ConvTcMode::Tf32);
  CHECK(parse({{"NNSTUDIO_CONV_TC", "bf16"}}).convTc == ConvTcMode::Bf16);
  CHECK(parse({{"NNSTUDIO_CONV_TC", "fp16"}}).convTc == ConvTcMode::Fp16);
  CHECK(parse({{"NNSTUDIO_CUDA_MIXED", "fp16"}}).mixedHalf == MixedHalf::Fp16);
  CHECK(parse({{"NNSTUDIO_CUDA_MIXED", "bf16"}}).mixedHalf == MixedHalf::Bf16);
  CHECK(parse({{"NNSTUDIO_CUDA_MIXED", "half"}}).mixedHalf == MixedHalf::Auto);
  CHECK(parse({}).lossScaleLog2 == kLossScaleStartLog2);
  CHECK(parse({{"NNSTUDIO_CUDA_LOSS_SCALE_LOG2", "40"}}).lossScaleLog2 == 40);
  CHECK(parse({{"NNSTUDIO_CUDA_LOSS_SCALE_LOG2", "99"}}).lossScaleLog2 == kLossScaleStartLog2);
  CHECK(parse({{"NNSTUDIO_CONV_TC", "1"}}).convTc == ConvTcMode::On);
  CHECK(parse({{"NNSTUDIO_CONV_DIRECT", "0"}}).convDirect == Switch::Off);
  CHECK(parse({{"NNSTUDIO_CONV_DIRECT", "1"}}).convDirect == Switch::Auto);
  CHECK((parse({{"NNSTUDIO_CONV_DIRECT_SHAPE", "8,2,4,264"}}).convDirectShape == ConvDirectShape{8, 2, 4, 0, 264}));
  CHECK((parse({{"NNSTUDIO_CONV_DIRECT_SHAPE", "4,1"}}).convDirectShape == ConvDirectShape{4, 1, 0, 0, 0}));
  CHECK(parse({{"NNSTUDIO_CONV_TC_VARIANT", "2"}}).convTcVariant == 2);
  CHECK(parse({{"NNSTUDIO_CONV_TC_VARIANT", "7"}}).convTcVariant == 0);
  CHECK(parse({}).convTcVariant == 0);
  CHECK(parse({{"NNSTUDIO_CONV_TC_SPLITK", "2"}}).convTcSplitK == 2);
  CHECK(parse({{"NNSTUDIO_CONV_TC_SPLITK", "1"}}).convTcSplitK == 1);
  CHECK(parse({{"NNSTUDIO_CONV_TC_SPLITK", "yes"}}).convTcSplitK == 0);
  CHECK(parse({{"NNSTUDIO_CUDA_STEPS_PER_GRAPH", "1"}}).stepsPerGraph == 1);
  CHECK(parse({{"NNSTUDIO_CUDA_STEPS_PER_GRAPH", "64"}}).stepsPerGraph == 64);
  CHECK(parse({{"NNSTUDIO_CUDA_STEPS_PER_GRAPH", "65"}}).stepsPerGraph == 8);
  CHECK(parse({{"NNSTUDIO_CUDA_STEPS_PER_GRAPH", "0"}}).stepsPerGraph == 8);
  CHECK(!parse({{"NNSTUDIO_CUDA_MEMORY_CHECK", "0"}}).memoryCheck);
  CHECK(parse({{"NNSTUDIO_CUDA_MEMORY_CHECK", "1"}}).memoryCheck);
}

// The fused MLP step (mlp_step.h): the networks and runs it takes, its shared-memory layout, and the choice.
void testFusedMlpStep() {
  const Preset mlp = loadPreset("mlp");
  const NetworkPlan plan = planNetwork(mlp.spec);
  CHECK_MSG(mlpStepRefusal(plan, {}).empty(), "the mlp preset takes the fused step");
  MlpStepRun weighted;
  weighted.classWeights = true;
  CHECK(mlpStepRefusal(plan, weighted) == "class weights");
  MlpStepRun twoGpus;
  twoGpus.dataParallel = true;
  CHECK(mlpStepRefusal(plan, twoGpus) == "several GPUs");
  MlpStepRun averaged;
  averaged.weightAverage = true;
  CHECK(!mlpStepRefusal(plan, averaged).empty());
  CHECK_MSG(!mlpStepRefusal(planNetwork(loadPreset("seed001").spec), {}).empty(), "a CNN is refused");
  const char* deep = R"({"input":[8],"layers":[{"kind":"dense","units":8,"activation":"relu"},
      {"kind":"dense","units":8,"activation":"relu"},{"kind":"dense","units":3}],"loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":1})";
  CHECK(mlpStepRefusal(planNetwork(parseModelSpec(deep)), {}) == "not exactly two dense layers");
  const char* gelu = R"({"input":[8],"layers":[{"kind":"dense","units":8,"activation":"gelu"},{"kind":"dense","units":3}],
      "loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":1})";
  CHECK(mlpStepRefusal(planNetwork(parseModelSpec(gelu)), {}) == "the hidden layer's activation");
  const char* mse = R"({"input":[8],"layers":[{"kind":"dense","units":8,"activation":"relu"},{"kind":"dense","units":3}],
      "loss":"mse","optimizer":{"kind":"sgd","lr":0.1},"seed":1})";
  CHECK(!mlpStepRefusal(planNetwork(parseModelSpec(mse)), {}).empty());

  const MlpStepShape shape = mlpStepShape(plan, mlp.spec.optimizer, mlp.batch);
  CHECK(shape.inputs == 784 && shape.hidden == 128 && shape.classes == 10 && shape.maxRows == 64);
  const MlpStepLayout l = mlpStepLayout(shape, 16);
  CHECK_MSG(l.cols == 49 && l.rowsPer == 4 && l.NP == 64 && l.HP == 128 && l.IcP == 56 && l.KP == 12,
            "784 columns over 16 blocks: 49 each (56 for the products' steps of 8); 64 rows: 4 each");
  const size_t offsets[] = {l.w1t,     l.xN[0],   l.xN[1], l.part,    l.hRows,   l.dhRows,  l.zRows,
                            l.dz,      l.rowLoss, l.rowRight, l.lossPart, l.dW2,  l.w2s,     l.b2s,
                            l.rows[0], l.rows[1], l.labels[0], l.labels[1], l.w1[1], l.own2[0], l.ownB1[0]};
  bool aligned = true, ordered = true;
  for (size_t i = 0; i < std::size(offsets); ++i) {
    aligned = aligned && offsets[i] % 4 == 0;
    if (i > 0) ordered = ordered && offsets[i] > offsets[i - 1];
  }
  CHECK_MSG(aligned && ordered && l.ownB1[1] + size_t(l.perB1) <= l.floats && l.w1[2] == 0,
            "offsets ascend, 16-byte aligned, inside the block; plain SGD keeps no optimizer slots");
  CHECK_MSG(l.xs % 32 == 28 && l.w1s % 32 == 8 && l.w2Stride % 2 == 1, "strides off the bank period");
  CHECK_MSG(l.bytes() <= 227 * 1024, "the mlp preset's layout fits the H100's shared memory (" + std::to_string(l.bytes()) + " B)");
  MlpStepShape adam = shape;
  adam.stateSlots = 2;
  CHECK_MSG(mlpStepLayout(adam, 16).bytes() <= 227 * 1024 && mlpStepLayout(adam, 16).w1[3] > 0,
            "with Adam's two moments too (" + std::to_string(mlpStepLayout(adam, 16).bytes()) + " B)");
  CHECK(mlpStepLayout(shape, 0).blocks == 0);

  KernelOverrides on;
  on.fusedStep = Switch::On;
  CHECK_MSG(chooseMlpStep(h100(), KernelOverrides(), shape, 16), "the H100 takes it for the mlp preset (measured faster)");
  CHECK_MSG(!chooseMlpStep(smallGpu(), on, shape, 0) && !chooseMlpStep(h100(), on, shape, 1),
            "never without a cluster of at least 2 blocks");
  KernelOverrides off;
  off.fusedStep = Switch::Off;
  CHECK(!chooseMlpStep(h100(), off, shape, 16));
  MlpStepShape withAdam = shape;
  withAdam.stateSlots = 2;
  CHECK_MSG(!chooseMlpStep(h100(), KernelOverrides(), withAdam, 16) && chooseMlpStep(h100(), on, withAdam, 16),
            "Adam: measured no faster, so not taken unless forced");
  MlpStepShape big = shape;
  big.hidden = 512;
  big.maxRows = 256;
  CHECK_MSG(!chooseMlpStep(h100(), KernelOverrides(), big, 16) && chooseMlpStep(h100(), on, big, 16),
            "a wide layer on large batches: not measured, so not taken unless forced");
  CHECK(parse({{"NNSTUDIO_CUDA_FUSED_STEP", "0"}}).fusedStep == Switch::Off);
  CHECK(parse({{"NNSTUDIO_CUDA_FUSED_STEP", "1"}}).fusedStep == Switch::On);
  CHECK(parse({}).fusedStep == Switch::Auto);
}

// The fused MLP step's unit split (mlp_step.h, MlpUnitLayout): its layout, the shapes it refuses, and the choice
// between the two splits.
void testMlpUnitSplit() {
  const Preset mlp = loadPreset("mlp");
  const MlpStepShape shape = mlpStepShape(planNetwork(mlp.spec), mlp.spec.optimizer, mlp.batch);
  constexpr size_t kH100 = 227 * 1024;
  const MlpUnitLayout l = mlpUnitLayout(shape, 16, kH100);
  CHECK_MSG(l.blocks == 16 && l.units == 8 && l.UP == 8 && l.NP == 64 && l.rowsPer == 4 && l.KP == 12 && l.kGroups == 4,
            "128 hidden units over 16 blocks: 8 each; 64 rows in 4 m16 tiles, each tile's k8 steps over 4 warps");
  CHECK_MSG(l.chunkCols == 128 && l.chunks == 7 && l.ring == 4, "784 columns in 7 chunks of 128, 4 ring slots (plain SGD)");
  CHECK_MSG(l.xs % 32 == 8 && l.w1s % 32 == 8 && l.w1s >= l.chunks * l.chunkCols && l.hs == 8,
            "the strides the fragment loads need (8 past the bank period)");
  const size_t offsets[] = {l.w1[0], l.w1[1], l.x, l.part, l.h, l.dh, l.zPart, l.zRows, l.dzRows, l.dzAll, l.rowLoss,
                            l.rowRight, l.lossPart, l.combine, l.sums, l.rows[0], l.rows[1], l.labels, l.own2[0],
                            l.own2[1], l.ownB1[0], l.ownB1[1], l.b2[0], l.b2[1]};
  bool aligned = true, ordered = true;
  for (size_t i = 0; i < std::size(offsets); ++i) {
    aligned = aligned && offsets[i] % 4 == 0;
    if (i > 0) ordered = ordered && offsets[i] > offsets[i - 1];
  }
  CHECK_MSG(aligned && ordered && l.b2[1] + size_t(l.KP) <= l.floats && l.w1[2] == 0 && l.bytes() <= kH100,
            "offsets ascend, 16-byte aligned, inside the block (" + std::to_string(l.bytes()) + " B); no optimizer slots");
  CHECK_MSG(l.x + size_t(l.ring) * l.NP * l.xs <= l.part && l.stagingFloats(784) == 3 * 64 * 784,
            "the ring's slots end before the next region; three staged batches");
  MlpStepShape adam = shape;
  adam.stateSlots = 2;
  const MlpUnitLayout la = mlpUnitLayout(adam, 16, kH100);
  CHECK_MSG(la.blocks == 16 && la.ring >= 2 && la.ring < l.ring && la.w1[3] > 0 && la.bytes() <= kH100,
            "Adam's two moments fit with fewer ring slots (" + std::to_string(la.ring) + ")");
  MlpStepShape tiny = shape;
  tiny.inputs = 17, tiny.hidden = 6, tiny.classes = 3, tiny.maxRows = 7;
  const MlpUnitLayout lt = mlpUnitLayout(tiny, 16, kH100);
  CHECK_MSG(lt.blocks == 16 && lt.units == 1 && lt.chunkCols == 16 && lt.chunks == 2 && lt.ring == 2 && lt.NP == 16 &&
                lt.kGroups == 16,
            "17 inputs: two chunks of 16 columns; 6 units: one a block (ten blocks own none)");
  tiny.inputs = 8;
  CHECK_MSG(mlpUnitLayout(tiny, 16, kH100).chunks == 1 && mlpUnitLayout(tiny, 16, kH100).ring == 2,
            "one chunk: two slots, the next step's batch in the other");
  MlpStepShape wide = shape;
  wide.maxRows = 256;
  CHECK_MSG(mlpUnitLayout(wide, 16, kH100).blocks == 0, "784 inputs at batch 256: two ring slots do not fit");
  wide.maxRows = 300;
  wide.inputs = 20;
  CHECK_MSG(mlpUnitLayout(wide, 16, kH100).blocks == 0, "more than 256 rows: refused");
  MlpStepShape many = shape;
  many.hidden = 600;
  CHECK_MSG(mlpUnitLayout(many, 16, kH100).blocks == 0, "more than 32 units a block: refused");

  const KernelOverrides automatic;
  CHECK_MSG(!chooseUnitSplit(automatic, shape, l, 16), "the mlp preset keeps the column split (measured faster)");
  MlpStepShape table = shape;
  table.inputs = 54, table.hidden = 128, table.classes = 7, table.maxRows = 256;
  const MlpUnitLayout lTable = mlpUnitLayout(table, 16, kH100);
  CHECK_MSG(lTable.blocks == 16 && chooseUnitSplit(automatic, table, lTable, 16),
            "a table of 54 columns at batch 256: the unit split (measured faster)");
  MlpStepShape small = table;
  small.inputs = 20, small.maxRows = 64;
  CHECK_MSG(!chooseUnitSplit(automatic, small, mlpUnitLayout(small, 16, kH100), 16), "a small step keeps the column split");
  CHECK_MSG(chooseUnitSplit(automatic, small, mlpUnitLayout(small, 16, kH100), 0), "the unit split where the column split does not fit");
  KernelOverrides units, columns;
  units.mlpSplit = MlpSplit::Units;
  columns.mlpSplit = MlpSplit::Columns;
  CHECK(chooseUnitSplit(units, shape, l, 16) && !chooseUnitSplit(columns, table, lTable, 16));
  CHECK_MSG(!chooseUnitSplit(units, shape, MlpUnitLayout{}, 16), "never where its layout does not fit");
  CHECK(parse({{"NNSTUDIO_CUDA_MLP_SPLIT", "units"}}).mlpSplit == MlpSplit::Units);
  CHECK(parse({{"NNSTUDIO_CUDA_MLP_SPLIT", "columns"}}).mlpSplit == MlpSplit::Columns);
  CHECK(parse({}).mlpSplit == MlpSplit::Auto);
}

void testScopedOverrides() {
  const Switch before = kernelOverrides().fusion;
  {
    ScopedKernelOverride outer([](KernelOverrides& o) { o.fusion = Switch::Off; });
    CHECK(kernelOverrides().fusion == Switch::Off);
    {
      ScopedKernelOverride inner([](KernelOverrides& o) { o.memoryCheck = false; });
      CHECK_MSG(kernelOverrides().fusion == Switch::Off && !kernelOverrides().memoryCheck,
                "a nested override keeps the outer one's changes");
    }
    CHECK_MSG(kernelOverrides().fusion == Switch::Off && kernelOverrides().memoryCheck, "the inner one is undone");
  }
  CHECK_MSG(kernelOverrides().fusion == before, "the outer one is undone: the environment's value again");
}

// ---- the per-device table ----

void testPerDevice() {
  // two fake devices with their own SM counts, asked for by 16 threads at once, in different orders
  PerDevice<DeviceCaps> table;
  std::atomic<int> made[2] = {0, 0};
  std::atomic<int> wrong{0};
  auto make = [&](int device) {
    ++made[device];
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive meanwhile
    DeviceCaps c;
    c.device = device;
    c.sms = device == 0 ? 132 : 46;
    return c;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const int device = (t + i) % 2;
        const DeviceCaps& c = table.get(device, make);
        if (c.device != device || c.sms != (device == 0 ? 132 : 46)) ++wrong;
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK_MSG(wrong == 0, "every thread reads its device's own values (" + std::to_string(wrong.load()) + " wrong)");
  CHECK_MSG(made[0] == 1 && made[1] == 1, "each device's values are made once (" + std::to_string(made[0].load()) +
                                              ", " + std::to_string(made[1].load()) + ")");
  // a failed query stores nothing: the next call asks again
  PerDevice<int> retry;
  int calls = 0;
  bool threw = false;
  try {
    retry.get(3, [&](int) -> int {
      ++calls;
      throw std::runtime_error("driver busy");
    });
  } catch (const std::runtime_error&) {
    threw = true;
  }
  const int value = retry.get(3, [&](int) { return ++calls * 10; });
  CHECK_MSG(threw && value == 20 && calls == 2, "after a failed query the next call queries again");
  CHECK_THROWS(retry.get(kMaxDevices, [](int) { return 0; }), EngineError, "beyond the 64");
}

}  // namespace

// A network sizes one workspace for its largest batch and runs smaller ones (an epoch's last batch): the
// partial sums of every batch from 1 to N fit the workspace sized at N, for the conv weight gradient and the
// fused conv + max pool one, though their chunk counts are not monotone in the batch.
void testWorkspaceCoversSmallerBatches() {
  const ConvGeometry keras2 = geometry(32, 26, 26, 64, 3, 24, 24);
  KernelOverrides simtOnly;
  simtOnly.convTc = ConvTcMode::Off;
  CHECK_MSG(chooseConvWeightGrad(h100(), simtOnly, 123, keras2).S > chooseConvWeightGrad(h100(), simtOnly, 128, keras2).S,
            "keras conv2: a batch of 123 takes more chunks than one of 128 (" +
                std::to_string(chooseConvWeightGrad(h100(), simtOnly, 123, keras2).S) + " vs " +
                std::to_string(chooseConvWeightGrad(h100(), simtOnly, 128, keras2).S) + ")");
  // 256 filters on a 4x4 output: the tensor cores pay from batch 256 (P = 4096), with fewer chunks than the
  // SIMT kernel takes at 255
  std::vector<std::pair<std::string, ConvGeometry>> convs = {{"keras conv2", keras2},
                                                             {"256 filters 4x4", geometry(32, 6, 6, 256, 3, 4, 4)}};
  for (const char* name : kPresets) {
    const Preset preset = loadPreset(name);
    const NetworkPlan plan = planNetwork(preset.spec);
    for (const LayerPlan& lp : plan.layers)
      if (lp.kind == LayerKind::Conv2D) convs.push_back({std::string(name) + " " + lp.label, convOf(lp)});
  }
  int worst = 0;
  std::string where;
  for (const auto& [name, g] : convs)
    for (int N : {32, 64, 100, 128, 200, 256, 512}) {
      // the H100's choice by shape: the tensor cores at N, and at n where they pay, else the SIMT kernel
      const size_t sized = convWgradWorkspace(chooseConvWeightGrad(h100(), KernelOverrides(), N, g), g);
      for (int n = 1; n <= N; ++n) {
        const ConvWgradPlan plan = chooseConvWeightGrad(h100(), KernelOverrides(), n, g);
        const size_t used = plan.S > 1 ? size_t(plan.S) * size_t(g.F) * size_t(g.colRows() + 1) : 0;
        if (used > sized && worst++ == 0) where = name + " batch " + std::to_string(n) + " of " + std::to_string(N);
      }
    }
  CHECK_MSG(worst == 0, "every conv weight gradient's partial sums fit the workspace of its largest batch" +
                            (worst ? " (" + std::to_string(worst) + " do not, first " + where + ")" : std::string()));
  // the fused conv + max pool weight gradient: whole samples a chunk
  int poolWorst = 0;
  for (const int F : {8, 32, 64})
    for (const int C : {1, 16, 32}) {
      const ConvGeometry g = geometry(C, 28, 28, F, 3, 26, 26);
      PoolGeometry p;
      p.C = F, p.H = 26, p.W = 26, p.size = 2, p.stride = 2, p.OH = 13, p.OW = 13;
      for (int N : {64, 100, 128, 130, 256}) {
        const ConvPoolWeightsPlan most = planConvPoolWeights(N, g, p);
        for (int n = 1; n <= N; ++n) {
          const ConvPoolWeightsPlan c = planConvPoolWeights(n, g, p);
          if (c.ok && c.chunks > 1 && c.chunks > most.mostChunks) ++poolWorst;
        }
      }
    }
  CHECK_MSG(poolWorst == 0, "every fused conv + max pool weight gradient's chunks fit the workspace of its largest batch (" +
                                std::to_string(poolWorst) + " do not)");
  // the fused dense head: taken for the largest batch only where every smaller one fits too (its lanes per
  // row halve past 16, 32 and 64 rows a block, so a head of 90 inputs needs more at 32 rows than at 33)
  int headWorst = 0;
  std::string headWhere;
  for (const DeviceCaps& caps : {smallGpu(), h100()})
    for (const int I : {64, 90, 128, 190, 400})
      for (const int K : {10, 17, 24, 32})
        for (int N = 1; N <= 600; ++N) {
          if (!denseHeadSupported(caps, N, I, K)) continue;
          const int blocks = denseHeadBlocks(caps, 0);
          for (int n = 1; n <= N; ++n)
            if (!denseHeadFits(caps, n, I, K, blocks) && headWorst++ == 0)
              headWhere = std::to_string(I) + " -> " + std::to_string(K) + ", batch " + std::to_string(n) + " of " + std::to_string(N);
        }
  CHECK_MSG(headWorst == 0, "a fused dense head fits every batch up to the one it was chosen for" +
                                (headWorst ? " (" + std::to_string(headWorst) + " do not, first " + headWhere + ")" : std::string()));
  // the fused conv + max pool forward holds the batch in grid.z: not chosen past 65535 rows
  const ConvGeometry stem = geometry(1, 28, 28, 32, 3, 26, 26);
  PoolGeometry stemPool;
  stemPool.C = 32, stemPool.H = 26, stemPool.W = 26, stemPool.size = 2, stemPool.stride = 2, stemPool.OH = 13, stemPool.OW = 13;
  CHECK_MSG(chooseConvPoolFusion(KernelOverrides(), stem, stemPool, ActivationFn::ReLU, kConvPoolMaxBatch) &&
                !chooseConvPoolFusion(KernelOverrides(), stem, stemPool, ActivationFn::ReLU, kConvPoolMaxBatch + 1),
            "conv + max pool fused up to a batch of 65535, separate beyond");
}

// The shallow GEMM (K <= 16, no transposes, N >= 256): seed001's head input gradients; not where a tile is
// forced (the op table's tile variants keep testing the tiled kernels on the same shapes).
void testGemmShallow() {
  const KernelOverrides o;
  CHECK_MSG(chooseGemmShallow(o, false, false, 1000, 43264, 10) && chooseGemmShallow(o, false, false, 100, 10816, 10),
            "seed001's input gradients (10 units): shallow");
  CHECK_MSG(!chooseGemmShallow(o, true, false, 1000, 43264, 10) && !chooseGemmShallow(o, false, true, 1000, 43264, 10),
            "transposed operands: a tile");
  CHECK_MSG(!chooseGemmShallow(o, false, false, 1000, 43264, 17) && !chooseGemmShallow(o, false, false, 1000, 255, 10) &&
                !chooseGemmShallow(o, false, false, 1000, 4096, 0),
            "K > 16, N < 256 or K = 0: a tile");
  KernelOverrides forced;
  forced.gemmTile = GemmTileForce::Large64x64;
  CHECK_MSG(!chooseGemmShallow(forced, false, false, 1000, 43264, 10), "a forced tile is taken");
}

// The streaming GEMMs (gemm_stream.cu): a head of at most 16 units over at least 2048 inputs, forward (narrow) and
// weight gradient (fewrows), split over clusters within four blocks an SM; nowhere else under Auto.
void testGemmStream() {
  const KernelOverrides o;
  auto name = [&](const DeviceCaps& caps, const KernelOverrides& ov, bool ta, bool tb, int M, int N, int K) {
    return gemmPlanName(caps, ov, ta, tb, M, N, K);
  };
  CHECK_MSG(name(h100(), o, false, true, 1000, 10, 43264) == "narrow/16",
            "seed001_256's forward: narrow over 16 (" + name(h100(), o, false, true, 1000, 10, 43264) + ")");
  CHECK_MSG(name(h100(), o, true, false, 10, 43264, 1000) == "fewrows/4",
            "seed001_256's weight gradient: fewrows over 4, 340 blocks in one wave (" + name(h100(), o, true, false, 10, 43264, 1000) + ")");
  CHECK_MSG(name(h100(), o, false, true, 100, 10, 10816) == "narrow/16" &&
                name(h100(), o, true, false, 10, 10816, 100) == "fewrows/4",
            "seed001's head: narrow/16 and fewrows/4, 25 of its 100 rows a split (" +
                name(h100(), o, true, false, 10, 10816, 100) + ")");
  CHECK_MSG(chooseGemmStream(h100(), o, false, true, 32, 10, 128).kind == GemmStreamKind::None &&
                chooseGemmStream(h100(), o, false, true, 1000, 17, 43264).kind == GemmStreamKind::None &&
                chooseGemmStream(h100(), o, true, false, 17, 43264, 1000).kind == GemmStreamKind::None &&
                chooseGemmStream(h100(), o, false, false, 1000, 10, 43264).kind == GemmStreamKind::None &&
                chooseGemmStream(h100(), o, true, false, 10, 2047, 1000).kind == GemmStreamKind::None,
            "short inputs, more than 16 units or other transposes: the tiles");
  CHECK_MSG(chooseGemmStream(smallGpu(), o, false, true, 1000, 10, 43264).kind == GemmStreamKind::None,
            "no clusters: the tiles, as measured");
  KernelOverrides off, on, forced, portable;
  off.gemmStream = Switch::Off;
  on.gemmStream = Switch::On;
  forced.gemmTile = GemmTileForce::Small16x16;
  portable.gemmWideClusters = false;
  CHECK_MSG(chooseGemmStream(h100(), off, false, true, 1000, 10, 43264).kind == GemmStreamKind::None &&
                chooseGemmStream(h100(), forced, false, true, 1000, 10, 43264).kind == GemmStreamKind::None,
            "NNSTUDIO_GEMM_STREAM=0 or a forced tile: the tiles");
  CHECK_MSG(name(smallGpu(), on, false, true, 33, 3, 5) == "narrow/1" && name(h100(), on, true, false, 3, 7, 40) ==
                                                                              "fewrows/2",
            "On: any length, unsplit without clusters");
  CHECK_MSG(chooseGemmStream(h100(), portable, false, true, 1000, 10, 43264).splits == 8,
            "NNSTUDIO_GEMM_MAXSPLIT=8: portable clusters");
  KernelOverrides twoRows;
  twoRows.gemmNarrowRowsPerLane = 2;
  CHECK_MSG(name(h100(), twoRows, false, true, 1000, 10, 43264) == "narrow2/16",
            "2 rows a lane: 16 row tiles of 64, over 16 (" + name(h100(), twoRows, false, true, 1000, 10, 43264) + ")");
  const KernelOverrides parsed = parseKernelOverrides([](const char* n) {
    const std::string v(n);
    return v == "NNSTUDIO_GEMM_STREAM" ? "0" : v == "NNSTUDIO_GEMM_NARROW_ROWS" ? "2" : nullptr;
  });
  CHECK_MSG(parsed.gemmStream == Switch::Off && parsed.gemmNarrowRowsPerLane == 2,
            "NNSTUDIO_GEMM_STREAM=0 parses as Off, NNSTUDIO_GEMM_NARROW_ROWS=2 as 2 rows a lane");
}

// a square max pool of `size` and `stride` over C planes of H x H
PoolGeometry squarePool(int C, int H, int size, int stride) {
  PoolGeometry p;
  p.C = C, p.H = p.W = H, p.size = size, p.stride = stride, p.OH = p.OW = (H - size) / stride + 1;
  return p;
}

// the fused conv + max pool tests' convolutions: seed001's with 256 filters, fast_mnist's conv1, keras's conv2,
// seed000's conv2 and a strided 3x3
struct ConvPoolShapes {
  ConvGeometry seed001 = geometry(1, 28, 28, 256, 3, 26, 26), fast1 = geometry(1, 28, 28, 24, 5, 24, 24),
               keras2 = geometry(32, 26, 26, 64, 3, 24, 24), seed000 = geometry(4, 28, 28, 4, 2, 28, 28),
               strided = [] {
                 ConvGeometry g = geometry(1, 17, 17, 30, 3, 8, 8);
                 g.stride = 2;
                 return g;
               }();
};

// The fused conv + max pool's kernels by shape: the forward's register taps (a square 3x3 or 5x5 kernel of
// stride 1 under a pool of 2) with 8 filters a thread, and the thin weight gradient (C * kh * kw <= 32, a warp
// per filter) for the first layers; the general kernels elsewhere.
void testConvPoolPlans() {
  const ConvPoolShapes shapes;
  const auto& [seed001, fast1, keras2, seed000, strided] = shapes;
  const auto pool = squarePool;
  const ConvPoolForwardPlan f1 = planConvPoolForward(h100(), 1000, seed001, pool(256, 26, 2, 2));
  CHECK_MSG(f1.ok && f1.taps == 3 && f1.FPT == 8, "seed001 (256 filters 3x3): register taps, 8 filters a thread");
  const ConvPoolForwardPlan f5 = planConvPoolForward(h100(), 256, fast1, pool(24, 24, 2, 2));
  CHECK_MSG(f5.ok && f5.taps == 5 && f5.FPT == 8, "fast_mnist conv1 (5x5): register taps, 8 filters a thread");
  CHECK_MSG(planConvPoolForward(h100(), 5, strided, pool(30, 8, 2, 2)).taps == 0, "stride 2: the general taps");
  const ConvPoolForwardPlan f0 = planConvPoolForward(h100(), 32, seed000, pool(4, 28, 4, 4));
  CHECK_MSG(f0.ok && f0.taps == 0, "seed000 conv2 (2x2, pool 4): the general taps");
  for (const auto& [name, g, p, thin] :
       {std::tuple{"seed001 256 filters", seed001, pool(256, 26, 2, 2), true},
        std::tuple{"fast_mnist conv1", fast1, pool(24, 24, 2, 2), true},
        std::tuple{"seed000 conv2 (16 taps)", seed000, pool(4, 28, 4, 4), true},
        std::tuple{"strided 3x3", strided, pool(30, 8, 2, 2), true},
        std::tuple{"keras conv2 (288 taps)", keras2, pool(64, 24, 2, 2), false}}) {
    const ConvPoolWeightsPlan w = planConvPoolWeights(100, g, p);
    CHECK_MSG(w.ok && w.thin == thin && (!thin || (w.FT * 32 == kConvPoolWgThreads && w.QS == 32 && w.CT == g.C)),
              std::string(name) + (thin ? ": the thin weight gradient, a warp per filter" : ": the general weight gradient"));
  }
}

// (testConvPoolPlans's geometries) A forward block takes several filter blocks in turn where the grid keeps 4
// blocks an SM and every channel is staged at once; the thin weight gradient prefetches the next sample where
// the input is unpadded and a float4 a thread; its chunks follow the block target.
void testConvPoolLoopsAndPrefetch() {
  const ConvPoolShapes shapes;
  const auto& [seed001, fast1, keras2, seed000, strided] = shapes;
  const auto pool = squarePool;
  const PoolGeometry p256 = pool(256, 26, 2, 2);
  const ConvPoolForwardPlan wide = planConvPoolForward(h100(), 1000, seed001, p256);
  CHECK_MSG(wide.ok && wide.FL == 16 && wide.grid[1] * wide.grid[2] == 1000 && wide.CC == 1,
            "seed001_256: all 16 filter blocks of 16 a block, 1000 blocks (at least 4 an SM)");
  CHECK_MSG(wide.smem == sizeof(float) * (28 * 28 + 9 * 16 * 16 + 16 * 16),
            "its stage: the sample, 16 blocks' weights and their biases");
  CHECK_MSG(planConvPoolForward(h100(), 100, seed001, p256).FL == 2, "batch 100: 2 (800 blocks; 4 would leave 400)");
  CHECK_MSG(planConvPoolForward(h100(), 100, geometry(1, 28, 28, 64, 3, 26, 26), pool(64, 26, 2, 2)).FL == 1,
            "seed001 (64 filters, batch 100): one filter block a block");
  CHECK_MSG(planConvPoolForward(h100(), 256, fast1, pool(24, 24, 2, 2)).FL == 1, "fast_mnist conv1: one");
  const ConvPoolForwardPlan forced = planConvPoolForward(h100(), 16, seed001, p256, 3);
  CHECK_MSG(forced.FL == 3 && forced.GY == 1 && forced.grid[1] == 11, "forced 3 (batch 16): 32 filter blocks of 8 in 11");
  CHECK_MSG(planConvPoolForward(h100(), 16, seed001, p256, 1000).FL == 32, "forced past the filters: all of them");
  CHECK_MSG(planConvPoolForward(h100(), 16, geometry(1, 28, 28, 4096, 3, 26, 26), pool(4096, 26, 2, 2), 256).FL < 256,
            "forced loops are cut until the weights fit the stage");
  const ConvPoolForwardPlan k = planConvPoolForward(h100(), 64, keras2, pool(64, 24, 2, 2), 4);
  CHECK_MSG(k.ok && k.CC < keras2.C && k.FL == 1, "keras conv2 (its channels in stages): one filter block, even forced");
  const ConvPoolWeightsPlan thin = planConvPoolWeights(1000, seed001, p256);
  CHECK_MSG(thin.thin && thin.prefetch && thin.smem == 2 * sizeof(float) * 28 * 28,
            "seed001's weight gradient: prefetched, two input buffers");
  CHECK_MSG(thin.grid[1] == 32 && thin.chunks == 17 && thin.per == 59, "its chunks: 17 of 59 samples for 528 blocks");
  const ConvPoolWeightsPlan wider = planConvPoolWeights(1000, seed001, p256, 1056);
  CHECK_MSG(wider.chunks == 33 && wider.per == 31, "a target of 1056 blocks: 33 chunks of 31");
  CHECK_MSG(planConvPoolWeights(256, fast1, pool(24, 24, 2, 2)).prefetch, "fast_mnist conv1: prefetched");
  CHECK_MSG(!planConvPoolWeights(32, seed000, pool(4, 28, 4, 4)).prefetch, "padded (seed000 conv2): staged per sample");
  CHECK_MSG(!planConvPoolWeights(5, strided, pool(30, 8, 2, 2)).prefetch, "17 x 17 (not whole float4s): staged");
  CHECK_MSG(!planConvPoolWeights(8, geometry(1, 40, 40, 8, 3, 38, 38), pool(8, 38, 2, 2)).prefetch,
            "1600 inputs, more than a float4 a thread: staged");

  // the first conv + pool's windows' argmax as bytes: wherever the thin kernel runs and a window fits 2 + 2 bits
  const KernelOverrides none;
  KernelOverrides off;
  off.convPoolWindowBytes = Switch::Off;
  CHECK_MSG(chooseConvPoolWindowBytes(none, seed001, p256) && chooseConvPoolWindowBytes(none, fast1, pool(24, 24, 2, 2)),
            "seed001's and fast_mnist's first conv + pool: window bytes");
  CHECK_MSG(chooseConvPoolWindowBytes(none, seed001, pool(256, 26, 4, 4)), "a 4 x 4 pool: still a byte");
  CHECK_MSG(!chooseConvPoolWindowBytes(none, seed001, pool(256, 26, 5, 5)), "a 5 x 5 pool: its windows need 3 + 3 bits");
  CHECK_MSG(!chooseConvPoolWindowBytes(off, seed001, p256), "NNSTUDIO_CUDA_POOL_WINDOW_BYTES=0: the int32 argmax");
  CHECK_MSG(!chooseConvPoolWindowBytes(none, keras2, pool(64, 24, 2, 2)), "not where the thin kernel does not run");
}

// The batchnorm's cluster per channel: the ResNet presets' layers at batch 128 on an H100 (a grid of at
// most 2 blocks per SM, 264; channels of more than 64K values on the two-pass kernels only where they would
// be loaded a value at a time), wider grids and larger channels asked for, a portable-only GPU (8), none; a
// dense layer's features stay on the two-pass kernels.
void testBatchnormCluster() {
  const KernelOverrides o;
  const auto K = [&](const DeviceCaps& caps, int maxN, int C, int S) { return chooseBatchnormCluster(caps, o, maxN, C, S); };
  CHECK(K(h100(), 128, 32, 28 * 28) == 8);   // resnet_fast's stem: 256 blocks, 4 values a load
  CHECK(K(h100(), 128, 48, 28 * 28) == 4);   // resnet_mnist's
  CHECK_MSG(K(h100(), 128, 32, 27 * 27) == 1, "more than 64K values a channel, loaded one at a time");
  KernelOverrides scalar;
  scalar.batchnormQuads = Switch::Off;
  CHECK(chooseBatchnormCluster(h100(), scalar, 128, 32, 28 * 28) == 1);
  CHECK(chooseBatchnormCluster(h100(), scalar, 128, 32, 14 * 14) == 8);
  CHECK(K(h100(), 128, 32, 14 * 14) == 8);   // its first block
  CHECK(K(h100(), 128, 64, 7 * 7) == 4);     // its second: 1568 values a block
  CHECK(K(h100(), 128, 48, 14 * 14) == 4);   // resnet_mnist's first block: 192 blocks (8 would be 384)
  CHECK(K(h100(), 128, 96, 7 * 7) == 2);
  CHECK(K(h100(), 128, 128, 8 * 8) == 2);    // resnet_rgb's last stage
  CHECK(K(h100(), 256, 64, 1) == 1);         // a dense layer's 256 values a feature
  CHECK(K(h100(), 32, 512, 4 * 4) == 1);     // 512 channels fill the grid alone
  CHECK(K(smallGpu(), 128, 32, 14 * 14) == 1);  // no clusters
  CHECK(K(turing(), 128, 32, 14 * 14) == 1);
  KernelOverrides wide, off, on;
  wide.batchnormClusterGrid = 528;
  wide.batchnormClusterValues = int64_t(1) << 20;
  CHECK(chooseBatchnormCluster(h100(), wide, 128, 32, 28 * 28) == 16);
  CHECK_MSG(chooseBatchnormCluster(h100(), wide, 128, 64, 7 * 7) == 4, "at least 1024 values a block");
  DeviceCaps portable = h100();
  portable.batchnormMaxCluster = 8;
  CHECK(chooseBatchnormCluster(portable, wide, 128, 32, 28 * 28) == 8);
  off.batchnormCluster = Switch::Off;
  on.batchnormCluster = Switch::On;
  CHECK(chooseBatchnormCluster(h100(), off, 128, 32, 14 * 14) == 1);
  CHECK_MSG(chooseBatchnormCluster(h100(), on, 1, 6, 1) == 16, "forced: the largest cluster, even for 1 value");
  CHECK(chooseBatchnormCluster(smallGpu(), on, 128, 32, 28 * 28) == 1);
  CHECK_MSG(chooseBatchnormCluster(h100(), on, 128, 70000, 1) == 1, "more channels than a grid's y holds");
}

// Which batchnorm backward takes the stem conv's weight gradient before it (BatchNormConvWgrad)
void testBatchnormConvWgrad() {
  const auto stem = [](int filters, int size, int kernel, int pad, int channels = 1) {
    const int out = size + 2 * pad - kernel + 1;
    return ConvGeometry{channels, size, size, filters, out, out, kernel, kernel, 1, pad, pad};
  };
  const KernelOverrides o;
  CHECK_MSG(chooseBatchnormConvWgrad(h100(), o, 128, stem(48, 28, 3, 1)), "resnet_mnist's stem: 4 blocks of 25 088 values");
  CHECK_MSG(!chooseBatchnormConvWgrad(h100(), o, 128, stem(32, 28, 3, 1)), "resnet_fast's: 8 blocks of 12 544");
  CHECK_MSG(chooseBatchnormConvWgrad(h100(), o, 128, stem(64, 30, 3, 0)), "'valid' 30 -> 28, 64 filters: 2 blocks");
  CHECK_MSG(!chooseBatchnormConvWgrad(h100(), o, 128, stem(8, 30, 3, 0)), "8 filters: 16 blocks of 6 272 values");
  CHECK(!chooseBatchnormConvWgrad(h100(), o, 128, stem(48, 28, 5, 2)));     // 5x5
  CHECK(!chooseBatchnormConvWgrad(h100(), o, 128, stem(48, 28, 3, 0)));     // 26 wide: quads cross rows
  CHECK(!chooseBatchnormConvWgrad(h100(), o, 128, stem(48, 28, 3, 1, 3)));  // three channels
  CHECK(!chooseBatchnormConvWgrad(smallGpu(), o, 128, stem(48, 28, 3, 1))); // no clusters
  KernelOverrides on, off, twoPass, scalar;
  on.batchnormConvWgrad = Switch::On;
  off.batchnormConvWgrad = Switch::Off;
  twoPass.batchnormCluster = Switch::Off;
  scalar.batchnormQuads = Switch::Off;
  CHECK(chooseBatchnormConvWgrad(h100(), on, 128, stem(32, 28, 3, 1)));
  CHECK(!chooseBatchnormConvWgrad(smallGpu(), on, 128, stem(32, 28, 3, 1)));
  CHECK(!chooseBatchnormConvWgrad(h100(), off, 128, stem(48, 28, 3, 1)));
  CHECK(!chooseBatchnormConvWgrad(h100(), twoPass, 128, stem(48, 28, 3, 1)));
  CHECK(!chooseBatchnormConvWgrad(h100(), scalar, 128, stem(48, 28, 3, 1)));
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--print") == 0) {  // the table of kH100Choices, after a deliberate change
    for (const char* name : kPresets)
      for (const std::string& line : presetChoices(name, h100(), KernelOverrides()))
        std::printf("  \"%s\",\n", line.c_str());
    return 0;
  }
  try {
    testPresetChoices();
    testOtherDevices();
    testFp16();
    testLossScaleRule();
    testSplitK();
    testDirectLimits();
    testParsing();
    testScopedOverrides();
    testFusedMlpStep();
    testMlpUnitSplit();
    testBatchnormCluster();
    testBatchnormConvWgrad();
    testPerDevice();
    testWorkspaceCoversSmallerBatches();
    testConvPoolPlans();
    testConvPoolLoopsAndPrefetch();
    testGemmShallow();
    testGemmStream();
  } catch (const std::exception& e) {
    CHECK_MSG(false, std::string("no exception: ") + e.what());
  }
  return nnstudio_test::summary();
}
