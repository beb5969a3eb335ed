// Parsing of the CUDA backend's environment switches (kernel_overrides.h). Each variable keeps the
// meaning it had when it was read where it was used: same names, same values.
#include "cuda/kernel_overrides.h"

#include "cuda/kernel_choice.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace nnstudio::cuda {

namespace {

bool is(const char* value, const char* text) { return value && std::strcmp(value, text) == 0; }

GemmTileForce gemmTileNamed(const char* value) {
  const char* names[] = {"64x64", "32x32", "16x64", "16x16"};  // GemmTileForce order
  for (int i = 0; i < 4; ++i)
    if (is(value, names[i])) return GemmTileForce(i);
  return GemmTileForce::Auto;
}

}  // namespace

KernelOverrides parseKernelOverrides(const std::function<const char*(const char*)>& lookup) {
  KernelOverrides o;
  // unset: where it pays; "0": never; anything else: wherever supported
  if (const char* v = lookup("NNSTUDIO_CUDA_FUSION")) o.fusion = is(v, "0") ? Switch::Off : Switch::On;
  if (const char* v = lookup("NNSTUDIO_CUDA_BN_POOL")) o.batchnormPool = is(v, "0") ? Switch::Off : Switch::On;
  if (const char* v = lookup("NNSTUDIO_CUDA_BN_CLUSTER")) o.batchnormCluster = is(v, "0") ? Switch::Off : Switch::On;
  if (const char* v = lookup("NNSTUDIO_CUDA_FUSED_STEP")) o.fusedStep = is(v, "0") ? Switch::Off : Switch::On;
  if (const char* v = lookup("NNSTUDIO_CUDA_MLP_SPLIT"))
    o.mlpSplit = is(v, "columns") ? MlpSplit::Columns : is(v, "units") ? MlpSplit::Units : MlpSplit::Auto;
  if (is(lookup("NNSTUDIO_CUDA_WEIGHT_STREAM"), "0")) o.weightStream = Switch::Off;
  o.programmaticLaunch = is(lookup("NNSTUDIO_CUDA_PDL"), "1");
  o.gemmSplitK = !is(lookup("NNSTUDIO_GEMM_SPLITK"), "0");
  if (const char* v = lookup("NNSTUDIO_GEMM_MAXSPLIT")) o.gemmWideClusters = std::atoi(v) > 8;
  o.gemmTile = gemmTileNamed(lookup("NNSTUDIO_GEMM_TILE"));
  if (const char* v = lookup("NNSTUDIO_GEMM_STREAM")) o.gemmStream = is(v, "0") ? Switch::Off : Switch::On;
  if (const char* v = lookup("NNSTUDIO_GEMM_NARROW_ROWS")) o.gemmNarrowRowsPerLane = is(v, "2") ? 2 : is(v, "1") ? 1 : 0;
  if (const char* v = lookup("NNSTUDIO_CONV_TC"))
    o.convTc = is(v, "0")      ? ConvTcMode::Off
               : is(v, "tf32") ? ConvTcMode::Tf32
               : is(v, "bf16") ? ConvTcMode::Bf16
               : is(v, "fp16") ? ConvTcMode::Fp16
                               : ConvTcMode::On;
  if (const char* v = lookup("NNSTUDIO_CUDA_MIXED"))
    o.mixedHalf = is(v, "bf16") ? MixedHalf::Bf16 : is(v, "fp16") ? MixedHalf::Fp16 : MixedHalf::Auto;
  if (const char* v = lookup("NNSTUDIO_CUDA_LOSS_SCALE_LOG2")) {
    const int n = std::atoi(v);
    if (n >= 0 && n <= kLossScaleMaxLog2) o.lossScaleLog2 = n;
  }
  if (const char* v = lookup("NNSTUDIO_CONV_TC_VARIANT")) {  // tuning: one tile for every tensor-core pass
    const int n = std::atoi(v);
    if (n >= 1 && n <= kConvTcVariants) o.convTcVariant = n;
  }
  if (const char* v = lookup("NNSTUDIO_CONV_TC_SPLITK")) o.convTcSplitK = is(v, "1") ? 1 : is(v, "2") ? 2 : 0;
  if (is(lookup("NNSTUDIO_CONV_DIRECT"), "0")) o.convDirect = Switch::Off;
  if (const char* v = lookup("NNSTUDIO_CONV_DIRECT_SHAPE")) {
    ConvDirectShape& s = o.convDirectShape;
    std::sscanf(v, "%d,%d,%d,%d", &s.ft, &s.px, &s.splits, &s.blocks);
  }
  if (const char* v = lookup("NNSTUDIO_CUDA_BN_QUADS")) o.batchnormQuads = is(v, "0") ? Switch::Off : Switch::On;
  if (const char* v = lookup("NNSTUDIO_CUDA_BN_PAIRS")) o.batchnormPairs = is(v, "0") ? Switch::Off : Switch::On;
  if (const char* v = lookup("NNSTUDIO_CUDA_BN_CONV_WGRAD"))
    o.batchnormConvWgrad = is(v, "0") ? Switch::Off : is(v, "1") ? Switch::On : Switch::Auto;
  if (const char* v = lookup("NNSTUDIO_CUDA_BN_CLUSTER_GRID")) o.batchnormClusterGrid = std::max(0, std::atoi(v));
  if (const char* v = lookup("NNSTUDIO_CUDA_BN_CLUSTER_VALUES")) o.batchnormClusterValues = std::max(0LL, std::atoll(v));
  if (const char* v = lookup("NNSTUDIO_CONVPOOL_LOOPS")) o.convPoolLoops = std::clamp(std::atoi(v), 0, 256);
  if (const char* v = lookup("NNSTUDIO_CUDA_POOL_WINDOW_BYTES"))
    o.convPoolWindowBytes = is(v, "0") ? Switch::Off : is(v, "1") ? Switch::On : Switch::Auto;
  if (const char* v = lookup("NNSTUDIO_CONVPOOL_THIN_BLOCKS")) o.convPoolThinBlocks = std::clamp(std::atoi(v), 0, 1 << 20);
  if (const char* v = lookup("NNSTUDIO_CUDA_STEPS_PER_GRAPH")) {
    const int n = std::atoi(v);
    if (n >= 1 && n <= 64) o.stepsPerGraph = n;
  }
  o.memoryCheck = !is(lookup("NNSTUDIO_CUDA_MEMORY_CHECK"), "0");
  return o;
}

// ---- the overrides in force ----

namespace {

const KernelOverrides& fromEnvironment() {
  static const KernelOverrides parsed = parseKernelOverrides([](const char* name) { return std::getenv(name); });
  return parsed;
}

std::atomic<const KernelOverrides*> gScoped{nullptr};  // the innermost ScopedKernelOverride's, or null

}  // namespace

const KernelOverrides& kernelOverrides() {
  const KernelOverrides* scoped = gScoped.load(std::memory_order_acquire);
  return scoped ? *scoped : fromEnvironment();
}

ScopedKernelOverride::ScopedKernelOverride(const std::function<void(KernelOverrides&)>& edit)
    : mine_(kernelOverrides()), previous_(gScoped.load(std::memory_order_acquire)) {
  edit(mine_);
  gScoped.store(&mine_, std::memory_order_release);
}

ScopedKernelOverride::~ScopedKernelOverride() { gScoped.store(previous_, std::memory_order_release); }

}  // namespace nnstudio::cuda
