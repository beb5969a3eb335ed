// Data-parallel training on several GPUs (issue 17; cuda/data_parallel.cu), on a machine with at least two
// GPUs and NCCL; elsewhere it checks what it can (one listed GPU, a GPU that does not exist, the note when
// NCCL is missing) and says what it skipped.
//   - a 2-GPU run of a network without batchnorm, dropout or augmentation (whose gradients then average
//     to the whole global batch's) against the CPU run with twice the batch: the same samples per global
//     step (train/partition.h), so the weights agree within float rounding;
//   - the same seed gives the same bits, run after run; a resumed run gives the uninterrupted run's bits;
//   - an even tail (20 + 20) and shares under a batch (100 samples at batch 256) against the CPU;
//   - a residual network with batchnorm and augmentation trains to the one-GPU run's accuracy.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "nnstudio/engine.h"
#include "test_util.h"

using namespace nnstudio;

#ifdef NNSTUDIO_WITH_CUDA
#include "cuda/nccl_library.h"
#include "cuda_test_util.h"
#include "spec/rng.h"
using nnstudio::test::relError;

namespace {

struct Data {
  std::vector<float> x;
  std::vector<int32_t> y;
  int64_t featureSize = 0;
  DatasetView view() const { return DatasetView{x.data(), y.data(), int64_t(y.size()), featureSize}; }
};

// images (1, 12, 12) whose class is the brightest of 4 horizontal bands, plus noise
Data bands(int count, uint64_t seed) {
  Data d;
  d.featureSize = 144;
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const int c = int(rng.below(4));
    for (int r = 0; r < 12; ++r)
      for (int k = 0; k < 12; ++k) d.x.push_back((r * 4 / 12 == c ? 0.8f : 0.0f) + 0.6f * (rng.uniform() - 0.5f));
    d.y.push_back(c);
  }
  return d;
}

const char* kPlainCnn =
    R"({"input":[1,12,12],"layers":[{"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"same","activation":"relu"},
       {"kind":"maxpool2d","size":2},{"kind":"flatten"},{"kind":"dense","units":4}],"loss":"softmax_cross_entropy",
       "optimizer":{"kind":"adam","lr":0.003},"seed":11})";

const char* kResidual =
    R"({"input":[1,12,12],"layers":[{"kind":"conv2d","filters":8,"kernel":[3,3],"padding":"same"},{"kind":"batchnorm"},
       {"kind":"activation","fn":"relu"},{"kind":"residual","layers":[{"kind":"conv2d","filters":16,"kernel":[3,3],"stride":2,
       "padding":"same"},{"kind":"batchnorm"},{"kind":"activation","fn":"relu"},{"kind":"conv2d","filters":16,"kernel":[3,3],
       "padding":"same"},{"kind":"batchnorm"}]},{"kind":"activation","fn":"relu"},{"kind":"global_avgpool"},
       {"kind":"dense","units":4}],"loss":"softmax_cross_entropy","labelSmoothing":0.1,
       "optimizer":{"kind":"adamw","lr":0.003,"weightDecay":0.01},"seed":12})";

TrainOptions options(int epochs, int batch, std::vector<int> gpus) {
  TrainOptions o;
  o.epochs = epochs;
  o.batchSize = batch;
  o.seed = 5;
  o.progressIntervalSeconds = 0;
  o.gpus = std::move(gpus);
  o.onlyWhereGpusPay = false;  // these runs are short on purpose: they check the data-parallel path
  return o;
}

