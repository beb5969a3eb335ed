#include "train/gpu_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nnstudio {

namespace {

// Measured on 2 H200s (docs/results/issue17-h200x2-rule.jsonl): a step costs at least 25 us on one GPU
// (the MLP's, batch 64), and no preset's forward pass ran faster than 2e12 multiply-adds a second once that
// is taken off (keras_cnn 3.4e12 is the one exception: its runs are long enough either way).
constexpr double kStepSeconds = 25e-6;
constexpr double kMultiplyAddsPerSecond = 2e12;
// A second GPU saved at least 27 % of every preset's one-GPU epoch (the MLP: 0.0253 -> 0.0185 s) and
// added up to 0.51 s to the run's start: it pays from about 2 s of one-GPU training. Each further GPU is
// taken to cost as much again: on 4 H200s the start was 0.73-0.84 s, less than the 6 s asked of a run.
constexpr double kSecondsPerExtraGpu = 2.0;

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, s < 0.1 ? "%.2f s" : "%.1f s", s);
  return text;
}

}  // namespace

double oneGpuSecondsEstimate(const NetworkPlan& plan, int64_t samples, int batch, int epochs) {
  int64_t multiplyAdds = 0;
  for (const LayerPlan& layer : plan.layers) multiplyAdds += layer.multiplyAdds;
  const double steps = std::ceil(double(samples) / double(std::max(batch, 1))) * double(std::max(epochs, 1));
  return steps * (kStepSeconds + double(multiplyAdds) * double(batch) / kMultiplyAddsPerSecond);
}

std::string severalGpusWouldNotPay(const NetworkPlan& plan, int64_t samples, int batch, int epochs, int ranks) {
  if (ranks <= 1) return "";
  const double estimate = oneGpuSecondsEstimate(plan, samples, batch, epochs);
  const double least = kSecondsPerExtraGpu * double(ranks - 1);
  if (estimate >= least) return "";
  return "this run is too short for " + std::to_string(ranks) + " GPUs to pay (about " + seconds(estimate) +
         " of training on one; starting " + std::to_string(ranks) + " costs more than they save below about " +
         seconds(least) + ")";
}

}  // namespace nnstudio
