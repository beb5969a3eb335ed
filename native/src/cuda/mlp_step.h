// The fused training step of a small MLP (mlp_step.cu): the whole step of [flatten] -> dense (hidden units,
// an elementwise activation) -> dense (classes) -> softmax cross-entropy, with its optimizer update, in one
// launch of one thread-block cluster, for one or several steps. Launch-bound networks such as the `mlp`
// preset spend most of a step in the gaps between its five launches; here the blocks meet at two cluster
// barriers a step instead. Block r of C owns the r-th slice of the input columns (its W1 slice stays in
// shared memory across the launch's steps) and the r-th share of the batch rows:
//   forward   partial pre-activations P_r = x[:, cols_r] . W1[:, cols_r]^T      (local)      -> barrier
//   rows_r    h = act(b1 + sum_r P_r), logits, the loss, dz, dh = (dz . W2) * act'(h),
//             and the rows' partial dW2, db2                                       (DSMEM reads) -> barrier
//   update    dW2, db2 (each block its share of the entries), db1 (its units), dW1[:, cols_r] = dh^T . x
//             (every block gathers dh), each parameter updated as the optimizer kernels do (optim_math.cuh)
// The next step's rows, labels and x columns come by cp.async while a step runs (double-buffered; the copies
// are issued by the warps the rows' loss leaves idle, where they slow no exchange). The logits
// take a warp per (row, class), its lanes over the hidden units. docs/BENCHMARKS.md ("The fused MLP step,
// session 35") has each phase's clock count and the designs measured and dropped.
// Every sum has a fixed order: the results are deterministic. A second split, over the hidden units
// (MlpUnitLayout below, mlp_unit_step.cu), is chosen by shape. Plain C++ (the layouts, the refusal reasons and
// the choices), tested on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda/device_caps.h"
#include "cuda/kernel_overrides.h"
#include "spec/model.h"

