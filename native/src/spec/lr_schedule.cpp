// Validation of a schedule and its resolution for one run (see lr_schedule.h).
#include "spec/lr_schedule.h"

#include <string>

namespace nnstudio {

namespace {
void require(bool ok, const std::string& message) {
  if (!ok) throw EngineError("learning-rate schedule: " + message);
}
bool positive(double x) { return std::isfinite(x) && x > 0; }
}  // namespace

LrPlan makeLrPlan(const LrSchedule& schedule, double initialLr, int64_t stepsPerEpoch, int64_t totalSteps) {
  require(positive(initialLr), "the learning rate must be positive");
  LrPlan plan;
  plan.kind = int(schedule.kind);
  plan.initialLr = initialLr;
  plan.stepsPerEpoch = stepsPerEpoch > 0 ? stepsPerEpoch : 1;
  plan.totalSteps = totalSteps > 0 ? totalSteps : 1;
  switch (schedule.kind) {
    case LrScheduleKind::Constant:
      break;
    case LrScheduleKind::Step:
      require(schedule.everyEpochs >= 1, "step: everyEpochs must be at least 1, got " + std::to_string(schedule.everyEpochs));
      require(positive(schedule.gamma), "step: gamma must be positive");
      plan.everyEpochs = schedule.everyEpochs;
      plan.gamma = schedule.gamma;
      break;
    case LrScheduleKind::Cosine:
      require(std::isfinite(schedule.minLr) && schedule.minLr >= 0, "cosine: minLr must be >= 0");
      plan.minRatio = schedule.minLr / initialLr;
      break;
    case LrScheduleKind::OneCycle:
      require(std::isfinite(schedule.maxLr) && schedule.maxLr >= 0, "onecycle: maxLr must be >= 0 (0: the base learning rate)");
      require(schedule.pctStart > 0 && schedule.pctStart < 1, "onecycle: pctStart must be between 0 and 1");
      require(positive(schedule.divFactor), "onecycle: divFactor must be positive");
      require(positive(schedule.finalDivFactor), "onecycle: finalDivFactor must be positive");
      plan.peakRatio = schedule.maxLr > 0 ? schedule.maxLr / initialLr : 1.0;
      plan.pctStart = schedule.pctStart;
      plan.divFactor = schedule.divFactor;
      plan.finalDivFactor = schedule.finalDivFactor;
      break;
  }
  return plan;
}

double scheduledLearningRate(const LrSchedule& schedule, double baseLr, int64_t t, int64_t stepsPerEpoch,
                             int64_t totalSteps) {
  return baseLr * lrFactor(makeLrPlan(schedule, baseLr, stepsPerEpoch, totalSteps), t);
}

}  // namespace nnstudio
