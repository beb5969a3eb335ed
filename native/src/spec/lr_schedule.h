// Learning-rate schedules as one plain struct and one function that both backends call per step: the
// CPU session on the host, the CUDA optimizer kernels on the device (from the step count in StepState,
// so one captured graph serves every step). The base LR multiplies a factor, so a new base LR set while
// paused scales the whole schedule.
#pragma once

#include <cmath>
#include <cstdint>

#include "nnstudio/engine.h"
#include "spec/rng.h"  // NNSTUDIO_HOST_DEVICE

namespace nnstudio {

// A schedule resolved for one run: absolute learning rates become ratios of the run's initial LR.
struct LrPlan {
  int kind = 0;                   // LrScheduleKind as int (device code takes no enum class from engine.h)
  double initialLr = 0;           // spec.optimizer.lr: the base LR when nothing else is set
  int64_t stepsPerEpoch = 1, totalSteps = 1;
  int everyEpochs = 1;
  double gamma = 1;
  double minRatio = 0;            // cosine: minLr / initialLr
  double peakRatio = 1;           // onecycle: maxLr / initialLr
  double pctStart = 0.3, divFactor = 25, finalDivFactor = 1e4;
};

// Throws EngineError naming the bad field.
LrPlan makeLrPlan(const LrSchedule& schedule, double initialLr, int64_t stepsPerEpoch, int64_t totalSteps);

NNSTUDIO_HOST_DEVICE inline double annealCos(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (cos(3.14159265358979323846 * pct) + 1.0);
}

// The factor of the base LR at step t (0-based over the run).
NNSTUDIO_HOST_DEVICE inline double lrFactor(const LrPlan& plan, int64_t t) {
  switch (plan.kind) {
    case int(LrScheduleKind::Step): {
      const int64_t epoch = t / plan.stepsPerEpoch;
      return pow(plan.gamma, double(epoch / plan.everyEpochs));
    }
    case int(LrScheduleKind::Cosine): {
      const double progress = t >= plan.totalSteps ? 1.0 : double(t) / double(plan.totalSteps);
      return plan.minRatio + (1.0 - plan.minRatio) * (cos(3.14159265358979323846 * progress) + 1.0) / 2.0;
    }
    case int(LrScheduleKind::OneCycle): {
      // PyTorch's OneCycleLR (two phases, cos): phase ends at pctStart * T - 1 and T - 1
      const double peak = plan.peakRatio;
      const double initial = peak / plan.divFactor;
      const double minimum = initial / plan.finalDivFactor;
      const double end1 = double(plan.pctStart * double(plan.totalSteps)) - 1.0;
      const double end2 = double(plan.totalSteps) - 1.0;
      const double step = double(t);
      if (step <= end1) return annealCos(initial, peak, end1 > 0 ? step / end1 : 1.0);
      const double pct = end2 > end1 ? (step - end1) / (end2 - end1) : 1.0;
      return annealCos(peak, minimum, pct > 1.0 ? 1.0 : pct);
    }
    default:
      return 1.0;
  }
}

// The learning rate of step t: base LR (0: the initial one) times the factor, as a float like the update.
NNSTUDIO_HOST_DEVICE inline float stepLearningRate(const LrPlan& plan, double baseLr, int64_t t) {
  return float((baseLr > 0 ? baseLr : plan.initialLr) * lrFactor(plan, t));
}

}  // namespace nnstudio
