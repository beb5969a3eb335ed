// The CUDA backend: the device it runs on and evaluation (predictions, probabilities, loss and the
// confusion matrix on the device, over the data uploaded once). Its training session lives in session.cu
// (the loop is train/driver.cpp).
#include "cuda/backend.h"
#include "cuda/nccl_library.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/buffer.h"
#include "cuda/network.h"
#include "cuda/resident.h"
#include "train/checks.h"

namespace nnstudio::cuda {

std::vector<DeviceInfo> listDevices();

// ---- device ----

CudaBackend::CudaBackend(int deviceIndex) : deviceIndex_(deviceIndex) {
  for (const DeviceInfo& d : listDevices())
    if (d.index == deviceIndex) info_ = d;
  if (info_.kind != DeviceKind::CUDA)
    throw EngineError("no CUDA device is available with index " + std::to_string(deviceIndex));
}

std::string gpuName(int device) {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "reading a GPU's name");
  return properties.name;
}

int CudaBackend::dataParallelRanks(const TrainOptions& options, std::string* why) {
  const std::vector<int>& gpus = options.gpus;
  int count = 0;
  check(cudaGetDeviceCount(&count), "counting the GPUs");
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i] < 0 || gpus[i] >= count)
      throw EngineError("there is no GPU " + std::to_string(gpus[i]) + " (this machine has " + std::to_string(count) +
                        ", numbered from 0)");
    if (std::find(gpus.begin(), gpus.begin() + long(i), gpus[i]) != gpus.begin() + long(i))
      throw EngineError("GPU " + std::to_string(gpus[i]) + " is listed twice");
  }
  if (gpus.size() <= 1) return 1;
  std::string reason;
  if (!ncclLibrary(&reason)) {
    if (why) *why = "trained on GPU " + std::to_string(gpus.front()) + " only: " + reason;
    return 1;
  }
  return int(gpus.size());
}

// ---- evaluation ----

namespace {

// A regression's evaluation: the head's outputs, and the loss (mean over every element) with targets.
EvalResult evaluateRegression(const ModelSpec& spec, Network& net, const DeviceBuffer<float>& params,
                              const ResidentData& resident, const DatasetView& data, int batch, cudaStream_t stream) {
  const int K = net.outputWidth();
  DeviceBuffer<float> outputs(size_t(data.count) * size_t(K), "allocating the outputs");
  DeviceBuffer<StepState> state(1);
  check(cudaMemsetAsync(state.get(), 0, sizeof(StepState), stream), "evaluation");
  const LossConfig config{spec.loss, spec.huberDelta, true};
  for (int64_t first = 0; first < data.count; first += batch) {
    const int n = int(std::min<int64_t>(batch, data.count - first));
    const float* out =
        net.forward(stream, params.get(), resident.features.get() + first * data.featureSize, n, false, 0, state.get());
    LossTargets targets;
    targets.targets = data.targets ? resident.targets.get() + first * K : nullptr;
    loss_predict(stream, config, out, targets, n, K, nullptr, nullptr, state.get(), nullptr);
    check(cudaMemcpyAsync(outputs.get() + first * K, out, sizeof(float) * size_t(n) * size_t(K),
                          cudaMemcpyDeviceToDevice, stream),
          "evaluation");
  }
  EvalResult result;
  result.outputs = download(outputs, outputs.size(), stream, "downloading the outputs");
  const StepState s = download(state, 1, stream, "evaluation")[0];
  if (data.targets) result.loss = s.sampleLossSum / double(data.count);
  return result;
}

}  // namespace

EvalResult CudaBackend::evaluate(const ModelSpec& spec, const std::vector<float>& parameters, const DatasetView& data,
                                 int batchSize) {
  const NetworkPlan plan = planNetwork(spec);
  const int classes = headClassCount(plan);
  checkDataset(plan, classes, data, "evaluation data", false);
  checkParameters(plan, parameters, "parameters");
  if (batchSize <= 0) throw EngineError("evaluation batch size must be positive, got " + std::to_string(batchSize));
  check(cudaSetDevice(deviceIndex_), "selecting the GPU");
  Stream stream;
  // the GPU wants wide batches; the result does not depend on the batch size
  const int batch = int(std::min<int64_t>(std::max(batchSize, 1024), data.count));
  Network net(spec, batch, false, /*trainable=*/false);
  const int K = net.outputWidth();

  DeviceBuffer<float> params(std::max<size_t>(parameters.size(), 1));
  check(cudaMemcpyAsync(params.get(), parameters.data(), sizeof(float) * parameters.size(), cudaMemcpyHostToDevice,
                        stream),
        "uploading the weights");
  ResidentData resident(data, stream, "uploading the evaluation data");
  if (plan.regression()) return evaluateRegression(spec, net, params, resident, data, batch, stream);
  DeviceBuffer<int32_t> predictions(size_t(data.count));
  DeviceBuffer<float> probabilities(size_t(data.count) * size_t(classes));
  DeviceBuffer<StepState> state(1);
  DeviceBuffer<unsigned long long> confusion(size_t(classes) * size_t(classes));
  check(cudaMemsetAsync(state.get(), 0, sizeof(StepState), stream), "evaluation");
  check(cudaMemsetAsync(confusion.get(), 0, confusion.bytes(), stream), "evaluation");
  for (int64_t first = 0; first < data.count; first += batch) {
    const int n = int(std::min<int64_t>(batch, data.count - first));
    const float* outputs =
        net.forward(stream, params.get(), resident.features.get() + first * data.featureSize, n, false, 0, state.get());
    LossTargets targets;
    targets.labels = data.labels ? resident.labels.get() + first : nullptr;
    loss_predict(stream, LossConfig{spec.loss, spec.huberDelta, false, spec.labelSmoothing}, outputs, targets, n, K,
                 predictions.get() + first, probabilities.get() + first * classes, state.get(), confusion.get());
  }
  EvalResult result;
  result.classes = classes;
  result.predictions = download(predictions, size_t(data.count), stream, "downloading predictions");
  result.probabilities = download(probabilities, size_t(data.count) * size_t(classes), stream, "downloading predictions");
  const StepState s = download(state, 1, stream, "evaluation")[0];
  if (data.labels) {
    const std::vector<unsigned long long> counts = download(confusion, confusion.size(), stream, "evaluation");
    result.confusion.assign(counts.begin(), counts.end());
    result.loss = s.sampleLossSum / double(data.count);
    result.accuracy = double(s.correct) / double(data.count);
  }
  return result;
}

// ---- the seam devices.cpp calls ----

std::unique_ptr<Backend> createBackend(int deviceIndex) { return std::make_unique<CudaBackend>(deviceIndex); }

}  // namespace nnstudio::cuda
