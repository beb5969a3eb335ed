// Data-parallel training over the GPUs of one host (issue 17; docs/ARCHITECTURE.md "Several GPUs"): one
// thread per GPU, as NCCL asks of captured collectives, each owning one rank's session (rank_session.h).
// The driver's calls go to every rank at once and wait for all; the steps advance in lockstep windows so
// that no rank waits on a step whose all-reduce another rank has not queued. Validation, checkpoints and
// the result are rank 0's (the weights are the same on every rank; batchnorm's running statistics are each
// rank's own, and rank 0's are kept). A rank that fails leaves the others waiting in a collective that never
// completes: the first failure aborts every communicator, which ends that wait, and the run reports it.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
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
  ValidationTotals validate() override { return onRank<ValidationTotals>(0, [&] { return sessions_[0]->validate(); }); }
  void keepBest() override {
    onRank<int>(0, [&] {
      sessions_[0]->keepBest();
      return 0;
    });
  }
  // After divergence, the last finite weights are those of the rank that saw the non-finite loss first:
  // the others took that step with its averaged gradients before they saw it themselves.
  std::vector<float> weights(WeightsKind which) override {
    const int r = which == WeightsKind::LastFinite ? firstDivergedRank() : 0;
    return onRank<std::vector<float>>(r, [&] { return sessions_[size_t(r)]->weights(which); });
  }
  std::vector<float> optimizerState() override {
    return onRank<std::vector<float>>(0, [&] { return sessions_[0]->optimizerState(); });
  }

 private:
  // Runs call(rank) on every rank's thread at once and waits for all; at the first failure, aborts every
  // communicator (the other ranks may be waiting for the failed one), then rethrows it.
  void forEach(const std::function<void(int)>& call);
  template <class Result>
  Result onRank(int r, const std::function<Result()>& call) {
    Result result{};
    workers_[size_t(r)]->post([&] { result = call(); }).get();
    return result;
  }
  int firstDivergedRank() const;
  void abortAll();
  void release();  // the sessions freed on their own threads, the workers joined, the communicators ended

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
  bool aborted_ = false;                       // the communicators are ended (abortAll), not to be destroyed
};

void DataParallelSession::forEach(const std::function<void(int)>& call) {
  std::vector<std::future<void>> done;
  for (int r = 0; r < ranks_; ++r) done.push_back(workers_[size_t(r)]->post([&call, r] { call(r); }));
  std::exception_ptr first;
  std::vector<bool> finished(done.size(), false);
  for (size_t left = done.size(); left > 0;) {
    for (size_t r = 0; r < done.size(); ++r) {
      if (finished[r] || done[r].wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) continue;
      finished[r] = true;
      --left;
      try {
        done[r].get();
      } catch (...) {
        if (!first) {
          first = std::current_exception();
          abortAll();  // the ranks still waiting on this one's collectives return (with errors of their own)
        }
      }
    }
  }
  if (first) std::rethrow_exception(first);
}

void DataParallelSession::abortAll() {
  if (aborted_) return;
  aborted_ = true;
  for (NcclComm comm : comms_)
    if (comm) nccl_.commAbort(comm);
}

int DataParallelSession::firstDivergedRank() const {
  int first = 0;
  int64_t at = LLONG_MAX;
  for (int r = 0; r < ranks_; ++r)
    if (totals_[size_t(r)].diverged && totals_[size_t(r)].divergedAt < at) first = r, at = totals_[size_t(r)].divergedAt;
  return first;
}

DataParallelSession::DataParallelSession(const SessionSetup& setup, const std::vector<int>& devices,
                                         const NcclLibrary& nccl)
    : batch_(setup.batch), ranks_(int(devices.size())), nccl_(nccl), comms_(devices.size(), nullptr),
      orders_(devices.size()), totals_(devices.size()) {
  // every connection made at start-up, none at a captured collective's first launch (NCCL >= 2.22 connects
  // lazily by default); a user's own setting stands
  setenv("NCCL_RUNTIME_CONNECT", "0", 0);
  const NcclResult made = nccl_.commInitAll(comms_.data(), ranks_, devices.data());
  if (made != kNcclSuccess)
    throw EngineError(std::string("starting NCCL on ") + std::to_string(ranks_) + " GPUs: " + nccl_.getErrorString(made));
  try {
    for (int device : devices) workers_.push_back(std::make_unique<GpuWorker>(device));
    sessions_.resize(devices.size());
    std::vector<std::string> names(devices.size());
    // every GPU's memory checked before any allocates: a rank that fails while the others capture their
    // all-reduce would leave them waiting
    forEach([&](int r) {
      names[size_t(r)] = gpuName(devices[size_t(r)]);
      checkRankFits(setup, names[size_t(r)]);
    });
    // every rank at once: each captures its steps, whose all-reduce is a collective
    forEach([&](int r) {
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
  } catch (...) {
    release();  // no destructor runs for a constructor that throws
    throw;
  }
}

DataParallelSession::~DataParallelSession() { release(); }

void DataParallelSession::release() {
  // each rank's session is freed on its own thread (its GPU current), then the communicators
  if (workers_.size() == size_t(ranks_) && sessions_.size() == size_t(ranks_)) {
    try {
      forEach([&](int r) { sessions_[size_t(r)].reset(); });
    } catch (...) {
    }
  }
  workers_.clear();
  if (!aborted_)
    for (NcclComm comm : comms_)
      if (comm) nccl_.commDestroy(comm);
  comms_.assign(comms_.size(), nullptr);
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
