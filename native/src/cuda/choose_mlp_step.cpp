// The fused MLP step's layout, the networks it takes and when it is chosen (mlp_step.h). Plain C++.
#include <algorithm>

#include "cuda/mlp_step.h"

namespace nnstudio::cuda {

namespace {
int roundUp4(int64_t v) { return int((v + 3) / 4 * 4); }
int ceilDiv(int64_t a, int64_t b) { return int((a + b - 1) / b); }
}  // namespace

MlpStepLayout mlpStepLayout(const MlpStepShape& s, int blocks) {
  MlpStepLayout l;
  if (blocks < 1 || s.inputs < 1 || s.hidden < 1 || s.classes < 1 || s.maxRows < 1) return l;
  l.blocks = blocks;
  l.cols = ceilDiv(s.inputs, blocks);
  l.rowsPer = ceilDiv(s.maxRows, blocks);
  l.NP = roundUp4(s.maxRows);
  l.HP = roundUp4(s.hidden);
  l.IcP = roundUp4(l.cols);
  l.KP = roundUp4(s.classes);
  size_t at = 0;
  auto take = [&](size_t floats) {
    const size_t offset = at;
    at += (floats + 3) / 4 * 4;
    return offset;
  };
  const size_t R = size_t(l.rowsPer), K = size_t(s.classes), H = size_t(s.hidden);
  l.w1t = take(size_t(l.IcP) * l.HP);
  l.xTStride = l.NP + 4;
  l.xT = take(size_t(l.IcP) * l.xTStride);
  l.xN = take(size_t(l.NP) * l.IcP);
  l.part = take(size_t(l.NP) * l.HP);
  l.hRows = take(R * l.HP);
  l.dhRows = take(R * l.HP);
  l.z = take(R * l.KP);
  l.dz = take(R * l.KP);
  l.rowLoss = take(2 * R);
  l.rowRight = take(R);
  l.lossPart = take(4);
  l.dW2 = take(K * H + K);
  l.w2s = take(K * l.HP);
  l.b1s = take(size_t(l.HP));
  l.b2s = take(size_t(l.KP));
  l.rows = take(size_t(l.NP));
  l.terms = take(2 * R * l.KP);
  l.rowStat = take(2 * R);
  l.per2 = ceilDiv(int64_t(K * H + K), blocks);
  l.perB1 = ceilDiv(s.hidden, blocks);
  const int copies = 2 + std::clamp(s.stateSlots, 0, 2);  // values, backup, state
  l.w1[0] = l.w1t;
  for (int c = 1; c < copies; ++c) l.w1[c] = take(size_t(l.IcP) * l.HP);
  for (int c = 0; c < copies; ++c) l.own2[c] = take(size_t(l.per2));
  for (int c = 0; c < copies; ++c) l.ownB1[c] = take(size_t(l.perB1));
  l.floats = at;
  return l;
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
  (void)shape;  // every shape that fits is taken when forced; Auto takes none (mlp_step.h)
  return overrides.fusedStep == Switch::On && fitsBlocks >= 2 && caps.clusterLaunch && caps.computeMajor >= 9;
}

}  // namespace nnstudio::cuda
