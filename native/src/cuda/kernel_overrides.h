// The CUDA backend's environment switches, parsed in one place, once per process (the first time any
// thread asks), into one struct that the kernel chooser (kernel_choice.h) and the trainer read. The table
// of variables is in docs/ARCHITECTURE.md, "Kernel choice and overrides". Tests force a variant with a
// ScopedKernelOverride instead of setenv. Plain C++: the parser is tested on the CPU.
#pragma once

#include <functional>

#include "cuda/loss_scale.h"  // the loss scale's start and bounds

namespace nnstudio::cuda {

// A path that is taken where it measured faster (Auto), never (Off) or wherever the device and shape allow
// it (On: tests and comparisons).
enum class Switch { Auto, Off, On };

// The tensor-core convolution: Auto where it pays, Off, On (wherever the device can), or Tf32 / Bf16 / Fp16
// (where it pays, but 1xTF32, BF16 or FP16 products: faster, and outside the CPU-parity tolerance on keras
// conv2). A run's Precision::Tf32 / Mixed selects Tf32 / its half type where this is Auto (kernel_choice.h
// convTcModeFor); set here, it wins over the run's.
enum class ConvTcMode { Auto, Off, On, Tf32, Bf16, Fp16 };
// A mixed run's 16-bit products: BF16 where the GPU has them (Ampere and newer), else FP16 with loss scaling
// (Turing); forced either way for tests and comparisons.
enum class MixedHalf { Auto, Bf16, Fp16 };

// A forced launch shape of the direct convolution; 0 = the planner's choice.
struct ConvDirectShape {
  int ft = 0;      // output channels per thread (4 or 8)
  int px = 0;      // consecutive output pixels of a row per thread (1, 2 or 4; 1 or 2 when ft = 8)
  int splits = 0;  // threads per output, each summing every splits-th source channel (fixed-order reduction)
  int rows = 0;    // output rows per block
  int blocks = 0;  // the planner's block target when rows = 0
  bool operator==(const ConvDirectShape& o) const {
    return ft == o.ft && px == o.px && splits == o.splits && rows == o.rows && blocks == o.blocks;
  }
};

// Which fused MLP step (mlp_step.h): the column split or the unit split; Auto by shape.
enum class MlpSplit { Auto, Columns, Units };

// The GEMM's four tiles (gemm.cu); Auto = the choice by shape.
enum class GemmTileForce { Auto = -1, Large64x64 = 0, Medium32x32 = 1, Wide16x64 = 2, Small16x16 = 3 };

struct KernelOverrides {
  Switch fusion = Switch::Auto;             // NNSTUDIO_CUDA_FUSION: conv + max pool, batchnorm + max pool, the dense head
  Switch batchnormPool = Switch::Auto;      // NNSTUDIO_CUDA_BN_POOL=0: batchnorm + max pool apart (comparisons)
  Switch batchnormCluster = Switch::Auto;   // NNSTUDIO_CUDA_BN_CLUSTER: 0 the two-pass kernels, 1 a cluster wherever the GPU has them
  Switch batchnormQuads = Switch::Auto;     // NNSTUDIO_CUDA_BN_QUADS=0: the cluster kernels load a value at a time
  Switch batchnormPairs = Switch::Auto;     // NNSTUDIO_CUDA_BN_PAIRS=0: the fused 2x2 pool a window at a time
  Switch batchnormConvWgrad = Switch::Auto; // NNSTUDIO_CUDA_BN_CONV_WGRAD: 0 a stem conv's weight gradient apart, 1 wherever it fits
  int batchnormClusterGrid = 0;             // NNSTUDIO_CUDA_BN_CLUSTER_GRID: the most blocks a cluster launch aims for (0: the chooser's)
  long long batchnormClusterValues = 0;     // NNSTUDIO_CUDA_BN_CLUSTER_VALUES: the most values a channel for a cluster (0: the chooser's)
  Switch fusedStep = Switch::Auto;          // NNSTUDIO_CUDA_FUSED_STEP: a small MLP's whole step (mlp_step.h)
  MlpSplit mlpSplit = MlpSplit::Auto;       // NNSTUDIO_CUDA_MLP_SPLIT=columns|units: that fused step's split
  Switch weightStream = Switch::Auto;       // NNSTUDIO_CUDA_WEIGHT_STREAM=0: weight gradients on the step's stream (network.h)
  bool programmaticLaunch = false;          // NNSTUDIO_CUDA_PDL=1
  bool gemmSplitK = true;                   // NNSTUDIO_GEMM_SPLITK=0 turns split-K off
  bool gemmWideClusters = true;             // NNSTUDIO_GEMM_MAXSPLIT <= 8: split-K over at most 8 blocks
  GemmTileForce gemmTile = GemmTileForce::Auto;  // NNSTUDIO_GEMM_TILE=64x64|32x32|16x64|16x16
  Switch gemmStream = Switch::Auto;         // NNSTUDIO_GEMM_STREAM: 0 a few-unit layer's passes on the tiles, 1 streamed at any length
  int gemmNarrowRowsPerLane = 0;            // NNSTUDIO_GEMM_NARROW_ROWS=1|2: rows of A a lane of the narrow kernel owns (0: the chooser's)
  ConvTcMode convTc = ConvTcMode::Auto;     // NNSTUDIO_CONV_TC
  MixedHalf mixedHalf = MixedHalf::Auto;    // NNSTUDIO_CUDA_MIXED=bf16|fp16
  int lossScaleLog2 = kLossScaleStartLog2;  // NNSTUDIO_CUDA_LOSS_SCALE_LOG2: an FP16 run's first loss scale, 2^n (0..60)
  int convTcVariant = 0;                    // tests: a tensor-core tile variant 1..6 instead of the choice by shape
  int convTcSplitK = 0;                     // NNSTUDIO_CONV_TC_SPLITK: 1 never, 2 always split each K tile over two warp groups (0: by shape)
  int convWgradSplits = 0;                  // tests: the conv weight gradient in this many chunks (0: the choice)
  Switch convDirect = Switch::Auto;         // NNSTUDIO_CONV_DIRECT=0 turns it off (On: tests, thresholds skipped)
  ConvDirectShape convDirectShape;          // NNSTUDIO_CONV_DIRECT_SHAPE=ft,px,splits,blocks
  int convPoolLoops = 0;                    // NNSTUDIO_CONVPOOL_LOOPS: filter blocks a fused conv + pool forward block takes in turn (0: the plan's)
  Switch convPoolWindowBytes = Switch::Auto;  // NNSTUDIO_CUDA_POOL_WINDOW_BYTES=0: a first conv + pool's argmax as int32s, not bytes
  int convPoolThinBlocks = 0;               // NNSTUDIO_CONVPOOL_THIN_BLOCKS: the thin weight gradient's block target (0: kConvPoolThinBlocks)
  int stepsPerGraph = 8;                    // NNSTUDIO_CUDA_STEPS_PER_GRAPH, 1..64
  bool memoryCheck = true;                  // NNSTUDIO_CUDA_MEMORY_CHECK=0 skips the estimate before a run
};

// The overrides that `lookup` (a getenv) gives; unset or unknown values leave the defaults above.
KernelOverrides parseKernelOverrides(const std::function<const char*(const char*)>& lookup);

// The overrides in force: the process environment's (read once), or the innermost ScopedKernelOverride's.
const KernelOverrides& kernelOverrides();

// Tests: changes the overrides in force until it goes out of scope (nested ones stack). Install and remove
// them while no other thread launches kernels.
class ScopedKernelOverride {
 public:
  explicit ScopedKernelOverride(const std::function<void(KernelOverrides&)>& edit);
  ~ScopedKernelOverride();
  ScopedKernelOverride(const ScopedKernelOverride&) = delete;
  ScopedKernelOverride& operator=(const ScopedKernelOverride&) = delete;

 private:
  KernelOverrides mine_;
  const KernelOverrides* previous_;
};

}  // namespace nnstudio::cuda
