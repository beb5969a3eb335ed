// The op table: every layer kind x representative shape x activation x kernel variant the chooser can
// return on this GPU, forward and backward, against the CPU backend (cpu/layers.h) with NaN-poisoned
// outputs (op_table.h says how a row runs and prints). Adding a shape or a layer's case is adding a row
// below; adding a kernel variant is adding an entry to its op's variant list (ops_conv.h, ops_dense.h),
// which the chooser then reaches on every row where it applies.
//   conv2d (ops_conv.h)         forward and input gradient for every elementwise activation / gate over the
//                               direct launch shapes, tensor-core tiles (3xTF32; plain TF32 printed only) and
//                               the SIMT implicit GEMM; weight gradient with the chooser's and forced splits
//   conv2d + max pool           fused and separate: pooled values, argmax, weight gradient
//   gemm, dense (ops_dense.h)   every GEMM plan: four tiles, split-K on and off
//   dense head                  fused at every cluster size against the four separate launches (which run
//                               against the CPU), divergence, a graph, and inside networks
//   maxpool, avgpool, activation, dropout, loss, optimizer, gather (ops_small.h)
//   batchnorm, global_avgpool, gelu, and networks of them against cpu::Network (ops_norm.h)
// Tolerances: the CUDA parity tolerance max |gpu - cpu| <= 1e-4 (1 + max |cpu|) unless a row says otherwise.
// A machine without a GPU prints "skipped: no CUDA device" and passes. `--bench` times every variant on the
// presets' full shapes instead (ops_bench.h); `--bench mlp` times the fused MLP step alone.
#include <cstdio>

#ifdef NNSTUDIO_WITH_CUDA

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "ops_bench.h"
#include "ops_conv.h"
#include "ops_dense.h"
#include "ops_norm.h"
#include "ops_small.h"

using namespace nnstudio;
using namespace nnstudio::test;

