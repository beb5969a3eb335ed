// Per-device state (issue 12's smell "per-device state thread-safe"). Before DeviceCaps, optim.cu kept
// the SM count in an unsynchronised `static int sms`: written by whichever training thread launched an
// optimizer step first, read by all the others, and used for every GPU. On every visible GPU, with 8
// threads working on all of them at once:
// - DeviceCaps (cuda/device_caps.h) equal the driver's own attributes of that GPU, and every thread gets
//   the same object for it (asked once);
// - the optimizer steps' grid, read back from a captured CUDA graph (nothing runs), is 4 blocks per SM of
//   the GPU it was launched on.
// The old code fails the second check when two GPUs differ in SM count (the second GPU got the first's
// grid); its data race shows under ThreadSanitizer (`-DNNSTUDIO_TSAN=ON`), which this test's threads
// trip even without a GPU: each then gets an EngineError, which is what the test expects there.
#include <cstdio>

#ifdef NNSTUDIO_WITH_CUDA

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cuda/device_caps.h"
#include "cuda/kernels.h"
#include "cuda_test_util.h"
#include "test_util.h"

using namespace nnstudio;

namespace {

constexpr int kThreads = 8;
constexpr size_t kParameters = size_t(1) << 24;  // more than 4 blocks of 256 per SM of any GPU
constexpr int kOptimizerThreads = 256;           // optim.cu's block

int driverAttribute(cudaDeviceAttr which, int device) {
  int value = 0;
  test::cudaOk(cudaDeviceGetAttribute(&value, which, device), "cudaDeviceGetAttribute");
  return value;
}

// DeviceCaps of `device` against the driver: what differs, or ""
std::string capsMismatch(const cuda::DeviceCaps& c, int device) {
  std::string bad;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) bad += std::string(bad.empty() ? "" : ", ") + what;
  };
  expect(c.device == device, "device");
  expect(c.sms == driverAttribute(cudaDevAttrMultiProcessorCount, device), "sms");
  expect(c.computeMajor == driverAttribute(cudaDevAttrComputeCapabilityMajor, device), "computeMajor");
  expect(c.computeMinor == driverAttribute(cudaDevAttrComputeCapabilityMinor, device), "computeMinor");
  expect(c.sharedOptin == size_t(driverAttribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device)), "sharedOptin");
  expect(c.l2Bytes == size_t(driverAttribute(cudaDevAttrL2CacheSize, device)), "l2Bytes");
  // the code's architecture: the device's, or an older one's PTX JIT-compiled here (a build for sm_75 alone)
  const int arch = 10 * c.computeMajor + c.computeMinor;
  expect(c.codeArch >= 75 && c.codeArch <= arch, "codeArch");
  expect(c.tf32TensorCores() == (c.codeArch >= 80), "tensor cores (TF32)");
  expect((c.tensorCores >= cuda::TensorCores::Fp16MmaSync) == (c.codeArch >= 75), "tensor cores (FP16)");
  expect(!c.clusterLaunch || c.codeArch >= 90, "clusters before sm_90 (device or code)");
  expect(c.gemmMaxCluster == 1 || c.gemmMaxCluster == 8 || c.gemmMaxCluster == 16, "gemmMaxCluster");
  expect(c.headMaxCluster >= 1 && c.headMaxCluster <= 16, "headMaxCluster");
  return bad;
}

// The grid of the one kernel a captured sgd or adam step launches on the current device.
unsigned capturedOptimizerGrid(bool adam) {
  cudaStream_t stream;
  test::cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  float* dummy = nullptr;  // never read: the graph is only inspected
  test::cudaOk(cudaMalloc(&dummy, 64), "cudaMalloc");
  auto* state = reinterpret_cast<cuda::StepState*>(dummy);
  cudaGraph_t graph = nullptr;
  test::cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  if (adam)
    cuda::adam_step(stream, dummy, dummy, dummy, dummy, dummy, kParameters, 0.01f, 0.9f, 0.999f, 1e-8f, state);
  else
    cuda::sgd_step(stream, dummy, dummy, dummy, dummy, kParameters, 0.1f, 0.9f, state);
  test::cudaOk(cudaStreamEndCapture(stream, &graph), "capture");
  size_t count = 0;
  test::cudaOk(cudaGraphGetNodes(graph, nullptr, &count), "nodes");
  std::vector<cudaGraphNode_t> nodes(count);
  test::cudaOk(cudaGraphGetNodes(graph, nodes.data(), &count), "nodes");
  unsigned grid = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    test::cudaOk(cudaGraphNodeGetType(node, &type), "node type");
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams params{};
    test::cudaOk(cudaGraphKernelNodeGetParams(node, &params), "kernel node");
    grid = params.gridDim.x;
  }
  cudaGraphDestroy(graph);
  cudaFree(dummy);
  cudaStreamDestroy(stream);
  return grid;
}

