// Data-parallel training over the GPUs of one host (issue 17; docs/ARCHITECTURE.md "Several GPUs"): one
// thread per GPU, as NCCL asks of captured collectives, each owning one rank's session (rank_session.h).
// The driver's calls go to every rank at once and wait for all; the steps advance in lockstep windows so
// that no rank waits on a step whose all-reduce another rank has not queued. Validation, checkpoints and
// the result are rank 0's (the weights are the same on every rank; batchnorm's running statistics are each
// rank's own, and rank 0's are kept).
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "cuda/backend.h"
#include "cuda/check.h"
#include "cuda/rank_session.h"
#include "train/partition.h"

namespace nnstudio::cuda {

namespace {

// The steps every rank queues before the next round: one queue window (session.cu's kWindowSteps).
constexpr int64_t kLockstepSteps = 32;

// A thread bound to one GPU that runs the calls posted to it, in order, with that GPU current.
class GpuWorker {
 public:
  explicit GpuWorker(int device) : device_(device), thread_([this] { loop(); }) {}
  GpuWorker(const GpuWorker&) = delete;
  GpuWorker& operator=(const GpuWorker&) = delete;
  ~GpuWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  std::future<void> post(std::function<void()> call) {
    std::packaged_task<void()> task([device = device_, call = std::move(call)] {
      check(cudaSetDevice(device), "selecting a GPU for data-parallel training");
      call();
    });
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    return done;
  }

 private:
  void loop() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();  // an exception goes to the poster's future
    }
  }

  const int device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

// The rank's totals summed into the run's: the counters of rank 0, the sums over every rank.
RunTotals combine(const std::vector<RunTotals>& ranks) {
  RunTotals t = ranks.front();
  t.sampleLossSum = t.correct = t.samples = 0;
  t.squaredErrorSum = t.batchLossSum = 0;
  for (const RunTotals& r : ranks) {
    t.sampleLossSum += r.sampleLossSum;
    t.correct += r.correct;
    t.samples += r.samples;
    t.squaredErrorSum += r.squaredErrorSum;
    t.batchLossSum += r.batchLossSum / double(ranks.size());  // a global step's loss: the ranks' mean
    if (r.diverged && (!t.diverged || r.divergedAt < t.divergedAt)) {
      t.diverged = true;
      t.divergedNaN = r.divergedNaN;
      t.divergedAt = r.divergedAt;
    }
  }
  return t;
}

class DataParallelSession final : public TrainingSession {
 public:
  DataParallelSession(const SessionSetup& setup, const std::vector<int>& devices, const NcclLibrary& nccl);
  ~DataParallelSession() override;

  std::string deviceName() const override { return name_; }
  void start(StartState state) override {
    forEach([&](int r) { sessions_[size_t(r)]->start(state); });
  }
  void beginEpoch(const std::vector<uint32_t>& order) override;
  int64_t runSteps(int64_t maxSteps) override;
  void requestTotals() override {
    forEach([&](int r) { sessions_[size_t(r)]->requestTotals(); });
    taken_.assign(sessions_.size(), 0);
  }
  bool totalsPending() const override { return !taken_.empty(); }
  bool takeTotals(RunTotals& totals) override;
  RunTotals totals() override {
    forEach([&](int r) { totals_[size_t(r)] = sessions_[size_t(r)]->totals(); });
    taken_.clear();
    return combine(totals_);
  }
  void synchronize() override {
    forEach([&](int r) { sessions_[size_t(r)]->synchronize(); });
  }
  void setBaseLearningRate(double lr) override {
    forEach([&](int r) { sessions_[size_t(r)]->setBaseLearningRate(lr); });
  }
  ValidationTotals validate() override { return onRankZero<ValidationTotals>([&] { return sessions_[0]->validate(); }); }
  void keepBest() override {
    onRankZero<int>([&] {
      sessions_[0]->keepBest();
      return 0;
    });
  }
  std::vector<float> weights(WeightsKind which) override {
    return onRankZero<std::vector<float>>([&] { return sessions_[0]->weights(which); });
  }
  std::vector<float> optimizerState() override {
    return onRankZero<std::vector<float>>([&] { return sessions_[0]->optimizerState(); });
  }

 private:
  // Runs call(rank) on every rank's thread at once and waits for all; rethrows the first failure.
  void forEach(const std::function<void(int)>& call);
  template <class Result>
  Result onRankZero(const std::function<Result()>& call) {
    Result result{};
    workers_.front()->post([&] { result = call(); }).get();
    return result;
  }

