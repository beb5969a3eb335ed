// The CPU's training session (train/session.h): one step at a time, synchronously. A step gathers its
// batch from the epoch's order (or points into the data when it is not shuffled), runs forward and the
// loss; a non-finite loss flags divergence and the session runs no more steps (the GPU's rule); else it
// keeps the weights as the last finite ones, runs backward and the optimizer at the scheduled learning
// rate. Totals are always current, so a requested read is ready at once. With options.augment the batch is
// augmented (spec/augment.h) as its global step draws it; with options.ema the weight average follows every
// update and is the one validated.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "cpu/backend.h"
#include "cpu/network.h"
#include "spec/lr_schedule.h"
#include "spec/rng.h"
#include "train/run_control.h"
#include "train/session.h"

namespace nnstudio::cpu {

namespace {

class CpuSession final : public TrainingSession {
 public:
  CpuSession(const SessionSetup& setup, int threads);

  std::string deviceName() const override {
    return "cpu (" + std::to_string(threads_) + (threads_ == 1 ? " thread)" : " threads)");
  }
  void start(StartState state) override;
  void beginEpoch(const std::vector<uint32_t>& order) override;
  int64_t runSteps(int64_t maxSteps) override;
  void requestTotals() override { pending_ = true; }
  bool totalsPending() const override { return pending_; }
  bool takeTotals(RunTotals& totals) override;
  RunTotals totals() override {
    pending_ = false;
    return totals_;
  }
  void synchronize() override {}
  void setBaseLearningRate(double lr) override { baseLr_ = lr; }
  ValidationTotals validate() override;
  void keepBest() override { best_ = evaluated(); }
  std::vector<float> weights(WeightsKind which) override;
  std::vector<float> optimizerState() override { return state_; }

 private:
  // the batch's features (n, featureSize); its labels and targets in targets_ (batchLabels_, batchTargets_)
  const float* gatherBatch(int64_t first, int n);
  void optimizerStep(float lr);
  // the weights validate() and keepBest() use: the average with ema, else the current ones
  const std::vector<float>& evaluated() const { return ema_.empty() ? params_ : ema_; }

