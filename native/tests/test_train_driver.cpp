// The training driver (train/driver.cpp) through a session that behaves like the GPU's, on any machine:
// QueuedSession wraps the CPU session, runs up to 8 steps per runSteps call, hands requested totals over
// only at the next poll, and after a divergence goes on "launching" steps that do nothing (its totals show
// the divergence), as cuda/session.cu does. So the driver's device path (late totals, divergence seen in
// the totals, a cancel landing within queued steps) is checked where no GPU is: the run gives the CPU's
// bits, divergence and cancel the CPU's messages and weights, and the training-control checks (exact
// resume, early stopping, learning-rate changes, resume errors) pass through it.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cpu/backend.h"
#include "nnstudio/engine.h"
#include "test_util.h"
#include "train/session.h"
#include "train_control_checks.h"

using namespace nnstudio;
using nnstudio_test::CheckpointRecorder;
using nnstudio_test::controlBars;
using nnstudio_test::controlOptions;
using nnstudio_test::controlSpec;
using nnstudio_test::sameBits;
using nnstudio_test::sameHistory;

namespace {

constexpr int64_t kGroup = 8;  // steps per runSteps call, as the GPU's 8-step graphs

class QueuedSession final : public TrainingSession {
 public:
  explicit QueuedSession(std::unique_ptr<TrainingSession> cpu) : cpu_(std::move(cpu)) {}
  std::string deviceName() const override { return "queued " + cpu_->deviceName(); }
  void start(StartState state) override { cpu_->start(std::move(state)); }
  void beginEpoch(const std::vector<uint32_t>& order) override { cpu_->beginEpoch(order); }
  int64_t runSteps(int64_t maxSteps) override {
    const int64_t steps = std::min(maxSteps, kGroup);
    for (int64_t i = 0; i < steps; ++i)
      if (cpu_->runSteps(1) == 0) break;  // diverged: the queued steps skip their updates
    ++pollsSinceRequest_;
    return steps;
  }
  void requestTotals() override {
    requested_ = cpu_->totals();
    pending_ = true;
    pollsSinceRequest_ = 0;
  }
  bool totalsPending() const override { return pending_; }
  bool takeTotals(RunTotals& totals) override {
    if (!pending_ || pollsSinceRequest_ == 0) return false;  // not arrived yet
    pending_ = false;
    totals = requested_;
    return true;
  }
  RunTotals totals() override {
    pending_ = false;
    return cpu_->totals();
  }
  void synchronize() override { cpu_->synchronize(); }
  void setBaseLearningRate(double lr) override { cpu_->setBaseLearningRate(lr); }
  ValidationTotals validate() override { return cpu_->validate(); }
  void keepBest() override { cpu_->keepBest(); }
  std::vector<float> weights(WeightsKind which) override { return cpu_->weights(which); }
  std::vector<float> optimizerState() override { return cpu_->optimizerState(); }

 private:
  std::unique_ptr<TrainingSession> cpu_;
  RunTotals requested_;
  bool pending_ = false;
  int pollsSinceRequest_ = 0;
};

class QueuedBackend final : public Backend {
 public:
  DeviceInfo device() const override { return cpu_.device(); }
  EvalResult evaluate(const ModelSpec& spec, const std::vector<float>& parameters, const DatasetView& data,
                      int batchSize) override {
    return cpu_.evaluate(spec, parameters, data, batchSize);
  }
  std::unique_ptr<TrainingSession> openSession(const SessionSetup& setup) override {
    return std::make_unique<QueuedSession>(cpu_.openSession(setup));
  }

 private:
  cpu::CpuBackend cpu_{2};
};

// 500 samples in batches of 24: groups of 8, 8, then 4 single steps and the tail of 20
void checkSameRun(Backend& cpu, Backend& queued) {
  std::printf("a queued run equals the CPU's\n");
  const ModelSpec spec = parseModelSpec(controlSpec("{\"kind\":\"adam\",\"lr\":0.005}"));
  const auto train = controlBars(500, 61), val = controlBars(120, 62);
  const DatasetView tv = train.view(), vv = val.view();
  const TrainResult a = cpu.train(spec, tv, &vv, controlOptions(3), nullptr, nullptr);
  CheckpointRecorder rec;
  const TrainResult b = queued.train(spec, tv, &vv, controlOptions(3), &rec, nullptr);
  CHECK_MSG(b.status == TrainStatus::Completed && b.steps == a.steps && sameBits(b.parameters, a.parameters) &&
                sameHistory(b.history, a.history),
            "same weights, history and steps (" + std::to_string(b.steps) + ")");
  CHECK_MSG(b.device == "queued cpu (2 threads)", "the session names the device: " + b.device);
  bool ordered = !rec.steps.empty(), epochEnds = true;
  for (size_t i = 1; i < rec.steps.size(); ++i) ordered = ordered && rec.steps[i].globalStep > rec.steps[i - 1].globalStep;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    bool seen = false;
    for (const StepProgress& s : rec.steps) seen = seen || (s.epoch == epoch && s.step == 21 && s.globalStep == 21 * epoch);
    epochEnds = epochEnds && seen;
  }
  CHECK_MSG(ordered && epochEnds && rec.steps.size() < size_t(b.steps),
            "late totals: " + std::to_string(rec.steps.size()) + " step events in order for " + std::to_string(b.steps) +
                " steps, one at each epoch's last step");
  CHECK_MSG(rec.states.size() == 3 && sameBits(rec.states[2].parameters, a.parameters), "checkpoints at each epoch");
}

