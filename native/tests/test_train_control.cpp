// Training control on the CPU backend: exact resume, early stopping, learning-rate changes (the shared
// checks of train_control_checks.h) and the schedules' values at known steps.
#include <cstdio>

#include "nnstudio/engine.h"
#include "test_util.h"
#include "train_control_checks.h"

using namespace nnstudio;

namespace {

void checkScheduleValues() {
  std::printf("schedules\n");
  LrSchedule constant;
  CHECK(scheduledLearningRate(constant, 0.1, 57, 10, 100) == 0.1);

  LrSchedule step;
  step.kind = LrScheduleKind::Step;
  step.everyEpochs = 2;
  step.gamma = 0.5;
  // 10 steps per epoch: epochs 0-1 at 0.1, 2-3 at 0.05, 4-5 at 0.025
  CHECK_NEAR(scheduledLearningRate(step, 0.1, 19, 10, 100), 0.1, 1e-15);
  CHECK_NEAR(scheduledLearningRate(step, 0.1, 20, 10, 100), 0.05, 1e-15);
  CHECK_NEAR(scheduledLearningRate(step, 0.1, 45, 10, 100), 0.025, 1e-15);

  LrSchedule cosine;
  cosine.kind = LrScheduleKind::Cosine;
  cosine.minLr = 0.001;
  CHECK_NEAR(scheduledLearningRate(cosine, 0.1, 0, 10, 100), 0.1, 1e-15);
  CHECK_NEAR(scheduledLearningRate(cosine, 0.1, 50, 10, 100), 0.0505, 1e-15);
  CHECK_NEAR(scheduledLearningRate(cosine, 0.1, 100, 10, 100), 0.001, 1e-15);

  // PyTorch's OneCycleLR(max_lr=0.1, total_steps=100): 0.004 at step 0, the peak at step 29 (0.3 * 100 - 1),
  // 0.004 / 1e4 at step 99; torch 2.11's OneCycleLR(cycle_momentum=False) gives these very values at steps 0,
  // 10, 29, 60 and 99 (checked on the GPU machine): 0.004, 0.029516394846410082, 0.1, 0.05892800902855288, 4e-07
  LrSchedule oneCycle;
  oneCycle.kind = LrScheduleKind::OneCycle;
  oneCycle.maxLr = 0.1;
  CHECK_NEAR(scheduledLearningRate(oneCycle, 0.01, 0, 10, 100), 0.004, 1e-15);
  CHECK_NEAR(scheduledLearningRate(oneCycle, 0.01, 29, 10, 100), 0.1, 1e-15);
  CHECK_NEAR(scheduledLearningRate(oneCycle, 0.01, 99, 10, 100), 4e-7, 1e-18);
  CHECK_NEAR(scheduledLearningRate(oneCycle, 0.01, 10, 10, 100), 0.029516394846410082, 1e-12);
  CHECK_NEAR(scheduledLearningRate(oneCycle, 0.01, 60, 10, 100), 0.05892800902855288, 1e-12);
  CHECK(scheduledLearningRate(oneCycle, 0.01, 28, 10, 100) < 0.1 && scheduledLearningRate(oneCycle, 0.01, 30, 10, 100) < 0.1);
  // maxLr 0: the base learning rate is the peak
  oneCycle.maxLr = 0;
  CHECK_NEAR(scheduledLearningRate(oneCycle, 0.02, 29, 10, 100), 0.02, 1e-15);

  LrSchedule bad;
  bad.kind = LrScheduleKind::OneCycle;
  bad.pctStart = 1.5;
  CHECK_THROWS(scheduledLearningRate(bad, 0.1, 0, 10, 100), EngineError, "pctStart must be between 0 and 1");
  bad.kind = LrScheduleKind::Step;
  bad.everyEpochs = 0;
  CHECK_THROWS(scheduledLearningRate(bad, 0.1, 0, 10, 100), EngineError, "everyEpochs must be at least 1");
}

// A trained run reports each epoch's scheduled rate.
void checkScheduleInRun(Backend& backend) {
  const ModelSpec spec = parseModelSpec(nnstudio_test::controlSpec("{\"kind\":\"sgd\",\"lr\":0.08,\"momentum\":0.9}"));
  const auto train = nnstudio_test::controlBars(500, 51);
  const DatasetView tv = train.view();
  TrainOptions o = nnstudio_test::controlOptions(3);
  o.lrSchedule.kind = LrScheduleKind::Step;
  o.lrSchedule.everyEpochs = 1;
  o.lrSchedule.gamma = 0.5;
  const TrainResult r = backend.train(spec, tv, nullptr, o, nullptr, nullptr);
  CHECK_MSG(r.history.size() == 3 && r.history[0].learningRate == 0.08f && r.history[1].learningRate == 0.04f &&
                r.history[2].learningRate == 0.02f,
            "step decay in a run: epochs at 0.08, 0.04, 0.02");
}

}  // namespace

int main() {
  try {
    checkScheduleValues();
    auto backend = createBackend(DeviceKind::CPU, 2);
    checkScheduleInRun(*backend);
    nnstudio_test::checkTrainControl(*backend, /*exactSteps=*/true);
  } catch (const std::exception& e) {
    std::printf("  FAIL  unexpected exception: %s\n", e.what());
    ++nnstudio_test::failed();
  }
  return nnstudio_test::summary();
}
