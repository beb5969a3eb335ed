// Faults on the GPU (docs/RELIABILITY.md, "Faults" and "Memory"):
//   - a model too large for the GPU (billions of parameters), a batch too large for it, and a GPU whose
//     memory another program holds: a clear EngineError with the figures (what the run needs, what is
//     free), before anything is allocated; the allocation's own error (the estimate turned off) names the
//     allocation, its size and the free memory; after each, every byte is given back and a small model
//     trains in the same process;
//   - cancel during the first step (Cancelled, that step's weights) and during the last (Completed);
//   - ten trainings and evaluations in a row do not grow device memory (cudaMemGetInfo, printed per run).
// Without a CUDA device it prints "skipped: no CUDA device" and passes.
#ifdef NNSTUDIO_WITH_CUDA
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/kernel_overrides.h"
#include "cuda_test_util.h"
#include "nnstudio/engine.h"
#include "spec/rng.h"
#include "test_util.h"

using namespace nnstudio;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;
// Device memory a run may leave behind without it counting as a leak (the driver's page granularity);
// one leaked run of the models below is 60 MiB or more.
constexpr double kLeakBoundMiB = 16;

struct Data {
  std::vector<float> x;
  std::vector<int32_t> y;
  int64_t featureSize = 0;
  DatasetView view() const { return DatasetView{x.data(), y.data(), int64_t(y.size()), featureSize}; }
};

// `count` samples of `features` values whose class is the sign pattern of the first feature, plus noise
Data noisy(int count, int64_t features, int classes, uint64_t seed) {
  Data d;
  d.featureSize = features;
  d.x.resize(size_t(count) * size_t(features));
  Rng rng(seed);
  for (int i = 0; i < count; ++i) {
    const int c = int(rng.below(uint32_t(classes)));
    d.y.push_back(c);
    for (int64_t k = 0; k < features; ++k) d.x[size_t(i) * size_t(features) + size_t(k)] = float(rng.uniform());
    d.x[size_t(i) * size_t(features)] = float(c) / float(classes);
  }
  return d;
}