void checkDevices(int devices) {
  std::atomic<int> capsWrong{0}, sameObjectWrong{0}, gridWrong{0}, errors{0};
  std::vector<const cuda::DeviceCaps*> first(size_t(devices), nullptr);
  std::vector<std::string> firstError(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 6; ++round)
          for (int k = 0; k < devices; ++k) {
            const int device = (t + k + round) % devices;
            test::cudaOk(cudaSetDevice(device), "cudaSetDevice");
            const cuda::DeviceCaps& caps = (t + round) % 2 ? cuda::currentDeviceCaps() : cuda::deviceCaps(device);
            if (!capsMismatch(caps, device).empty()) ++capsWrong;
            if (&caps != &cuda::deviceCaps(device)) ++sameObjectWrong;
            const unsigned sms = unsigned(driverAttribute(cudaDevAttrMultiProcessorCount, device));
            const unsigned work = unsigned((kParameters + kOptimizerThreads - 1) / kOptimizerThreads);
            const unsigned expected = std::min(work, 4 * sms);
            if (capturedOptimizerGrid((t + round) % 2 == 0) != expected) ++gridWrong;
          }
      } catch (const std::exception& e) {
        ++errors;
        firstError[size_t(t)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& e : firstError)
    if (!e.empty()) std::printf("  thread error: %s\n", e.c_str());
  CHECK_MSG(errors == 0, "no thread failed");
  for (int d = 0; d < devices; ++d) {
    const std::string bad = capsMismatch(cuda::deviceCaps(d), d);
    const cuda::DeviceCaps& c = cuda::deviceCaps(d);
    CHECK_MSG(bad.empty(), "GPU " + std::to_string(d) + ": DeviceCaps equal the driver's attributes (" +
                               std::to_string(c.sms) + " SMs, sm_" + std::to_string(c.computeMajor) +
                               std::to_string(c.computeMinor) + ", " + std::to_string(c.sharedOptin / 1024) +
                               " KiB shared, split-K clusters " + std::to_string(c.gemmMaxCluster) + ")" +
                               (bad.empty() ? "" : ": " + bad));
  }
  CHECK_MSG(capsWrong == 0, "every thread read its GPU's own caps (" + std::to_string(capsWrong.load()) + " wrong)");
  CHECK_MSG(sameObjectWrong == 0, "one DeviceCaps per GPU, whoever asks first");
  CHECK_MSG(gridWrong == 0, "sgd and adam steps launch 4 blocks per SM of their own GPU, from " +
                                std::to_string(kThreads) + " threads on " + std::to_string(devices) + " GPU(s) (" +
                                std::to_string(gridWrong.load()) + " wrong)");
}

// No device: the threads still race into the optimizer's launcher (what ThreadSanitizer watches), and
// each gets the engine's error, not a crash.
void checkWithoutDevice() {
  std::atomic<int> engineErrors{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      try {
        cuda::sgd_step(nullptr, nullptr, nullptr, nullptr, nullptr, kParameters, 0.1f, 0.9f, nullptr);
      } catch (const EngineError&) {
        ++engineErrors;
      } catch (...) {
        ++other;
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK_MSG(engineErrors == kThreads && other == 0, "without a GPU every optimizer launch is an EngineError (" +
                                                        std::to_string(engineErrors.load()) + " of " +
                                                        std::to_string(kThreads) + ")");
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    checkWithoutDevice();
    nnstudio_test::summary();
    std::puts("skipped: no CUDA device");
    return nnstudio_test::failed() == 0 ? 0 : 1;
  }
  std::printf("%d GPU(s)\n", devices);
  checkDevices(devices);
  return nnstudio_test::summary();
}

#else
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