namespace nnstudio::cuda {

constexpr int kMlpStepThreads = 512;   // per block
constexpr int kMlpStepMaxBlocks = 16;  // a cluster (more than 8: non-portable, where the GPU schedules it)

struct MlpStepShape {
  int64_t inputs = 0;  // I
  int hidden = 0;      // H
  int classes = 0;     // K
  int maxRows = 0;     // the batch
  int stateSlots = 0;  // optimizer state per parameter: 0 (plain SGD), 1 (momentum), 2 (Adam)
};

// Shared memory of one block, in floats (every offset a multiple of 4: float4 and double accesses). A launch
// keeps the parameters each block owns on chip, with the values before the last applied update (the
// divergence backup) and the optimizer state, and writes them to global memory once, at its end: its W1
// columns, its share `per2` of W2's and b2's entries (K * H + K, in that order) and its share `perB1` of b1.
struct MlpStepLayout {
  int blocks = 0;   // the cluster's blocks (0: the fused step cannot run)
  int cols = 0;     // input columns per block (the last block may have fewer)
  int rowsPer = 0;  // batch rows per block
  // rows and hidden units rounded up to the 32 x 32 warp tiles of the tensor-core products, columns (and the
  // ones column) to their reduction step of 8, classes to 4
  int NP = 0, HP = 0, IcP = 0, KP = 0;
  int xs = 0;        // x's row stride: IcP + 4 (the fragment loads of 8 rows fall in different banks)
  int w1s = 0;       // the W1 slots' row stride (a row per column): HP + 8 (likewise)
  int w2Stride = 0;  // W2's row stride: HP + 1 (off the bank period)
  int ps = 0;        // the partials' (then dh's) row stride: HP + 8 (the weight gradient's fragment loads)
  size_t w1t = 0;      // (IcP, w1s)  the block's W1 columns, transposed (w1[0])
  size_t xN[2] = {};   // (NP, xs)    the batch's columns and a column of ones, zero past N; two steps'
  size_t part = 0;     // (NP, ps)    partial pre-activations; then every row's dh
  size_t hRows = 0;    // (rowsPer, HP)  the block's rows: h
  size_t dhRows = 0;   // (rowsPer, HP)  and dh
  size_t zRows = 0;    // (rowsPer, KP)  the logits
  size_t dz = 0;       // (rowsPer, KP)  the logits' gradient
  size_t rowLoss = 0;  // (rowsPer) doubles: each row's loss
  size_t rowRight = 0; // (rowsPer) 1 where the prediction is right
  size_t lossPart = 0; // 2 doubles: the block's loss sum and right count
  size_t dW2 = 0;      // (K * H + K)  the block's partial dW2 (K, H), then db2
  size_t w2s = 0;      // (K, w2Stride)
  size_t b2s = 0;      // (KP)
  size_t rows[2] = {};   // (NP) the step's rows' dataset indices (uint32); two steps'
  size_t labels[2] = {}; // (NP) their labels (int32); two steps'
  int per2 = 0, perB1 = 0;
  // owned parameters: [0] the values, [1] before the last applied update, [2], [3] the optimizer state
  size_t w1[4] = {};   // (IcP, w1s) each; w1[0] is w1t
  size_t own2[4] = {}; // (per2) each
  size_t ownB1[4] = {};// (perB1) each
  size_t floats = 0;
  size_t bytes() const { return floats * sizeof(float); }
};

MlpStepLayout mlpStepLayout(const MlpStepShape& shape, int blocks);

// The second split (mlp_unit_step.cu): block r of C owns the hidden units [r U, r U + U), i.e. W1's rows and W2's
// columns for them, and every block streams the whole batch through shared memory, so the forward, dh and both
// weight gradients are local. The blocks exchange only the logits' partials (each block sums its rows') and the
// rows' dz:
//   forward   h[:, units] = act(x . W1[units, :]^T + b1), the logits' partials h[:, units] . W2[:, units]^T -> barrier
//   rows_r    the logits (the C partials summed in rank order, + b2), the loss, dz              (DSMEM) -> barrier
//   update    every row's dz (DSMEM); dh[:, units], dW2[:, units], db1, db2 (every block, the same bits),
//             dW1[units, :] = dh^T . x over the batch streamed again, each parameter updated in place
// x streams in chunks of `chunkCols` columns through a ring of `ring` chunk slots (cp.async); the backward pass
// takes the chunks in reverse order, so the forward's last `ring` chunks are still there.
struct MlpUnitLayout {
  int blocks = 0;     // the cluster's blocks (0: the split cannot run)
  int units = 0;      // hidden units per block (the last blocks may have fewer, or none)
  int UP = 0;         // units rounded up to the mma's 8
  int rowsPer = 0;    // batch rows whose loss and dz a block computes
  int NP = 0;         // rows rounded up to 16 times a power of 2 (the forward's m16 tiles share the 16 warps)
  int KP = 0;         // classes rounded up to 4
  int chunkCols = 0;  // a multiple of 16 (the weight gradient's m16 column tiles), at most 128
  int chunks = 0;     // ceil(I / chunkCols)
  int ring = 0;       // chunk slots: 2 .. 4, at most the chunks where there are 2 or more
  int xs = 0;         // a chunk's row stride: chunkCols + 8 (both products' fragment loads miss bank conflicts)
  int w1s = 0;        // W1's row stride: 8 past a multiple of 32, at least chunks * chunkCols
  int hs = 0;         // h's and dh's row stride: 8 or 24 past a multiple of 32
  int kGroups = 0;    // the forward's warps sharing an m16 row tile's k8 steps: 16 / (NP / 16)
  size_t w1[4] = {};    // (UP, w1s) each: values, backup, state
  size_t x = 0;         // (ring, NP, xs)
  size_t part = 0;      // (kGroups, NP, UP) the forward's partial sums
  size_t h = 0, dh = 0; // (NP, hs)
  size_t zPart = 0;     // (NP, KP) this block's share of every row's logits
  size_t zRows = 0;     // (rowsPer, KP) its rows' logits
  size_t dzRows = 0;    // (rowsPer, KP) and their gradient
  size_t dzAll = 0;     // (NP, KP) every row's dz
  size_t rowLoss = 0;   // (rowsPer) doubles
  size_t rowRight = 0;  // (rowsPer)
  size_t lossPart = 0;  // 2 doubles
  size_t combine = 0;   // (8 warps, UP / 8, 4, 32) the weight gradient's second row half
  size_t sums = 0;      // (K * UP + K + UP) dW2[:, units], db2, db1
  size_t rows[2] = {};  // (NP) two steps' dataset indices
  size_t labels = 0;    // (rowsPer) the block's rows' labels (int32)
  size_t own2[4] = {};  // (K * UP) W2[:, units] as [k][u]
  size_t ownB1[4] = {}; // (UP)
  size_t b2[4] = {};    // (KP) every block holds b2 and updates it alike; block 0 writes it back
  size_t floats = 0;
  size_t bytes() const { return floats * sizeof(float); }
  size_t stagingFloats(int64_t inputs) const { return 3 * size_t(NP) * size_t(inputs); }  // MlpStepArgs::staging
};

// The unit split's layout for `blocks` blocks with as many ring slots as `maxBytes` of shared memory allow
// (blocks = 0 where not even 2 fit, or the shape is outside it: more than 256 rows, more than 32 units a block).
MlpUnitLayout mlpUnitLayout(const MlpStepShape& shape, int blocks, size_t maxBytes);

// What a run brings besides its plan.
struct MlpStepRun {
  bool classWeights = false;
  bool augment = false;
  bool weightAverage = false;  // ema
  bool dataParallel = false;
};

// Why the fused step does not take this network and run ("" when it does): the layers must be
// [flatten] dense(H, elementwise activation but GELU) dense(K >= 2, linear) with softmax cross-entropy
// (label smoothing allowed), unweighted, without augmentation, weight average or several GPUs.
std::string mlpStepRefusal(const NetworkPlan& plan, const MlpStepRun& run);
// The shape of a network the fused step takes.
MlpStepShape mlpStepShape(const NetworkPlan& plan, const OptimizerSpec& optimizer, int batch);

// The multiply-adds of one block's step (its columns' forward and weight gradient) up to which Auto takes it, for
// SGD (plain or with momentum): on an H100 (2026-11-26, docs/BENCHMARKS.md "The fused MLP step") the mlp preset
// (784-128-10, batch 64: 0.8 M a block of 16) trained 1.25x faster in FP32 and 1.37x in TF32, with momentum 1.24x
// and 1.34x; with Adam (its two moments on chip) 0.98x in FP32 and 1.05x in TF32, so Adam is left to the separate
// kernels. Larger shapes are not measured yet.
constexpr double kMlpStepMaxBlockMacs = 1.0e6;
// Auto: that rule where the device has clusters; On: wherever the device and shape allow (tests, comparisons).
// `fitsBlocks`: the largest cluster the device co-schedules for the layout (0: none).
bool chooseMlpStep(const DeviceCaps& caps, const KernelOverrides& overrides, const MlpStepShape& shape, int fitsBlocks);
// Where the unit split beats the column split, measured on an H200 (2026-11-28, `test_cuda_ops --bench mlp`,
// docs/BENCHMARKS.md "Two splits of the fused MLP step"): a block streams the batch at about 10 bytes a cycle, so
// it loses where the batch is wide (784-128-10 at batch 64: 40.8 us a step against 17.1) or the step small
// (20-128-3 at 64: 14.7 against 13.1), and wins where rows x hidden units are many and the batch narrow
// (54-128-7 at 256: 26.0 against 34.2; 100-256-10 at 128: 24.3 against 34.1).
constexpr double kUnitSplitMinRowsHidden = 32768;  // batch x hidden units at least
constexpr double kUnitSplitMaxRowsInputs = 16384;  // batch x inputs at most (64 KB of FP32 a pass)
// The unit split instead of the column split: forced either way (where its layout fits: `units`, from
// mlp_unit_step_layout), else where the column split does not fit (`columnBlocks` < 2) or that rule holds.
bool chooseUnitSplit(const KernelOverrides& overrides, const MlpStepShape& shape, const MlpUnitLayout& units,
                     int columnBlocks);

}  // namespace nnstudio::cuda