void checkChoices(Backend& gpu, int gpus) {
  std::printf("choosing GPUs\n");
  const ModelSpec spec = parseModelSpec(kPlainCnn);
  const Data train = bands(256, 1);
  const DatasetView tv = train.view();
  const TrainResult alone = gpu.train(spec, tv, nullptr, options(1, 32, {}), nullptr, nullptr);
  const TrainResult listed = gpu.train(spec, tv, nullptr, options(1, 32, {0}), nullptr, nullptr);
  CHECK_MSG(listed.parameters == alone.parameters && listed.notes.empty(), "one listed GPU: the one-GPU run, no note");
  CHECK_THROWS(gpu.train(spec, tv, nullptr, options(1, 32, {gpus}), nullptr, nullptr), EngineError,
               "there is no GPU " + std::to_string(gpus));
  if (gpus >= 2) CHECK_THROWS(gpu.train(spec, tv, nullptr, options(1, 32, {1, 1}), nullptr, nullptr), EngineError, "listed twice");
  if (gpus >= 2) {  // a run of 8 steps: the rule keeps it on the first GPU listed, bit for bit
    TrainOptions ruled = options(1, 32, {0, 1});
    ruled.onlyWhereGpusPay = true;
    const TrainResult kept = gpu.train(spec, tv, nullptr, ruled, nullptr, nullptr);
    CHECK_MSG(kept.parameters == alone.parameters && kept.notes.size() == 1 &&
                  kept.notes[0].find("trained on GPU 0 only: this run is too short for 2 GPUs to pay") != std::string::npos,
              "a short run stays on one GPU and says why: " + (kept.notes.empty() ? std::string("(no note)") : kept.notes[0]));
  }
}

void checkWithoutNccl(Backend& gpu, const std::string& why) {
  std::printf("two GPUs asked, no NCCL: one GPU and a note\n");
  const ModelSpec spec = parseModelSpec(kPlainCnn);
  const Data train = bands(256, 2);
  const DatasetView tv = train.view();
  const TrainResult one = gpu.train(spec, tv, nullptr, options(1, 32, {}), nullptr, nullptr);
  const TrainResult asked = gpu.train(spec, tv, nullptr, options(1, 32, {0, 1}), nullptr, nullptr);
  CHECK_MSG(asked.parameters == one.parameters, "the one-GPU run's bits");
  CHECK_MSG(asked.notes.size() == 1 && asked.notes[0].find("trained on GPU 0 only") != std::string::npos, "note: " + why);
}

void checkAgainstLargerBatch(Backend& gpu, Backend& cpu) {
  std::printf("2 GPUs x batch 32 == one device x batch 64 (no batchnorm, dropout or augmentation)\n");
  const ModelSpec spec = parseModelSpec(kPlainCnn);
  const Data train = bands(1024, 3), valid = bands(256, 4);
  const DatasetView tv = train.view(), vv = valid.view();
  const TrainResult two = gpu.train(spec, tv, &vv, options(3, 32, {0, 1}), nullptr, nullptr);
  const TrainResult wide = cpu.train(spec, tv, &vv, options(3, 64, {}), nullptr, nullptr);
  CHECK_MSG(two.status == TrainStatus::Completed && two.steps == wide.steps,
            "completed " + std::to_string(two.steps) + " global steps (" + std::to_string(wide.steps) + " expected) on " +
                two.device);
  const double err = relError(two.parameters, wide.parameters, 1e-3);
  CHECK_MSG(err <= 2e-3, "weights within float rounding of the wider batch's (rel error " + nnstudio_test::num(err) + ")");
  const TrainResult again = gpu.train(spec, tv, &vv, options(3, 32, {0, 1}), nullptr, nullptr);
  CHECK_MSG(again.parameters == two.parameters, "the same bits run after run");
  // exact resume: 1 epoch, its state, then 2 more == 3 at once
  struct Keep : ProgressSink {
    std::vector<TrainState> states;
    bool wantsCheckpoints() const override { return true; }
    void onCheckpoint(const TrainState& s) override { states.push_back(s); }
  } keep;
  gpu.train(spec, tv, &vv, options(1, 32, {0, 1}), &keep, nullptr);
  TrainOptions resumed = options(3, 32, {0, 1});
  if (!keep.states.empty()) resumed.resume = &keep.states.back();
  const TrainResult rest = gpu.train(spec, tv, &vv, resumed, nullptr, nullptr);
  CHECK_MSG(!keep.states.empty() && rest.parameters == two.parameters, "a resumed run gives the uninterrupted run's bits");
}