size_t freeBytes() {
  size_t free = 0, total = 0;
  test::cudaOk(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

size_t totalBytes() {
  size_t free = 0, total = 0;
  test::cudaOk(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return total;
}

TrainOptions options(int epochs, int batch) {
  TrainOptions o;
  o.epochs = epochs;
  o.batchSize = batch;
  o.seed = 5;
  o.threads = 2;
  return o;
}

const char* kSmall =
    R"({"input":[16],"layers":[{"kind":"dense","units":32,"activation":"relu"},{"kind":"dense","units":4}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.01},"seed":2})";

// After a failure: the GPU's memory is back where it was and a small model trains in this process.
void checkStillUsable(Backend& gpu, size_t freeBefore, const std::string& after) {
  const double lostMiB = (double(freeBefore) - double(freeBytes())) / kMiB;
  CHECK_MSG(lostMiB <= kLeakBoundMiB, "after " + after + " the GPU's memory is given back (" + nnstudio_test::num(lostMiB) +
                                          " MiB not returned)");
  const ModelSpec small = parseModelSpec(kSmall);
  const Data data = noisy(2000, 16, 4, 3);
  const DatasetView view = data.view();
  const TrainResult r = gpu.train(small, view, nullptr, options(2, 50), nullptr, nullptr);
  CHECK_MSG(r.status == TrainStatus::Completed && r.steps == 80 && r.history.size() == 2 && std::isfinite(r.history[1].trainLoss),
            "after " + after + " a small model trains on the GPU in the same process");
}

void testTooLarge(Backend& gpu) {
  std::printf("a model or batch too large for the GPU\n");
  const double total = double(totalBytes());
  checkStillUsable(gpu, freeBytes(), "nothing");  // a first run loads the kernels: the baseline is after it
  const size_t baseline = freeBytes();
  {
    // eight dense layers of 32768 x 32768 (one layer may hold at most 2^31 - 1 parameters): 8.6 billion
    // parameters, 160 GiB of weights, gradients, backup and Adam moments; refused before the host builds
    // 32 GiB of initial weights
    std::string layers;
    for (int i = 0; i < 8; ++i) layers += std::string(i ? "," : "") + R"({"kind":"dense","units":32768})";
    const ModelSpec huge = parseModelSpec(R"({"input":[32768],"layers":[)" + layers +
                                          R"(],"loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})");
    const double needed = 5.0 * 4.0 * 8.0 * (32768.0 * 32768.0 + 32768.0);
    if (needed <= total) {
      std::printf("  skipped: this GPU has %.1f GiB, enough for the 'too many parameters' model\n", total / kGiB);
    } else {
      const Data data = noisy(8, 32768, 2, 4);
      const DatasetView view = data.view();
      std::string message;
      try {
        gpu.train(huge, view, nullptr, options(1, 8), nullptr, nullptr);
      } catch (const EngineError& e) {
        message = e.what();
      }
      std::printf("  %s\n", message.c_str());
      CHECK_MSG(message.find("too little free memory on ") == 0 && message.find("the run needs at least 160.0") != std::string::npos &&
                    message.find("weights, gradients and optimizer state 160.0") != std::string::npos &&
                    message.find(" free of ") != std::string::npos && message.find("lower the batch size") != std::string::npos,
                "8.6 billion parameters: the run needs 160 GiB, the GPU has less: " + message);
      checkStillUsable(gpu, baseline, "too many parameters");
    }
  }
  // a batch of 4096 images through 2048 3x3 filters at 64 x 64: 256 GiB of activations and gradients
  const ModelSpec wide = parseModelSpec(
      R"({"input":[1,64,64],"layers":[{"kind":"conv2d","filters":2048,"kernel":[3,3],"padding":"same"},{"kind":"flatten"},
          {"kind":"dense","units":2}],"loss":"softmax_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":1})");
  const Data images = noisy(4096, 64 * 64, 2, 5);
  const DatasetView imageView = images.view();
  {
    std::string message;
    try {
      gpu.train(wide, imageView, nullptr, options(1, 4096), nullptr, nullptr);
    } catch (const EngineError& e) {
      message = e.what();
    }
    std::printf("  %s\n", message.c_str());
    CHECK_MSG(message.find("too little free memory on ") == 0 &&
                  message.find("activations for a batch of 4096 256.0") != std::string::npos,
              "a batch too large: the activations' share is named: " + message);
    checkStillUsable(gpu, baseline, "a batch too large");
  }
  {
    // the estimate turned off: the allocation itself fails, names what it allocated, its size and the free memory
    std::string message;
    try {
      cuda::ScopedKernelOverride noEstimate([](cuda::KernelOverrides& o) { o.memoryCheck = false; });
      gpu.train(wide, imageView, nullptr, options(1, 4096), nullptr, nullptr);
    } catch (const EngineError& e) {
      message = e.what();
    }
    std::printf("  %s\n", message.c_str());
    CHECK_MSG(message.find("CUDA error in allocating the layers' activations: out of memory: 128.00 GiB asked for, ") == 0 &&
                  message.find(" free of ") != std::string::npos && message.find("lower the batch size") != std::string::npos,
              "the failed allocation is named with its size and the free memory: " + message);
    checkStillUsable(gpu, baseline, "a failed allocation");
  }
  {
    // another program holds all but 256 MiB: a model needing about 1 GiB is refused with what is free
    const size_t hold = freeBytes() - size_t(256 * kMiB);
    void* held = nullptr;
    test::cudaOk(cudaMalloc(&held, hold), "holding the GPU's memory");
    const ModelSpec mlp = parseModelSpec(
        R"({"input":[4096],"layers":[{"kind":"dense","units":8192,"activation":"relu"},{"kind":"dense","units":10}],
            "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":1})");
    const Data data = noisy(64, 4096, 10, 6);
    const DatasetView view = data.view();
    std::string message;
    try {
      gpu.train(mlp, view, nullptr, options(1, 64), nullptr, nullptr);
    } catch (const EngineError& e) {
      message = e.what();
    }
    cudaFree(held);
    std::printf("  %s\n", message.c_str());
    CHECK_MSG(message.find("too little free memory on ") == 0 && message.find("the GPU has 0.2") != std::string::npos,
              "with the GPU's memory held by another program the message says what is free: " + message);
    checkStillUsable(gpu, baseline, "running out of memory held by another program");
  }
}

struct CancelAt : ProgressSink {
  TrainControl* control = nullptr;
  int64_t at = 0;
  void onStep(const StepProgress& s) override {
    if (s.globalStep >= at) control->cancel = true;
  }
  void onEpoch(const EpochStats&) override {}
};

