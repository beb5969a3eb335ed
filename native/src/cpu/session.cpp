// The CPU's training session (train/session.h): one step at a time, synchronously. A step gathers its
// batch from the epoch's order (or points into the data when it is not shuffled), runs forward and the
// loss; a non-finite loss flags divergence and the session runs no more steps (the GPU's rule); else it
// keeps the weights as the last finite ones, runs backward and the optimizer at the scheduled learning
// rate. Totals are always current, so a requested read is ready at once.
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
  void keepBest() override { best_ = params_; }
  std::vector<float> weights(WeightsKind which) override;
  std::vector<float> optimizerState() override { return state_; }

 private:
  const float* gatherBatch(int64_t first, int n);  // the batch's features (n, featureSize); labels in batchLabels_

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
  std::vector<float> batchFeatures_;
  std::vector<int32_t> batchLabels_;
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
      batchLabels_(size_t(setup.batch)) {}

void CpuSession::start(StartState state) {
  params_ = std::move(state.parameters);
  grads_.assign(P_, 0.0f);
  lastFinite_ = params_;
  state_ = state.optimizerState.empty() ? std::vector<float>(optimizerStateSize(spec_, P_), 0.0f)
                                        : std::move(state.optimizerState);
  best_ = std::move(state.bestParameters);
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
  if (!options_.shuffle) {
    std::memcpy(batchLabels_.data(), data_.labels + first, sizeof(int32_t) * size_t(n));
    return data_.features + first * featureSize;  // already contiguous
  }
  for (int i = 0; i < n; ++i) {
    const uint32_t row = (*order_)[size_t(first + i)];
    std::memcpy(batchFeatures_.data() + int64_t(i) * featureSize, data_.features + int64_t(row) * featureSize,
                sizeof(float) * size_t(featureSize));
    batchLabels_[size_t(i)] = data_.labels[row];
  }
  return batchFeatures_.data();
}

int64_t CpuSession::runSteps(int64_t maxSteps) {
  if (totals_.diverged || maxSteps <= 0) return 0;
  const int64_t first = totals_.epochStep * batch_;
  const int n = int(std::min<int64_t>(batch_, data_.count - first));
  const float* x = gatherBatch(first, n);
  // ---- forward, loss ----
  net_.forward(params_.data(), x, n, true, mixSeed(options_.seed, uint64_t(totals_.globalStep), 0xD0));
  int64_t right = 0;
  const double loss = net_.loss(batchLabels_.data(), n, true, &right);
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
  const OptimizerSpec& opt = spec_.optimizer;
  if (opt.kind == OptimizerKind::Adam)
    adam_step(&pool_, params_.data(), grads_.data(), state_.data(), state_.data() + P_, P_, lr, opt.beta1, opt.beta2,
              opt.eps, totals_.globalStep);
  else
    sgd_step(&pool_, params_.data(), grads_.data(), state_.data(), P_, lr, opt.momentum);
  // ---- totals ----
  ++totals_.epochStep;
  // the batch's share rounded before the sum: a fused multiply-add (which the compiler may or may not
  // form) would round once and change the epoch's loss in its last bit
  const volatile double batchShare = loss * n;
  totals_.sampleLossSum += batchShare;
  totals_.correct += right;
  totals_.samples += n;
  totals_.batchLossSum += loss;
  ++totals_.lossSteps;
  return 1;
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
  for (int64_t s = 0; s < val.count; s += batch_) {
    const int n = int(std::min<int64_t>(batch_, val.count - s));
    net_.forward(params_.data(), val.features + s * val.featureSize, n, false, 0);
    v.lossSum += net_.loss(val.labels + s, n, false, &v.correct) * n;
  }
  return v;
}

std::vector<float> CpuSession::weights(WeightsKind which) {
  switch (which) {
    case WeightsKind::Best: return best_;
    case WeightsKind::LastFinite: return lastFinite_;
    case WeightsKind::Current: break;
  }
  return params_;
}

}  // namespace

std::unique_ptr<TrainingSession> CpuBackend::openSession(const SessionSetup& setup) {
  return std::make_unique<CpuSession>(setup, setup.options.threads > 0 ? setup.options.threads : threads_);
}

}  // namespace nnstudio::cpu
