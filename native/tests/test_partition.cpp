// Data-parallel training's partition of an epoch (train/partition.h): every device runs the same number of
// steps, no sample is read twice, at most ranks - 1 sit an epoch out, one device is the one-device order,
// each global step reads one contiguous block of that order, and the last step's shares differ by at most 1.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include "test_util.h"
#include "nnstudio/engine.h"
#include "train/epoch_order.h"
#include "train/gpu_rule.h"
#include "train/partition.h"

using namespace nnstudio;

namespace {

void checkCase(int64_t count, int batch, int ranks) {
  std::vector<uint32_t> order(static_cast<size_t>(count));
  epochOrder(order.data(), order.size(), true, 7, 3);
  const int64_t steps = dataParallelSteps(count, batch, ranks);
  std::vector<std::vector<uint32_t>> shares;
  std::multiset<uint32_t> seen;
  bool sameSteps = true;
  for (int r = 0; r < ranks; ++r) {
    shares.push_back(rankOrder(order, batch, ranks, r));
    const auto& mine = shares.back();
    seen.insert(mine.begin(), mine.end());
    // steps of `batch`, the last one possibly smaller and never empty: the same step count on every device
    sameSteps = sameSteps && int64_t((mine.size() + batch - 1) / batch) == steps &&
                int64_t(mine.size()) == rankSamples(count, batch, ranks, r);
  }
  CHECK_MSG(sameSteps, "every device runs the epoch's steps; rankSamples is the share's size");
  CHECK_MSG(std::set<uint32_t>(seen.begin(), seen.end()).size() == seen.size(), "no sample is read twice");
  const int64_t skipped = count - int64_t(seen.size());
  CHECK_MSG(skipped >= 0 && skipped < ranks, "at most ranks - 1 samples sit the epoch out");
  // global step s = one contiguous block of the one-device order, dealt in rank order
  int64_t at = 0;
  bool contiguous = true, even = true;
  for (int64_t s = 0; s < steps; ++s) {
    size_t smallest = size_t(-1), largest = 0;
    for (int r = 0; r < ranks; ++r) {
      const auto& mine = shares[size_t(r)];
      const size_t begin = size_t(s * batch), end = std::min(mine.size(), size_t((s + 1) * batch));
      for (size_t i = begin; i < end; ++i) contiguous = contiguous && mine[i] == order[size_t(at++)];
      smallest = std::min(smallest, end - begin);
      largest = std::max(largest, end - begin);
    }
    even = even && smallest >= 1 && largest - smallest <= (s + 1 == steps ? 1u : 0u);
  }
  CHECK_MSG(contiguous && at == int64_t(seen.size()), "each global step reads the next block of the one-device order");
  CHECK_MSG(even, "a step's shares are equal (the last one's differ by at most 1) and never empty");
  std::printf("  ok    %lld samples, batch %d, %d devices: %lld steps, %lld skipped\n", (long long)count, batch, ranks,
              (long long)steps, (long long)skipped);
}

}  // namespace

// The rule that keeps short runs on one GPU (train/gpu_rule.h), on models of the presets' sizes.
void checkGpuRule() {
  std::printf("when several GPUs pay\n");
  const NetworkPlan mlp = planNetwork(parseModelSpec(
      R"({"input":[784],"layers":[{"kind":"dense","units":128,"activation":"relu"},{"kind":"dense","units":10}],
          "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})"));
  const NetworkPlan cnn = planNetwork(parseModelSpec(
      R"({"input":[1,28,28],"layers":[{"kind":"conv2d","filters":64,"kernel":[3,3],"padding":"same","activation":"relu"},
          {"kind":"conv2d","filters":64,"kernel":[3,3],"padding":"same","activation":"relu"},{"kind":"maxpool2d","size":2},
          {"kind":"flatten"},{"kind":"dense","units":10}],"loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})"));
  // MNIST's 60 000 images, 10 epochs: the MLP's steps are ~27 us (about 0.25 s in all), the CNN's ~30 M
  // multiply-adds an image make seconds
  const double mlpSeconds = oneGpuSecondsEstimate(mlp, 60000, 64, 10);
  const double cnnSeconds = oneGpuSecondsEstimate(cnn, 60000, 128, 10);
  CHECK_MSG(mlpSeconds > 0.2 && mlpSeconds < 0.4, "the MLP's estimate: " + std::to_string(mlpSeconds) + " s");
  CHECK_MSG(cnnSeconds > 5, "the CNN's estimate: " + std::to_string(cnnSeconds) + " s");
  const std::string why = severalGpusWouldNotPay(mlp, 60000, 64, 10, 2);
  CHECK_MSG(why.find("too short for 2 GPUs to pay") != std::string::npos && why.find("about 0.") != std::string::npos,
            "the MLP stays on one GPU, and the note says why: " + why);
  CHECK_MSG(severalGpusWouldNotPay(cnn, 60000, 128, 10, 2).empty(), "the CNN takes 2 GPUs");
  CHECK_MSG(severalGpusWouldNotPay(mlp, 60000, 64, 10, 1).empty(), "one GPU asked: nothing to say");
  // longer runs pay; each further GPU needs a longer one
  CHECK_MSG(severalGpusWouldNotPay(mlp, 60000, 64, 100, 2).empty(), "100 epochs of the MLP take 2 GPUs");
  CHECK_MSG(!severalGpusWouldNotPay(mlp, 60000, 64, 100, 8).empty(), "but not 8");
  CHECK_MSG(!severalGpusWouldNotPay(cnn, 1000, 128, 3, 2).empty(), "the CNN on 1 000 images for 3 epochs: one GPU");
}

int main() {
  checkGpuRule();
  std::printf("data-parallel partition\n");
  checkCase(60000, 128, 1);
  checkCase(60000, 128, 2);
  checkCase(60000, 128, 4);
  checkCase(60000, 128, 8);
  checkCase(1000, 32, 3);   // last step 1000 - 960 = 40 samples over 3 devices: 14, 13, 13
  checkCase(97, 10, 4);     // last step 17: 5, 4, 4, 4
  checkCase(83, 10, 4);     // last step 3 < 4 devices: those 3 sit out
  checkCase(5, 64, 2);      // fewer samples than one global batch
  {
    std::vector<uint32_t> order(100);
    std::iota(order.begin(), order.end(), 0u);
    CHECK(rankOrder(order, 16, 1, 0) == order);  // one device: the one-device order, whole
    CHECK_THROWS(rankOrder(order, 16, 2, 2), std::invalid_argument, "rank out of range");
    CHECK_THROWS(dataParallelSteps(100, 0, 2), std::invalid_argument, "at least 1");
  }
  return nnstudio_test::summary();
}