  const int batch_;
  const int ranks_;
  const NcclLibrary& nccl_;
  std::string name_;
  std::vector<NcclComm> comms_;
  std::vector<std::unique_ptr<GpuWorker>> workers_;
  std::vector<std::unique_ptr<TrainingSession>> sessions_;
  std::vector<std::vector<uint32_t>> orders_;  // this epoch's shares: each valid until its totals are read
  std::vector<RunTotals> totals_;
  std::vector<uint8_t> taken_;                 // requestTotals' answers in hand, per rank (empty: none asked)
};

void DataParallelSession::forEach(const std::function<void(int)>& call) {
  std::vector<std::future<void>> done;
  for (int r = 0; r < ranks_; ++r) done.push_back(workers_[size_t(r)]->post([&call, r] { call(r); }));
  std::exception_ptr first;
  for (std::future<void>& d : done) {
    try {
      d.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

DataParallelSession::DataParallelSession(const SessionSetup& setup, const std::vector<int>& devices,
                                         const NcclLibrary& nccl)
    : batch_(setup.batch), ranks_(int(devices.size())), nccl_(nccl), comms_(devices.size(), nullptr),
      orders_(devices.size()), totals_(devices.size()) {
  const NcclResult made = nccl_.commInitAll(comms_.data(), ranks_, devices.data());
  if (made != kNcclSuccess)
    throw EngineError(std::string("starting NCCL on ") + std::to_string(ranks_) + " GPUs: " + nccl_.getErrorString(made));
  for (int device : devices) workers_.push_back(std::make_unique<GpuWorker>(device));
  sessions_.resize(devices.size());
  std::vector<std::string> names(devices.size());
  // every rank at once: each captures its steps, whose all-reduce is a collective
  forEach([&](int r) {
    names[size_t(r)] = gpuName(devices[size_t(r)]);
    RankSetup rank;
    rank.rank = r;
    rank.ranks = ranks_;
    rank.epochSamples = rankSamples(setup.data.count, setup.batch, ranks_, r);
    rank.nccl = &nccl_;
    rank.comm = comms_[size_t(r)];
    sessions_[size_t(r)] = openRankSession(setup, names[size_t(r)], rank);
  });
  const bool same = std::all_of(names.begin(), names.end(), [&](const std::string& n) { return n == names.front(); });
  name_ = std::to_string(ranks_) + " x " + (same ? names.front() : names.front() + " and others");
}

DataParallelSession::~DataParallelSession() {
  // each rank's session is freed on its own thread (its GPU current), then the communicators
  try {
    forEach([&](int r) { sessions_[size_t(r)].reset(); });
  } catch (...) {
  }
  workers_.clear();
  for (NcclComm comm : comms_)
    if (comm) nccl_.commDestroy(comm);
}

void DataParallelSession::beginEpoch(const std::vector<uint32_t>& order) {
  for (int r = 0; r < ranks_; ++r) orders_[size_t(r)] = rankOrder(order, batch_, ranks_, r);
  forEach([&](int r) { sessions_[size_t(r)]->beginEpoch(orders_[size_t(r)]); });
}

// Every rank queues the same number of steps (its own graphs: group, single or tail), one window at most.
// A CUDA session never halts (a diverged run skips its updates on the device and keeps the collectives
// going), so 0 from a rank is a broken promise: said, rather than looping on it or leaving the other ranks
// waiting in an all-reduce.
int64_t DataParallelSession::runSteps(int64_t maxSteps) {
  const int64_t steps = std::min(maxSteps, kLockstepSteps);
  forEach([&](int r) {
    for (int64_t queued = 0; queued < steps;) {
      const int64_t ran = sessions_[size_t(r)]->runSteps(steps - queued);
      if (ran <= 0) throw EngineError("data-parallel training: GPU rank " + std::to_string(r) + " stopped queueing steps");
      queued += ran;
    }
  });
  return steps;
}

bool DataParallelSession::takeTotals(RunTotals& totals) {
  if (taken_.empty()) return false;
  forEach([&](int r) {
    if (!taken_[size_t(r)]) taken_[size_t(r)] = sessions_[size_t(r)]->takeTotals(totals_[size_t(r)]) ? 1 : 0;
  });
  if (!std::all_of(taken_.begin(), taken_.end(), [](uint8_t t) { return t != 0; })) return false;
  taken_.clear();
  totals = combine(totals_);
  return true;
}

}  // namespace

std::unique_ptr<TrainingSession> openDataParallelSession(const SessionSetup& setup, const std::vector<int>& devices,
                                                         const NcclLibrary& nccl) {
  return std::make_unique<DataParallelSession>(setup, devices, nccl);
}

}  // namespace nnstudio::cuda