// The loss explodes: the queued session keeps launching, the driver sees the flag in the totals.
void checkDivergence(Backend& cpu, Backend& queued) {
  std::printf("divergence seen in late totals\n");
  const ModelSpec wild = parseModelSpec(
      "{\"input\":[1,8,8],\"layers\":[{\"kind\":\"flatten\"},{\"kind\":\"dense\",\"units\":16,\"activation\":\"relu\"},"
      "{\"kind\":\"dense\",\"units\":2}],\"loss\":\"mse\",\"optimizer\":{\"kind\":\"sgd\",\"lr\":1000},\"seed\":1}");
  const auto train = controlBars(500, 63);
  const DatasetView tv = train.view();
  const TrainResult a = cpu.train(wild, tv, nullptr, controlOptions(3), nullptr, nullptr);
  CheckpointRecorder rec;
  const TrainResult b = queued.train(wild, tv, nullptr, controlOptions(3), &rec, nullptr);
  CHECK_MSG(a.status == TrainStatus::Diverged && b.status == TrainStatus::Diverged && b.message == a.message &&
                b.steps == a.steps && sameBits(b.parameters, a.parameters),
            "the CPU's message, step count and last finite weights: " + b.message);
}

// A cancel asked for at an event stops within the queued steps, with the weights of the last one done.
void checkCancel(Backend& cpu, Backend& queued) {
  std::printf("cancel within queued steps\n");
  const ModelSpec spec = parseModelSpec(controlSpec("{\"kind\":\"sgd\",\"lr\":0.05,\"momentum\":0.9}"));
  const auto train = controlBars(500, 64);
  const DatasetView tv = train.view();
  TrainControl control;
  CheckpointRecorder rec;
  rec.onEachStep = [&](const StepProgress& s) {
    if (s.globalStep >= 5) control.cancel = true;
  };
  const TrainResult b = queued.train(spec, tv, nullptr, controlOptions(3), &rec, &control);
  CHECK_MSG(b.status == TrainStatus::Cancelled && b.steps >= 5 && b.steps < 21 &&
                b.message == "training cancelled at epoch 1, step " + std::to_string(b.steps + 1) +
                                 " of 21; kept the weights of the last completed step",
            "stops after " + std::to_string(b.steps) + " steps: " + b.message);
  TrainControl exact;
  CheckpointRecorder at;
  at.onEachStep = [&](const StepProgress& s) {
    if (s.globalStep == b.steps) exact.cancel = true;
  };
  const TrainResult a = cpu.train(spec, tv, nullptr, controlOptions(3), &at, &exact);
  CHECK_MSG(a.steps == b.steps && sameBits(b.parameters, a.parameters),
            "the weights of a CPU run cancelled after the same step");
}

}  // namespace

// Several GPUs asked of a backend that trains alone: the same run on one device, and a note that says why.
void checkGpusOnOneDevice(Backend& cpu) {
  std::printf("several GPUs asked of the CPU\n");
  const ModelSpec spec = parseModelSpec(controlSpec("{\"kind\":\"adam\",\"lr\":0.005}"));
  const auto train = controlBars(300, 63);
  const DatasetView tv = train.view();
  TrainOptions many = controlOptions(2);
  many.gpus = {0, 1};
  const TrainResult a = cpu.train(spec, tv, nullptr, controlOptions(2), nullptr, nullptr);
  const TrainResult b = cpu.train(spec, tv, nullptr, many, nullptr, nullptr);
  CHECK_MSG(sameBits(a.parameters, b.parameters) && a.steps == b.steps, "the one-device run, bit for bit");
  CHECK_MSG(a.notes.empty() && b.notes.size() == 1 && b.notes[0].find("several GPUs need the CUDA backend") != std::string::npos,
            "a note says why: " + (b.notes.empty() ? std::string("(none)") : b.notes[0]));
}

int main() {
  try {
    auto cpu = createBackend(DeviceKind::CPU, 2);
    QueuedBackend queued;
    checkGpusOnOneDevice(*cpu);
    checkSameRun(*cpu, queued);
    checkDivergence(*cpu, queued);
    checkCancel(*cpu, queued);
    nnstudio_test::checkTrainControl(queued, /*exactSteps=*/false);
  } catch (const std::exception& e) {
    std::printf("  FAIL  unexpected exception: %s\n", e.what());
    ++nnstudio_test::failed();
  }
  return nnstudio_test::summary();
}