namespace {

constexpr ActivationFn kLinear = ActivationFn::Linear, kReLU = ActivationFn::ReLU, kLeaky = ActivationFn::LeakyReLU,
                       kSigmoid = ActivationFn::Sigmoid, kTanh = ActivationFn::Tanh, kSoftplus = ActivationFn::Softplus,
                       kSoftmax = ActivationFn::Softmax;

// ---- conv2d: name, N, C, H, W, filters, kh, kw, stride, padding; what the forced variants must do ----

const ConvRow kConvRows[] = {
    // the presets' layers (smaller batches where the CPU reference would be slow)
    {{"seed000 conv1", 32, 1, 28, 28, 4, 2, 2, 1, 's'}, Expect::All},
    {{"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'}, Expect::All},
    {{"seed001 F64", 100, 1, 28, 28, 64, 3, 3, 1, 'v'}},
    {{"seed001 F256", 8, 1, 28, 28, 256, 3, 3, 1, 'v'}},
    {{"seed002 conv1 valid", 32, 1, 28, 28, 8, 5, 5, 1, 'v'}, Expect::All},
    {{"seed002 conv1 same", 32, 1, 28, 28, 8, 5, 5, 1, 's'}},
    {{"seed002 conv2 valid", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, Expect::All, false, {1, 2, 3, 7, 50, 100, 399, 100000}},
    {{"seed002 conv2 same", 32, 8, 28, 28, 8, 5, 5, 1, 's'}},
    {{"keras conv1", 128, 1, 28, 28, 32, 3, 3, 1, 'v'}},
    {{"keras conv1 (K=9)", 8, 1, 28, 28, 32, 3, 3, 1, 'v'}, Expect::Any, true},
    {{"keras conv2", 100, 32, 26, 26, 64, 3, 3, 1, 'v'}},
    {{"keras conv2", 32, 32, 26, 26, 64, 3, 3, 1, 'v'}, Expect::Any, true},
    {{"keras conv2", 16, 32, 26, 26, 64, 3, 3, 1, 'v'}, Expect::Any, false, {1, 5, 37, 289}},
    {{"keras conv2", 8, 32, 26, 26, 64, 3, 3, 1, 'v'}, Expect::Any, true},
    {{"lenet conv1 valid", 16, 1, 28, 28, 6, 5, 5, 1, 'v'}},
    {{"lenet conv1", 64, 1, 28, 28, 6, 5, 5, 1, 's'}, Expect::All},
    {{"lenet conv2 N16", 16, 6, 12, 12, 16, 5, 5, 1, 'v'}},
    {{"lenet conv2", 64, 6, 14, 14, 16, 5, 5, 1, 'v'}, Expect::All},
    {{"fast_mnist conv2 (dIn M=24)", 8, 24, 12, 12, 32, 5, 5, 1, 'v'}, Expect::Any, true},
    // strides, paddings, kernel shapes
    {{"stride 2", 4, 3, 9, 9, 5, 3, 3, 2, 'v'}},
    {{"stride 2 same even", 3, 2, 7, 8, 6, 2, 2, 2, 's'}, Expect::Any, false, {1, 2, 5}},
    {{"stride 3 3x2 same", 2, 2, 10, 11, 3, 3, 2, 3, 's'}},
    {{"stride 2 full", 2, 3, 6, 5, 4, 3, 3, 2, 'f'}},
    {{"stride 2 same", 6, 32, 13, 15, 40, 3, 3, 2, 's'}, Expect::Any, true},
    {{"stride 2 valid 4x4", 5, 20, 16, 17, 33, 4, 4, 2, 'v'}, Expect::Any, true},
    {{"stride 3 full 3x2", 3, 17, 10, 11, 36, 3, 2, 3, 'f'}, Expect::Any, true},
    {{"F=20 C=12 5x3 stride 2", 3, 12, 11, 13, 20, 5, 3, 2, 'v'}},
    {{"wide stride 2 (full-width tiles)", 24, 3, 56, 56, 8, 3, 3, 2, 's'}},
    {{"resnet_fast stride-2 block (4 phases)", 16, 32, 14, 14, 64, 3, 3, 2, 's'}, Expect::Any, true},
    {{"resnet_mnist 7x7x96 (BF16: 64 x 64, BK 32, split)", 16, 96, 7, 7, 96, 3, 3, 1, 's'}, Expect::Any, true},
    {{"1x1 stride 2 projection (3 untapped phases)", 4, 48, 14, 14, 96, 1, 1, 2, 'v'}, Expect::Any, true},
    {{"stride 3 2x2 same (untapped phase)", 3, 40, 8, 8, 36, 2, 2, 3, 's'}, Expect::Any, true},
    {{"4x2 same (asymmetric pads)", 3, 2, 7, 6, 5, 4, 2, 1, 's'}, Expect::None},
    {{"same 4x2 (asymmetric pads)", 4, 48, 7, 9, 96, 4, 2, 1, 's'}, Expect::Any, true},
    {{"2x2 same C=3 F=7", 5, 3, 9, 7, 7, 2, 2, 1, 's'}, Expect::All},
    {{"full 3x3", 4, 2, 5, 5, 3, 3, 3, 1, 'f'}},
    {{"full 3x3 M=33", 3, 33, 7, 7, 33, 3, 3, 1, 'f'}, Expect::Any, true},
    {{"5x5 full", 2, 2, 7, 6, 3, 5, 5, 1, 'f'}, Expect::All},
    {{"same 5x5 (odd J)", 3, 35, 9, 11, 70, 5, 5, 1, 's'}, Expect::Any, true},
    {{"3x3 same odd plane", 3, 2, 13, 11, 5, 3, 3, 1, 's'}, Expect::All},
    {{"3x2 valid C=3", 4, 3, 8, 7, 5, 3, 2, 1, 'v'}},
    {{"3x5 valid", 2, 3, 10, 12, 4, 3, 5, 1, 'v'}, Expect::None},
    {{"1x1", 3, 3, 4, 4, 7, 1, 1, 1, 'v'}},
    {{"1x1 C=64", 4, 64, 9, 9, 48, 1, 1, 1, 'v'}, Expect::Any, true},
    // 32 taps, the most the tap masks hold: 4x8 (a row's bits up to bit 32) and 1x32
    {{"4x8 same, 32 taps", 3, 20, 9, 40, 24, 4, 8, 1, 's'}, Expect::None, true},
    {{"1x32 valid, 32 taps", 2, 18, 3, 40, 20, 1, 32, 1, 'v'}, Expect::None, true},
    // edge sizes: tiles, tails, N = 1, kernel = input
    {{"N=1", 1, 2, 6, 6, 3, 3, 3, 1, 's'}},
    {{"N=1 wide", 1, 1, 5, 61, 3, 3, 3, 1, 's'}, Expect::All},
    {{"N=1 OH=1", 1, 16, 5, 5, 40, 5, 5, 1, 'v'}, Expect::Any, true},
    {{"OH=1 (kernel = input)", 6, 2, 5, 5, 9, 5, 5, 1, 'v'}, Expect::All},
    {{"2x2 valid C=1 F=1", 3, 1, 5, 5, 1, 2, 2, 1, 'v'}, Expect::All},
    {{"small M=4 C=3", 2, 3, 8, 8, 4, 3, 3, 1, 's'}, Expect::Any, true},
    {{"3x3 valid F=16 N=7", 7, 5, 17, 19, 16, 3, 3, 1, 'v'}, Expect::All},
    {{"5x5 same C=16 F=2", 2, 16, 6, 9, 2, 5, 5, 1, 's'}, Expect::All},
    {{"F=70 C=33 (tile edges)", 3, 33, 9, 10, 70, 3, 3, 1, 's'}},
    {{"F=130 K'=19", 5, 2, 8, 8, 130, 3, 3, 1, 'v'}, Expect::Any, false, {1, 3, 10}},
    {{"F=130 C=5 (3 row tiles)", 2, 5, 12, 13, 130, 3, 3, 1, 'v'}, Expect::Any, true},
    {{"wide C=36 (full-width tiles)", 24, 36, 56, 56, 8, 3, 3, 1, 's'}},
};

// ---- conv2d + max pool: the conv, the pool's size and stride, the conv's activation ----

const ConvPoolRow kConvPoolRows[] = {
    {{"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'}, 4, 4, kReLU},
    {{"seed001 F64", 100, 1, 28, 28, 64, 3, 3, 1, 'v'}, 2, 2, kReLU},
    {{"seed001 F256", 16, 1, 28, 28, 256, 3, 3, 1, 'v'}, 2, 2, kReLU},
    {{"seed002 conv2 valid", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, 2, 2, kReLU},
    {{"seed002 conv2 valid linear", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, 2, 2, kLinear},
    {{"seed002 conv2 same", 32, 8, 28, 28, 8, 5, 5, 1, 's'}, 2, 2, kLinear},
    {{"keras conv2", 32, 32, 26, 26, 64, 3, 3, 1, 'v'}, 2, 2, kReLU},
    {{"lenet conv2 (max)", 16, 6, 14, 14, 16, 5, 5, 1, 'v'}, 2, 2, kTanh},
    {{"fast_mnist conv1", 16, 1, 28, 28, 24, 5, 5, 1, 'v'}, 2, 2, kReLU},
    {{"fast_mnist conv2", 8, 24, 12, 12, 32, 5, 5, 1, 'v'}, 2, 2, kReLU},
    {{"pool 3/2 overlap C=3", 4, 3, 11, 11, 5, 3, 3, 1, 'v'}, 3, 2, kSigmoid},
    {{"pool 2/1 overlap", 3, 2, 8, 8, 6, 3, 3, 1, 's'}, 2, 1, kLeaky},
    {{"pool 4/2 overlap", 2, 2, 12, 12, 4, 3, 3, 1, 's'}, 4, 2, kReLU},
    {{"floor mode 7 -> 3", 2, 3, 9, 9, 7, 3, 3, 1, 'v'}, 2, 2, kTanh},
    {{"N=1 pool 3/3 floor", 1, 3, 10, 10, 12, 3, 3, 1, 's'}, 3, 3, kReLU},
    {{"conv stride 2", 3, 2, 13, 13, 9, 3, 3, 2, 'v'}, 2, 2, kLinear},
    {{"F=70 (filter tails)", 4, 5, 12, 12, 70, 3, 3, 1, 'v'}, 2, 2, kReLU},
    {{"F=70 pool 3", 3, 5, 12, 12, 70, 3, 3, 1, 's'}, 3, 3, kLeaky},
    {{"2x2 same even pads C=3", 5, 3, 9, 7, 7, 2, 2, 1, 's'}, 2, 2, kSoftplus},
    {{"wide 56x56 C=36 (row tiles)", 4, 36, 56, 56, 20, 3, 3, 1, 's'}, 2, 2, kReLU},
    {{"N=1 C=1 relu F=1", 1, 1, 6, 6, 1, 3, 3, 1, 'v'}, 2, 2, kReLU},
    {{"C=1 5x5 tanh (register taps, not ReLU)", 6, 1, 16, 16, 24, 5, 5, 1, 'v'}, 2, 2, kTanh},
    {{"C=1 3x3 stride 2 leaky (thin, strided)", 5, 1, 17, 17, 30, 3, 3, 2, 'v'}, 2, 2, kLeaky},
    {{"C=2 3x3 (thin, prefetched, any taps)", 7, 2, 10, 10, 12, 3, 3, 1, 'v'}, 2, 2, kReLU},
    {{"C=2 2x2 same relu F=9 (thin, any taps)", 7, 2, 10, 10, 9, 2, 2, 1, 's'}, 2, 2, kReLU},
};

// ---- gemm(): M, N, K in the four transpose modes; misaligned operands; the epilogues ----

std::vector<GemmRow> gemmRows() {
  std::vector<GemmRow> rows;
  const int shapes[][3] = {{33, 17, 5},      {1, 1, 1},        {7, 5, 1},      {3, 40, 2},      {64, 64, 64},
                           {65, 130, 47},    {10, 300, 128},   {100, 10, 2000}, {257, 129, 300}, {128, 128, 784},
                           {32, 128, 784},   {16, 16, 4096},
                           // on 132 SMs: 64x64, 64x64 split 4, 32x32, 32x32 split 8, 16x64, 16x64 split 4
                           {1024, 1024, 32}, {512, 512, 512}, {640, 640, 64},  {256, 256, 1024}, {10, 43264, 32},
                           {10, 10816, 1000}};
  for (const auto& s : shapes)
    for (int mode = 0; mode < 4; ++mode) rows.push_back({s[0], s[1], s[2], bool(mode & 2), bool(mode & 1)});
  const int misaligned[][3] = {{64, 64, 64},    {128, 128, 784}, {12, 200, 64},    {33, 17, 5},
                               {512, 512, 512}, {640, 640, 64},  {256, 256, 1024}, {10, 10816, 1000}};
  for (const auto& s : misaligned)
    for (int mode = 0; mode < 4; ++mode) rows.push_back({s[0], s[1], s[2], bool(mode & 2), bool(mode & 1), 1});
  rows.push_back({9, 11, 0, false, true, 0, kSigmoid, true});  // K = 0: the epilogue of zeros
  // K <= 16, N >= 256 without transposes: the shallow kernel (float4 where N % 4 == 0 and aligned, else scalar)
  const int shallow[][3] = {{100, 10816, 10}, {19, 1030, 10}, {1000, 300, 16}, {17, 256, 1}, {9, 4099, 3}, {33, 1000, 7}};
  for (const auto& s : shallow)
    for (int mode = 0; mode < 4; ++mode) rows.push_back({s[0], s[1], s[2], bool(mode & 2), bool(mode & 1)});
  rows.push_back({33, 1028, 7, false, false, 1});  // misaligned: scalar
  for (ActivationFn a : {kLinear, kReLU, kSigmoid, kTanh}) rows.push_back({37, 513, 9, false, false, 0, a, true, a});
  // a few units over a long input (gemm_stream.cu): narrow (NT) and fewrows (TN) under Auto, their padded widths,
  // partial row and column tiles, scalar loads, the epilogue in the split reduction
  const int streamed[][3] = {{1000, 10, 20000}, {100, 10, 10816}, {33, 3, 4099}, {70, 16, 2050}, {5, 1, 9000}};
  for (const auto& s : streamed) {
    rows.push_back({s[0], s[1], s[2], false, true});
    rows.push_back({s[1], s[2], s[0], true, false});
  }
  rows.push_back({100, 10, 10816, false, true, 1});  // misaligned: scalar copies
  rows.push_back({10, 10816, 100, true, false, 1});
  rows.push_back({12, 4098, 77, true, false, 0, kLinear, false, kReLU});   // fewrows' gate, N % 4 != 0
  for (ActivationFn a : {kReLU, kSigmoid, kSoftmax}) rows.push_back({37, 10, 5000, false, true, 0, a, true, a});
  for (ActivationFn a : {kLinear, kReLU, kLeaky, kSigmoid, kTanh, kSoftplus, kSoftmax}) {
    rows.push_back({37, 45, 29, false, true, 0, a, true});
    rows.push_back({128, 128, 784, false, true, 0, a, true});  // split-K epilogue
    rows.push_back({37, 45, 29, false, false, 0, kLinear, false, a});
    rows.push_back({20, 96, 16, false, false, 0, kLinear, false, a});
    rows.push_back({40, 12, 700, true, true, 0, a, true, a});  // both, split-K
  }
  return rows;
}

// ---- dense: N, inputs, units, the activation and the gate of the input gradient ----

std::vector<DenseRow> denseRows() {
  const ActivationFn acts[] = {kLinear, kReLU, kLeaky, kSigmoid, kTanh, kSoftplus, kSoftmax};
  std::vector<DenseRow> rows;
  for (int i = 0; i < 7; ++i) rows.push_back({33, 50, 17, acts[i], acts[(i + 3) % 7]});  // every activation
  rows.push_back({1, 1, 1, kReLU, kSigmoid});                                         // odd shapes
  rows.push_back({7, 5, 3, kTanh, kReLU});
  rows.push_back({33, 5, 17, kSoftplus, kLeaky});
  rows.push_back({3, 1000, 1, kSigmoid, kTanh});
  // the presets' layers at every batch size they train with
  int k = 0;
  for (const auto& l : kPresetDenseLayers)
    for (int N : kPresetBatches) {
      rows.push_back({N, l[0], l[1], acts[k % 6], acts[(k + 2) % 6]});
      ++k;
    }
  rows.push_back({128, 784, 128, kReLU, kReLU, true});  // replayed from a CUDA graph
  rows.push_back({64, 10816, 10, kReLU, kReLU, true});
  return rows;
}

// ---- the dense head: N, inputs, units, loss, the head's activation, the gate, whether dIn is asked for ----

std::vector<HeadRow> headRows() {
  std::vector<HeadRow> rows;
  for (LossKind loss : {LossKind::SoftmaxCrossEntropy, LossKind::BinaryCrossEntropy, LossKind::MSE, LossKind::MAE}) {
    rows.push_back({37, 50, 10, loss, kLinear, kReLU, true});
    rows.push_back({37, 50, 10, loss, kLinear, kLinear, false});
    rows.push_back({128, 128, 10, loss, kLinear, kReLU, true});
    rows.push_back({32, 84, 10, loss, kLinear, kTanh, true});
    rows.push_back({5, 13, 3, loss, kLinear, kLeaky, true});    // scalar staging
    rows.push_back({9, 700, 32, loss, kLinear, kReLU, true});   // inputs > the block
    rows.push_back({200, 37, 6, loss, kLinear, kSigmoid, true});
  }
  rows.push_back({5, 13, 3, LossKind::MSE, kSigmoid, kLeaky, false});
  rows.push_back({256, 512, 10, LossKind::SoftmaxCrossEntropy, kLinear, kReLU, true});
  rows.push_back({37, 50, 1, LossKind::BinaryCrossEntropy, kLinear, kReLU, true});
  rows.push_back({37, 50, 1, LossKind::MSE, kLinear, kReLU, true});
  rows.push_back({37, 50, 1, LossKind::MAE, kTanh, kReLU, true});
  rows.push_back({37, 50, 4, LossKind::MSE, kSigmoid, kReLU, true});
  rows.push_back({37, 50, 4, LossKind::MAE, kTanh, kLinear, false});
  rows.push_back({37, 50, 17, LossKind::SoftmaxCrossEntropy, kLinear, kReLU, true});
  rows.push_back({1, 8, 2, LossKind::SoftmaxCrossEntropy, kLinear, kReLU, true});
  return rows;
}

const HeadNetworkRow kHeadNetworks[] = {
    {"mlp relu -> dense 10, softmax cross-entropy (ReLU gate)",
     R"({"input":[20],"layers":[{"kind":"dense","units":16,"activation":"relu"},{"kind":"dense","units":10}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":3})", false},
    {"the same with the network's input gradient",
     R"({"input":[20],"layers":[{"kind":"dense","units":16,"activation":"relu"},{"kind":"dense","units":10}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":3})", true},
    {"one dense layer (the head is the first layer), input gradient, binary cross-entropy on a folded sigmoid",
     R"({"input":[13],"layers":[{"kind":"dense","units":1,"activation":"sigmoid"}],
        "loss":"binary_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":4})", true},
    {"conv tanh -> flatten -> dropout -> dense tanh head, mae",
     R"({"input":[1,6,6],"layers":[{"kind":"conv2d","filters":3,"kernel":[3,3],"activation":"tanh"},{"kind":"flatten"},
        {"kind":"dropout","rate":0.25},{"kind":"dense","units":4,"activation":"tanh"}],"loss":"mae",
        "optimizer":{"kind":"adam","lr":0.001},"seed":5})", false},
    {"mlp relu -> dense 10, softmax cross-entropy with label smoothing 0.1",
     R"({"input":[20],"layers":[{"kind":"dense","units":16,"activation":"relu"},{"kind":"dense","units":10}],
        "loss":"softmax_cross_entropy","labelSmoothing":0.1,"optimizer":{"kind":"adam","lr":0.001},"seed":3})", true},
    {"dense leaky_relu -> dense sigmoid head, mse",
     R"({"input":[9],"layers":[{"kind":"dense","units":7,"activation":"leaky_relu","alpha":0.2},
        {"kind":"dense","units":3,"activation":"sigmoid"}],"loss":"mse",
        "optimizer":{"kind":"adam","lr":0.001},"seed":6})", true},
};

