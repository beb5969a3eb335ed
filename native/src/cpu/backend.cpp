// The CPU backend: device info, evaluation, and the whole-network forward/backward entry point used
// by tests and fixtures. Its training session lives in session.cpp (the loop is train/driver.cpp).
#include "cpu/backend.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "cpu/network.h"
#include "train/checks.h"

namespace nnstudio::cpu {

// ---- device ----

DeviceInfo cpuDeviceInfo(int threads) {
  DeviceInfo info;
  info.kind = DeviceKind::CPU;
  info.index = 0;
  info.threads = threads > 0 ? threads : std::max(1, int(std::thread::hardware_concurrency()));
  info.name = "CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(" \t", colon + 1);
        if (start != std::string::npos) info.name = line.substr(start);
      }
      break;
    }
  }
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0) info.memoryBytes = int64_t(pages) * int64_t(pageSize);
#endif
  return info;
}

CpuBackend::CpuBackend(int threads) {
  threads_ = threads > 0 ? threads : std::max(1, int(std::thread::hardware_concurrency()));
}

DeviceInfo CpuBackend::device() const { return cpuDeviceInfo(threads_); }

// ---- evaluation ----

namespace {

// A regression's evaluation: the head's outputs, and the loss when the data has targets.
EvalResult evaluateRegression(Network& net, const std::vector<float>& parameters, const DatasetView& data, int batch) {
  const int K = net.outputWidth();
  EvalResult result;
  result.outputs.resize(size_t(data.count) * size_t(K));
  double lossSum = 0;
  for (int64_t start = 0; start < data.count; start += batch) {
    const int n = int(std::min<int64_t>(batch, data.count - start));
    const float* outputs = net.forward(parameters.data(), data.features + start * data.featureSize, n, false, 0);
    std::copy(outputs, outputs + int64_t(n) * K, result.outputs.begin() + start * K);
    if (data.targets) {
      LossTargets targets;
      targets.targets = data.targets + start * K;
      lossSum += net.loss(targets, n, false, nullptr) * n;
    }
  }
  result.loss = data.targets ? lossSum / double(data.count) : 0.0;
  return result;
}

}  // namespace

EvalResult CpuBackend::evaluate(const ModelSpec& spec, const std::vector<float>& parameters, const DatasetView& data,
                                int batchSize) {
  NetworkPlan plan = planNetwork(spec);
  const int classes = headClassCount(plan);
  checkDataset(plan, classes, data, "evaluation data", false);
  checkParameters(plan, parameters, "parameters");
  if (batchSize <= 0) throw EngineError("evaluation batch size must be positive, got " + std::to_string(batchSize));
  const int batch = int(std::min<int64_t>(batchSize, data.count));
  FlushDenormals flush;
  ThreadPool pool(threads_);
  Network net(spec, batch, pool);
  const int K = net.outputWidth();

  EvalResult result;
  if (plan.regression()) return evaluateRegression(net, parameters, data, batch);
  result.classes = classes;
  result.predictions.resize(size_t(data.count));
  result.probabilities.resize(size_t(data.count) * size_t(classes));
  double lossSum = 0;
  int64_t correct = 0;
  for (int64_t start = 0; start < data.count; start += batch) {
    const int n = int(std::min<int64_t>(batch, data.count - start));
    const float* outputs = net.forward(parameters.data(), data.features + start * data.featureSize, n, false, 0);
    if (data.labels) {
      LossTargets targets;
      targets.labels = data.labels + start;
      LossCounts counts;
      lossSum += net.loss(targets, n, false, &counts) * n;
      correct += counts.correct;
    }
    loss_predict(spec.loss, outputs, n, K, result.predictions.data() + start,
                 result.probabilities.data() + start * classes);
  }
  if (data.labels) {
    result.confusion.assign(size_t(classes) * size_t(classes), 0);
    for (int64_t i = 0; i < data.count; ++i)
      ++result.confusion[size_t(data.labels[i]) * size_t(classes) + size_t(result.predictions[size_t(i)])];
  }
  // without labels (prediction only) loss and accuracy are 0
  result.loss = data.labels ? lossSum / double(data.count) : 0.0;
  result.accuracy = data.labels ? double(correct) / double(data.count) : 0.0;
  return result;
}

}  // namespace nnstudio::cpu

namespace nnstudio {

// ---- whole-network forward/backward (tests, fixtures) ----

double forwardBackwardCpu(const ModelSpec& spec, const std::vector<float>& parameters, const float* inputs,
                          const int32_t* labels, int batch, bool training, std::vector<float>& outputs,
                          std::vector<float>& gradients, uint64_t dropoutSeed, const float* targets,
                          const float* classWeights) {
  if (batch <= 0) throw EngineError("forwardBackwardCpu: batch must be positive");
  cpu::ThreadPool pool(1);
  cpu::Network net(spec, batch, pool);
  const NetworkPlan& plan = net.plan();
  const bool regression = plan.regression();
  if (!inputs || (regression ? !targets : !labels))
    throw EngineError(std::string("forwardBackwardCpu: inputs and ") + (regression ? "targets" : "labels") +
                      " are required");
  checkParameters(plan, parameters, "forwardBackwardCpu: parameters");
  const int classes = headClassCount(plan);
  for (int i = 0; i < batch && !regression; ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      throw EngineError("forwardBackwardCpu: label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
                        " (0-based) is outside [0, " + std::to_string(classes) + ")");
  const float* out = net.forward(parameters.data(), inputs, batch, training, dropoutSeed);
  outputs.assign(out, out + int64_t(batch) * plan.outputWidth);
  LossTargets lossTargets;
  if (regression) lossTargets.targets = targets;
  else lossTargets.labels = labels;
  lossTargets.classWeights = regression ? nullptr : classWeights;
  const double loss = net.loss(lossTargets, batch, true, nullptr);
  gradients.assign(plan.parameterCount, 0.0f);
  net.backward(parameters.data(), gradients.data(), batch);
  return loss;
}

}  // namespace nnstudio