  const ModelSpec& spec_;
  const DatasetView data_;
  const DatasetView* validation_;
  const TrainOptions& options_;
  const LrPlan lrPlan_;
  const int batch_;
  const int threads_;
  const size_t P_;
  FlushDenormals flush_;  // this thread; the pool's workers flush too
  ThreadPool pool_;
  Network net_;
  std::vector<float> params_, grads_;
  std::vector<float> lastFinite_;  // weights whose loss was finite, for divergence
  std::vector<float> state_;       // the optimizer's
  std::vector<float> best_;        // early stopping's best epoch (keepBest)
  std::vector<float> ema_;         // the weight average (options.ema > 0), else empty
  std::vector<float> augmented_;   // the augmented batch (options.augment), else empty
  std::vector<float> batchFeatures_;
  std::vector<int32_t> batchLabels_;
  std::vector<float> batchTargets_;  // regression (batch, K)
  LossTargets targets_;              // the batch's, for the loss
  const int K_;                      // the head's width
  std::vector<uint8_t> decayMask_;   // weight decay: which parameters decay (empty: no decay)
  const std::vector<uint32_t>* order_ = nullptr;
  double baseLr_ = 0;
  RunTotals totals_;
  bool pending_ = false;
};

CpuSession::CpuSession(const SessionSetup& setup, int threads)
    : spec_(setup.spec),
      data_(setup.data),
      validation_(setup.validation),
      options_(setup.options),
      lrPlan_(setup.lrPlan),
      batch_(setup.batch),
      threads_(threads),
      P_(setup.plan.parameterCount),
      pool_(threads),
      net_(setup.spec, setup.batch, pool_),
      batchFeatures_(size_t(setup.batch) * size_t(setup.data.featureSize)),
      batchLabels_(size_t(setup.batch)),
      batchTargets_(setup.plan.regression() ? size_t(setup.batch) * size_t(setup.plan.outputWidth) : 0),
      K_(int(setup.plan.outputWidth)) {
  if (setup.spec.optimizer.weightDecay > 0) decayMask_ = weightDecayMask(setup.spec);
  if (setup.options.augment.enabled()) augmented_.resize(batchFeatures_.size());
  if (!options_.classWeights.empty()) targets_.classWeights = options_.classWeights.data();
}

void CpuSession::start(StartState state) {
  params_ = std::move(state.parameters);
  grads_.assign(P_, 0.0f);
  lastFinite_ = params_;
  state_ = state.optimizerState.empty() ? std::vector<float>(optimizerStateSize(spec_, P_), 0.0f)
                                        : std::move(state.optimizerState);
  best_ = std::move(state.bestParameters);
  if (options_.ema > 0) ema_ = state.emaParameters.empty() ? params_ : std::move(state.emaParameters);
  totals_ = RunTotals{};
  totals_.globalStep = state.globalStep;
  baseLr_ = state.baseLearningRate;
}

void CpuSession::beginEpoch(const std::vector<uint32_t>& order) {
  order_ = &order;
  const int64_t globalStep = totals_.globalStep;
  totals_ = RunTotals{};
  totals_.globalStep = globalStep;
}

const float* CpuSession::gatherBatch(int64_t first, int n) {
  const int64_t featureSize = data_.featureSize;
  const bool regression = !batchTargets_.empty();
  targets_.labels = regression ? nullptr : batchLabels_.data();
  targets_.targets = regression ? batchTargets_.data() : nullptr;
  if (!options_.shuffle) {
    // already contiguous
    if (regression) targets_.targets = data_.targets + first * K_;
    else targets_.labels = data_.labels + first;
    return data_.features + first * featureSize;
  }
  for (int i = 0; i < n; ++i) {
    const uint32_t row = (*order_)[size_t(first + i)];
    std::memcpy(batchFeatures_.data() + int64_t(i) * featureSize, data_.features + int64_t(row) * featureSize,
                sizeof(float) * size_t(featureSize));
    if (regression)
      std::memcpy(batchTargets_.data() + int64_t(i) * K_, data_.targets + int64_t(row) * K_, sizeof(float) * size_t(K_));
    else
      batchLabels_[size_t(i)] = data_.labels[row];
  }
  return batchFeatures_.data();
}

int64_t CpuSession::runSteps(int64_t maxSteps) {
  if (totals_.diverged || maxSteps <= 0) return 0;
  const int64_t first = totals_.epochStep * batch_;
  const int n = int(std::min<int64_t>(batch_, data_.count - first));
  const float* x = gatherBatch(first, n);
  if (!augmented_.empty()) {
    const std::vector<int>& in = spec_.input;  // [C, H, W]: the driver checked
    augment_batch(&pool_, augmented_.data(), x, n, in[0], in[1], in[2], options_.augment, options_.seed,
                  totals_.globalStep);
    x = augmented_.data();
  }
  // ---- forward, loss ----
  // (batchnorm's running statistics live in params_ and move with this forward pass)
  net_.forward(params_.data(), x, n, true, mixSeed(options_.seed, uint64_t(totals_.globalStep), 0xD0), params_.data());
  LossCounts counts;
  const double loss = net_.loss(targets_, n, true, &counts);
  if (!std::isfinite(loss)) {
    totals_.diverged = true;
    totals_.divergedNaN = std::isnan(loss);
    totals_.divergedAt = totals_.globalStep + 1;
    return 0;
  }
  std::memcpy(lastFinite_.data(), params_.data(), sizeof(float) * P_);
  // ---- backward, update ----
  net_.backward(params_.data(), grads_.data(), n);
  const float lr = stepLearningRate(lrPlan_, baseLr_, totals_.globalStep);
  ++totals_.globalStep;
  optimizerStep(lr);
  if (!ema_.empty()) ema_update(&pool_, ema_.data(), params_.data(), P_, float(options_.ema));
  // ---- totals ----
  ++totals_.epochStep;
  // the batch's share rounded before the sum: a fused multiply-add (which the compiler may or may not
  // form) would round once and change the epoch's loss in its last bit
  const volatile double batchShare = loss * n;
  totals_.sampleLossSum += batchShare;
  totals_.correct += counts.correct;
  totals_.squaredErrorSum += counts.squaredError;
  totals_.samples += n;
  totals_.batchLossSum += loss;
  ++totals_.lossSteps;
  return 1;
}

void CpuSession::optimizerStep(float lr) {
  const OptimizerSpec& opt = spec_.optimizer;
  const WeightDecay decay{decayMask_.empty() ? 0.0f : opt.weightDecay, decayMask_.data(), opt.decoupled()};
  if (opt.kind == OptimizerKind::SGD)
    sgd_step(&pool_, params_.data(), grads_.data(), state_.data(), P_, lr, opt.momentum, decay, opt.nesterov);
  else
    adam_step(&pool_, params_.data(), grads_.data(), state_.data(), state_.data() + P_, P_, lr, opt.beta1, opt.beta2,
              opt.eps, totals_.globalStep, decay);
}

bool CpuSession::takeTotals(RunTotals& totals) {
  if (!pending_) return false;
  pending_ = false;
  totals = totals_;
  return true;
}

ValidationTotals CpuSession::validate() {
  ValidationTotals v;
  const DatasetView& val = *validation_;
  const bool regression = !batchTargets_.empty();  // the driver checked the validation targets
  if (regression) v.outputs.resize(size_t(val.count) * size_t(K_));
  for (int64_t s = 0; s < val.count; s += batch_) {
    const int n = int(std::min<int64_t>(batch_, val.count - s));
    const float* out = net_.forward(evaluated().data(), val.features + s * val.featureSize, n, false, 0);
    LossTargets batch;
    batch.classWeights = targets_.classWeights;
    if (regression) batch.targets = val.targets + s * K_;
    else batch.labels = val.labels + s;
    LossCounts counts;
    // the batch's weighted loss sum: its mean times its weights' sum (n without class weights)
    v.lossSum += net_.loss(batch, n, false, &counts) * counts.weightSum;
    v.weightSum += counts.weightSum;
    v.correct += counts.correct;
    if (regression) std::memcpy(v.outputs.data() + s * K_, out, sizeof(float) * size_t(n) * size_t(K_));
  }
  return v;
}

std::vector<float> CpuSession::weights(WeightsKind which) {
  switch (which) {
    case WeightsKind::Best: return best_;
    case WeightsKind::LastFinite: return lastFinite_;
    case WeightsKind::Average: return evaluated();
    case WeightsKind::Current: break;
  }
  return params_;
}

}  // namespace

std::unique_ptr<TrainingSession> CpuBackend::openSession(const SessionSetup& setup) {
  return std::make_unique<CpuSession>(setup, setup.options.threads > 0 ? setup.options.threads : threads_);
}

}  // namespace nnstudio::cpu