// ---- the small kernels ----

const PoolRow kPoolRows[] = {
    // stride == size takes the one-thread-per-window backward (9x11 and 7x10 leave rows and columns uncovered)
    {3, 28, 28, 2, 2}, {4, 28, 28, 4, 4}, {2, 9, 11, 2, 2}, {3, 7, 10, 3, 3},
    {2, 9, 11, 3, 2},  {5, 7, 7, 3, 1},   {1, 5, 6, 2, 3},
};

void runTable(cpu::ThreadPool& pool) {
  std::printf("GPU: %d SMs, sm_%d%d, %zu KiB shared memory per block, split-K clusters up to %d, dense head "
              "clusters up to %d\n",
              caps().sms, caps().computeMajor, caps().computeMinor, caps().sharedOptin / 1024, caps().gemmMaxCluster,
              caps().headMaxCluster);
  uint64_t seed = 1;
  for (const ConvRow& row : kConvRows) checkConvRow(pool, row, seed++);
  for (const ConvPoolRow& row : kConvPoolRows) checkConvPoolRow(pool, row, seed++);
  for (const GemmRow& row : gemmRows()) checkGemmRow(row, seed++);
  for (const DenseRow& row : denseRows()) checkDenseRow(pool, row, seed++);
  for (const HeadRow& row : headRows()) checkHeadRow(pool, row, seed++);
  {
    Row line("dense head", "100x10816->10, 32x128->33", "the chooser");
    line.check(!cuda::denseHeadSupported(caps(), 100, 10816, 10) && !cuda::denseHeadSupported(caps(), 32, 128, 33),
               "too large heads are not fused (seed001's 10816 inputs x 100, 33 units)");
  }
  for (LossKind loss : {LossKind::SoftmaxCrossEntropy, LossKind::BinaryCrossEntropy, LossKind::MSE, LossKind::MAE})
    checkHeadDivergence(loss);
  checkHeadGraph();
  for (const HeadNetworkRow& row : kHeadNetworks) checkHeadNetwork(row);
  for (const PoolRow& row : kPoolRows) checkPools(pool, row);
  for (ActivationFn fn : {kLinear, kReLU, kLeaky, kSigmoid, kTanh, kSoftplus, kSoftmax}) checkActivation(fn, 37, 45);
  checkDropout(pool, 19, 133, 0.3f);
  for (LossKind loss : {LossKind::SoftmaxCrossEntropy, LossKind::BinaryCrossEntropy, LossKind::MSE, LossKind::MAE})
    for (int K : {1, 3, 10}) checkLoss(loss, K, 600);
  for (const auto& [K, N] : {std::pair{3, 600}, {10, 100}, {10, 1000}, {16, 37}, {24, 600}, {32, 9000}, {40, 600}})
    checkLoss(LossKind::SoftmaxCrossEntropy, K, N, true);  // 8, 16 and 32 lanes a row, 64 blocks a grid-stride; 40: one block
  for (LossKind loss : {LossKind::MSE, LossKind::MAE, LossKind::Huber})
    for (int K : {1, 3}) checkRegressionLoss(loss, K, 600, 0.7f);
  checkRegressionLoss(LossKind::Huber, 2, 33, 3.0f);
  for (LossKind loss : {LossKind::SoftmaxCrossEntropy, LossKind::BinaryCrossEntropy})
    for (int K : {1, 4}) checkWeightedLoss(loss, K, 600);
  checkLossDivergence();
  for (const char* name : {"sgd", "sgd momentum", "sgd nesterov", "adam", "adamw"}) checkOptimizer(name, 100003);
  for (const char* name : {"sgd", "sgd momentum", "sgd nesterov", "sgdw", "adam", "adamw"})
    checkOptimizerDecay(name, 100003);
  checkEma(100003);
  for (int K : {3, 10}) checkLabelSmoothingLoss(K, 600);
  for (int K : {3, 10, 20}) checkLabelSmoothingLoss(K, 600, true);
  {
    Augmentation shifts, flips, affine, all;
    shifts.translate = 3;
    flips.flip = true;
    flips.erase = 0.5f;
    affine.rotate = 15;
    affine.scale = 0.1f;
    all = affine;
    all.translate = 2;
    all.flip = true;
    all.erase = 0.25f;
    checkAugment("translate 3", shifts, 64, 1, 28, 28);
    checkAugment("flip, erase 0.5", flips, 64, 3, 32, 32);
    checkAugment("rotate 15, scale 0.1", affine, 64, 3, 32, 32);
    checkAugment("everything", all, 33, 3, 17, 23);
  }
  for (int64_t fs : {13, 16}) checkGather(fs);
  for (const char* name : {"sgd momentum", "adam"}) checkOptimizerGathersNext(name);
  runNormRows(pool);
}

}  // namespace

int main(int argc, char** argv) {
  if (!haveCudaDevice()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--bench") == 0) return bench(argc > 2 ? argv[2] : "");
  nnstudio_test::verbose() = false;  // one line per row; failing checks print their own
  cpu::ThreadPool pool(0);
  try {
    runTable(pool);
  } catch (const std::exception& e) {
    CHECK_MSG(false, std::string("no exception: ") + e.what());
  }
  return nnstudio_test::summary();
}

#else
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
