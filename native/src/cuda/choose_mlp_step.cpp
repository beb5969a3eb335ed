// The fused MLP step's layout, the networks it takes and when it is chosen (mlp_step.h). Plain C++.
#include <algorithm>

#include "cuda/mlp_step.h"

namespace nnstudio::cuda {

namespace {
int ceilDiv(int64_t a, int64_t b) { return int((a + b - 1) / b); }

// Carves a block's shared memory into regions of whole float4s (16-byte aligned for float4 and double accesses).
struct Carver {
  size_t at = 0;
  size_t take(size_t floats) {
    const size_t offset = at;
    at += (floats + 3) / 4 * 4;
    return offset;
  }
};
}  // namespace

MlpStepLayout mlpStepLayout(const MlpStepShape& s, int blocks) {
  MlpStepLayout l;
  if (blocks < 1 || s.inputs < 1 || s.hidden < 1 || s.classes < 1 || s.maxRows < 1) return l;
  auto roundUp = [](int64_t v, int m) { return int((v + m - 1) / m * m); };
  l.blocks = blocks;
  l.cols = ceilDiv(s.inputs, blocks);
  l.rowsPer = ceilDiv(s.maxRows, blocks);
  l.NP = roundUp(s.maxRows, 32);
  l.HP = roundUp(s.hidden, 32);
  l.IcP = roundUp(l.cols + 1, 8);
  l.KP = roundUp(s.classes, 4);
  l.xs = l.IcP + 4;
  l.w1s = l.HP + 8;
  l.w2Stride = l.HP + 1;
  l.ps = l.HP + 8;
  Carver carver;
  auto take = [&](size_t floats) { return carver.take(floats); };
  const size_t R = size_t(l.rowsPer), K = size_t(s.classes), H = size_t(s.hidden);
  l.w1t = take(size_t(l.IcP) * l.w1s);
  l.xN[0] = take(size_t(l.NP) * l.xs);
  l.xN[1] = take(size_t(l.NP) * l.xs);
  l.part = take(size_t(l.NP) * l.ps);
  l.hRows = take(R * l.HP);
  l.dhRows = take(R * l.HP);
  l.zRows = take(R * l.KP);
  l.dz = take(R * l.KP);
  l.rowLoss = take(2 * R);
  l.rowRight = take(R);
  l.lossPart = take(4);
  l.dW2 = take(K * H + K);
  l.w2s = take(K * l.w2Stride);
  l.b2s = take(size_t(l.KP));
  for (int b = 0; b < 2; ++b) l.rows[b] = take(size_t(l.NP));
  for (int b = 0; b < 2; ++b) l.labels[b] = take(size_t(l.NP));
  l.per2 = ceilDiv(int64_t(K * H + K), blocks);
  l.perB1 = ceilDiv(s.hidden, blocks);
  const int copies = 2 + std::clamp(s.stateSlots, 0, 2);  // values, backup, state
  l.w1[0] = l.w1t;
  for (int c = 1; c < copies; ++c) l.w1[c] = take(size_t(l.IcP) * l.w1s);
  for (int c = 0; c < copies; ++c) l.own2[c] = take(size_t(l.per2));
  for (int c = 0; c < copies; ++c) l.ownB1[c] = take(size_t(l.perB1));
  l.floats = carver.at;
  return l;
}

MlpUnitLayout mlpUnitLayout(const MlpStepShape& s, int blocks, size_t maxBytes) {
  MlpUnitLayout l;
  if (blocks < 1 || s.inputs < 1 || s.hidden < 1 || s.classes < 1 || s.maxRows < 1 || s.maxRows > 256) return l;
  auto roundUp = [](int64_t v, int m) { return int((v + m - 1) / m * m); };
  l.units = ceilDiv(s.hidden, blocks);
  if (l.units > 32) return l;
  l.blocks = blocks;
  l.UP = roundUp(l.units, 8);
  l.rowsPer = ceilDiv(s.maxRows, blocks);
  l.NP = 16;
  while (l.NP < s.maxRows) l.NP *= 2;
  l.KP = roundUp(s.classes, 4);
  l.chunkCols = int(std::min<int64_t>(128, roundUp(ceilDiv(s.inputs, 2), 16)));  // two chunks at least
  l.chunks = ceilDiv(s.inputs, l.chunkCols);
  l.xs = l.chunkCols + 8;
  l.w1s = roundUp(int64_t(l.chunks) * l.chunkCols, 32) + 8;
  l.hs = l.UP <= 8 ? 8 : l.UP <= 24 ? 24 : 40;
  l.kGroups = 256 / l.NP;
  const size_t K = size_t(s.classes), UP = size_t(l.UP), NP = size_t(l.NP), R = size_t(l.rowsPer);
  const int copies = 2 + std::clamp(s.stateSlots, 0, 2);  // values, backup, state
  for (int ring = std::max(2, std::min(4, l.chunks)); ring >= 2; --ring) {  // one chunk: two slots, a step each
    Carver carver;
    auto take = [&](size_t floats) { return carver.take(floats); };
    for (int c = 0; c < copies; ++c) l.w1[c] = take(UP * l.w1s);
    l.x = take(size_t(ring) * NP * l.xs);
    l.part = take(size_t(l.kGroups) * NP * UP);
    l.h = take(NP * l.hs);
    l.dh = take(NP * l.hs);
    l.zPart = take(NP * l.KP);
    l.zRows = take(R * l.KP);
    l.dzRows = take(R * l.KP);
    l.dzAll = take(NP * l.KP);
    l.rowLoss = take(2 * R);
    l.rowRight = take(R);
    l.lossPart = take(4);
    l.combine = take(8 * UP / 8 * 4 * 32);
    l.sums = take(K * UP + K + UP);
    for (int b = 0; b < 2; ++b) l.rows[b] = take(NP);
    l.labels = take(R);
    for (int c = 0; c < copies; ++c) l.own2[c] = take(K * UP);
    for (int c = 0; c < copies; ++c) l.ownB1[c] = take(UP);
    for (int c = 0; c < copies; ++c) l.b2[c] = take(size_t(l.KP));
    l.floats = carver.at;
    l.ring = ring;
    if (l.bytes() <= maxBytes) return l;
  }
  return MlpUnitLayout{};
}

std::string mlpStepRefusal(const NetworkPlan& plan, const MlpStepRun& run) {
  if (run.dataParallel) return "several GPUs";
  if (run.classWeights) return "class weights";
  if (run.augment) return "augmentation";
  if (run.weightAverage) return "a weight average";
  if (plan.regression() || plan.loss != LossKind::SoftmaxCrossEntropy) return "not a softmax cross-entropy classifier";
  std::vector<const LayerPlan*> dense;
  for (const LayerPlan& lp : plan.layers) {
    if (lp.kind == LayerKind::Flatten && dense.empty()) continue;
    if (lp.kind != LayerKind::Dense) return "a layer other than dense (after a leading flatten)";
    dense.push_back(&lp);
  }
  if (dense.size() != 2) return "not exactly two dense layers";
  const ActivationFn act = dense[0]->activation;
  if (act == ActivationFn::GELU || act == ActivationFn::Softmax) return "the hidden layer's activation";
  if (dense[1]->activation != ActivationFn::Linear) return "the output layer's activation";
  if (dense[1]->outSize < 2 || dense[1]->outSize > 32) return "classes outside 2..32";
  if (dense[0]->outSize > 1024) return "more than 1024 hidden units";
  return "";
}

MlpStepShape mlpStepShape(const NetworkPlan& plan, const OptimizerSpec& optimizer, int batch) {
  MlpStepShape s;
  s.stateSlots = optimizer.kind != OptimizerKind::SGD ? 2 : optimizer.momentum != 0.0f ? 1 : 0;
  const LayerPlan& head = plan.layers.back();
  s.inputs = plan.inputSize;
  s.hidden = int(head.inSize);
  s.classes = int(head.outSize);
  s.maxRows = batch;
  return s;
}

bool chooseMlpStep(const DeviceCaps& caps, const KernelOverrides& overrides, const MlpStepShape& shape, int fitsBlocks) {
  if (overrides.fusedStep == Switch::Off || fitsBlocks < 2 || !caps.clusterLaunch || caps.computeMajor < 9) return false;
  if (overrides.fusedStep == Switch::On) return true;
  const double blockMacs = 2.0 * double(shape.maxRows) * double(shape.inputs) * shape.hidden / fitsBlocks;
  return shape.stateSlots <= 1 && blockMacs <= kMlpStepMaxBlockMacs;
}

bool chooseUnitSplit(const KernelOverrides& overrides, const MlpStepShape& shape, const MlpUnitLayout& units,
                     int columnBlocks) {
  if (units.blocks < 2 || overrides.mlpSplit == MlpSplit::Columns) return false;
  if (overrides.mlpSplit == MlpSplit::Units || columnBlocks < 2) return true;
  const double rowsTimesHidden = double(shape.maxRows) * shape.hidden, rowsTimesInputs = double(shape.maxRows) * shape.inputs;
  return rowsTimesHidden >= kUnitSplitMinRowsHidden && rowsTimesInputs <= kUnitSplitMaxRowsInputs;
}

}  // namespace nnstudio::cuda