void testCancelFirstAndLast(Backend& gpu) {
  std::printf("cancel during the first and the last step\n");
  const ModelSpec small = parseModelSpec(kSmall);
  const Data data = noisy(4000, 16, 4, 7);
  const DatasetView view = data.view();
  TrainOptions o = options(2, 8);  // 500 steps an epoch
  o.progressIntervalSeconds = 0;
  {
    TrainControl control;
    CancelAt sink;
    sink.control = &control;
    sink.at = 1;
    const TrainResult r = gpu.train(small, view, &view, o, &sink, &control);
    // the GPU runs up to 128 steps ahead of the host: the cancel lands within them
    CHECK_MSG(r.status == TrainStatus::Cancelled && r.steps >= 1 && r.steps < 1000 &&
                  r.message.find("kept the weights of the last completed step") != std::string::npos,
              "a cancel during the first step: Cancelled after " + std::to_string(r.steps) + " steps: " + r.message);
    bool finite = true;
    for (float w : r.parameters) finite = finite && std::isfinite(w);
    CHECK_MSG(finite && r.parameters != initialParameters(small, small.seed), "the weights of the steps done");
    const EvalResult e = gpu.evaluate(small, r.parameters, view, 256);
    CHECK_MSG(std::isfinite(e.loss) && e.predictions.size() == 4000, "the cancelled run's weights evaluate");
  }
  {
    TrainControl control;
    CancelAt sink;
    sink.control = &control;
    sink.at = 1000;
    const TrainResult r = gpu.train(small, view, &view, o, &sink, &control);
    const TrainResult whole = gpu.train(small, view, &view, o, nullptr, nullptr);
    CHECK_MSG(r.status == TrainStatus::Completed && r.steps == 1000 && r.history.size() == 2 && r.history[1].hasValidation &&
                  r.parameters == whole.parameters,
              "a cancel during the last step: the run completes with the uninterrupted run's weights");
  }
}

void testTenRuns(Backend& gpu) {
  std::printf("device memory over ten trainings in a row\n");
  // 20 000 x 784 (60 MiB) resident plus 2000 for validation, 0.4 M parameters: a leaked run shows
  const ModelSpec mlp = parseModelSpec(
      R"({"input":[784],"layers":[{"kind":"dense","units":512,"activation":"relu"},{"kind":"dropout","rate":0.2},
          {"kind":"dense","units":10}],"loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":3})");
  const Data train = noisy(20000, 784, 10, 8);
  const Data valid = noisy(2000, 784, 10, 9);
  const DatasetView tv = train.view(), vv = valid.view();
  auto oneRun = [&] {
    const TrainResult r = gpu.train(mlp, tv, &vv, options(1, 128), nullptr, nullptr);
    const EvalResult e = gpu.evaluate(mlp, r.parameters, vv, 512);
    return r.status == TrainStatus::Completed && std::isfinite(e.loss);
  };
  CHECK(oneRun());  // the first run sets up the context, modules and graph pools
  const size_t baseline = freeBytes();
  double worstMiB = 0;
  bool allCompleted = true;
  for (int run = 1; run <= 10; ++run) {
    allCompleted = oneRun() && allCompleted;
    const double lostMiB = (double(baseline) - double(freeBytes())) / kMiB;
    worstMiB = std::max(worstMiB, lostMiB);
    std::printf("  run %2d: %.1f MiB free (%+.1f MiB since the warm-up run)\n", run, double(freeBytes()) / kMiB, -lostMiB);
  }
  CHECK(allCompleted);
  CHECK_MSG(worstMiB <= kLeakBoundMiB,
            "ten runs do not grow device memory (at most " + nnstudio_test::num(worstMiB) + " MiB less free, bound " +
                nnstudio_test::num(kLeakBoundMiB) + " MiB)");
}

}  // namespace

int main() {
  if (!test::haveCudaDevice()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  try {
    auto gpu = createBackend(DeviceKind::CUDA);
    testTooLarge(*gpu);
    testCancelFirstAndLast(*gpu);
    testTenRuns(*gpu);
  } catch (const std::exception& e) {
    std::printf("  FAIL  unexpected exception: %s\n", e.what());
    ++nnstudio_test::failed();
  }
  return nnstudio_test::summary();
}
#else
#include <cstdio>
int main() {
  std::puts("skipped: built without CUDA");
  return 0;
}
#endif