// Shares under a batch and tails: 1000 samples at batch 32 on 2 GPUs are 15 global steps of 64 and a tail of
// 20 + 20 (the CPU at batch 64: 15 steps and a tail of 40, whose mean is the two tails' mean); 100 samples at
// batch 256 are one step of 50 + 50 (the batch becomes 100: each rank's share is under a batch).
void checkTailsAndSmallData(Backend& gpu, Backend& cpu) {
  std::printf("an even tail, and shares under a batch\n");
  const ModelSpec spec = parseModelSpec(kPlainCnn);
  const Data train = bands(1000, 7), small = bands(100, 8);
  const DatasetView tv = train.view(), sv = small.view();
  const TrainResult two = gpu.train(spec, tv, nullptr, options(2, 32, {0, 1}), nullptr, nullptr);
  const TrainResult wide = cpu.train(spec, tv, nullptr, options(2, 64, {}), nullptr, nullptr);
  CHECK_MSG(two.status == TrainStatus::Completed && two.steps == wide.steps && two.steps == 32,
            "1000 samples: " + std::to_string(two.steps) + " global steps (32 expected)");
  CHECK_MSG(relError(two.parameters, wide.parameters, 1e-3) <= 2e-3, "the wider batch's weights, tails included");
  const TrainResult tiny = gpu.train(spec, sv, nullptr, options(3, 256, {0, 1}), nullptr, nullptr);
  const TrainResult tinyWide = cpu.train(spec, sv, nullptr, options(3, 256, {}), nullptr, nullptr);
  CHECK_MSG(tiny.status == TrainStatus::Completed && tiny.steps == 3, "100 samples at batch 256: 3 steps of 50 + 50");
  CHECK_MSG(relError(tiny.parameters, tinyWide.parameters, 1e-3) <= 2e-3, "the one-device run of all 100 a step");
}

void checkResidual(Backend& gpu) {
  std::printf("a residual network with batchnorm and augmentation on 2 GPUs\n");
  const ModelSpec spec = parseModelSpec(kResidual);
  const Data train = bands(2048, 5), valid = bands(512, 6);
  const DatasetView tv = train.view(), vv = valid.view();
  TrainOptions o2 = options(4, 32, {0, 1}), o1 = options(4, 64, {});
  o2.augment.translate = o1.augment.translate = 1;
  const TrainResult two = gpu.train(spec, tv, &vv, o2, nullptr, nullptr);
  const TrainResult one = gpu.train(spec, tv, &vv, o1, nullptr, nullptr);
  const double a2 = two.history.back().validationAccuracy, a1 = one.history.back().validationAccuracy;
  CHECK_MSG(two.status == TrainStatus::Completed && a2 >= a1 - 0.03,
            "validation accuracy " + nnstudio_test::num(a2) + " on 2 GPUs, " + nnstudio_test::num(a1) + " on one");
}

}  // namespace

int main() {
  if (!test::haveCudaDevice()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  try {
    int gpus = 0;
    cudaGetDeviceCount(&gpus);
    auto gpu = createBackend(DeviceKind::CUDA);
    auto cpu = createBackend(DeviceKind::CPU, 4);
    checkChoices(*gpu, gpus);
    std::string why;
    const bool nccl = cuda::ncclLibrary(&why) != nullptr;
    if (gpus < 2) {
      std::printf("skipped: data-parallel runs (this machine has %d GPU)\n", gpus);
    } else if (!nccl) {
      checkWithoutNccl(*gpu, why);
      std::printf("skipped: data-parallel runs (%s)\n", why.c_str());
    } else {
      checkAgainstLargerBatch(*gpu, *cpu);
      checkTailsAndSmallData(*gpu, *cpu);
      checkResidual(*gpu);
    }
  } catch (const std::exception& e) {
    std::printf("  FAIL  unexpected exception: %s\n", e.what());
    ++nnstudio_test::failed();
  }
  return nnstudio_test::summary();
}
#else
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
