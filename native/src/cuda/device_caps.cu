// DeviceCaps (device_caps.h): the driver's attributes of a GPU and the cluster sizes our kernels
// co-schedule on it, asked once per device by the first thread that needs them.
#include "cuda/device_caps.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/check.h"
#include "cuda/cluster_probes.h"

namespace nnstudio::cuda {

namespace {

int attribute(cudaDeviceAttr which, int device) {
  int value = 0;
  check(cudaDeviceGetAttribute(&value, which, device), "querying the GPU's attributes");
  return value;
}

// 0 where the driver does not know the attribute
int optionalAttribute(cudaDeviceAttr which, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, which, device) != cudaSuccess) {
    cudaGetLastError();  // not an error of the next launch
    value = 0;
  }
  return value;
}

// arch: 10 * major + minor (sm_70's m8n8k4 is not one our kernels use)
TensorCores tensorCoresOf(int arch) {
  if (arch >= 100) return TensorCores::Tcgen05;
  if (arch >= 90) return TensorCores::Wgmma;
  if (arch >= 80) return TensorCores::Tf32MmaSync;
  if (arch >= 75) return TensorCores::Fp16MmaSync;
  return TensorCores::None;
}

__global__ void codeArchProbe() {}

// the architecture of the code the probe kernel runs here (kernels of one build share it); 0 when unknown
int codeArchOnDevice() {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, codeArchProbe) != cudaSuccess) {
    cudaGetLastError();  // not an error of the next launch
    return 0;
  }
  return attr.ptxVersion;
}

// `device` is the calling thread's current device
DeviceCaps query(int device) {
  DeviceCaps c;
  c.device = device;
  c.sms = std::max(1, attribute(cudaDevAttrMultiProcessorCount, device));
  c.computeMajor = attribute(cudaDevAttrComputeCapabilityMajor, device);
  c.computeMinor = attribute(cudaDevAttrComputeCapabilityMinor, device);
  const int optin = attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  c.sharedOptin = optin > 0 ? size_t(optin) : size_t(48 * 1024);
  c.l2Bytes = size_t(std::max(0, optionalAttribute(cudaDevAttrL2CacheSize, device)));
  const int arch = 10 * c.computeMajor + c.computeMinor;
  const int code = codeArchOnDevice();
  c.codeArch = code > 0 ? std::min(arch, code) : arch;
  c.tensorCores = tensorCoresOf(c.codeArch);
  // clusters need sm_90 code as well as an sm_90 GPU (a build for older targets compiles its cluster kernels
  // empty; their probes would refuse them one by one)
  c.clusterLaunch = c.codeArch >= 90 && optionalAttribute(cudaDevAttrClusterLaunch, device) != 0;
  c.gemmMaxCluster = gemmClusterLimit(c.clusterLaunch);
  c.headSharedBytes = c.sharedOptin - 1024;  // the dense head's static arrays take 1 KiB
  c.headMaxCluster = denseHeadClusterLimit(c.headSharedBytes, c.clusterLaunch);
  c.batchnormMaxCluster = batchnormClusterLimit(c.clusterLaunch);
  return c;
}

PerDevice<DeviceCaps>& table() {
  static PerDevice<DeviceCaps> caps;
  return caps;
}

}  // namespace

int currentDevice() {
  int device = 0;
  check(cudaGetDevice(&device), "finding the current GPU");
  return device;
}

const DeviceCaps& currentDeviceCaps() { return table().get(currentDevice(), query); }

const DeviceCaps& deviceCaps(int device) {
  const int current = currentDevice();
  if (device == current) return currentDeviceCaps();
  check(cudaSetDevice(device), "selecting a GPU");
  try {
    const DeviceCaps& caps = table().get(device, query);
    check(cudaSetDevice(current), "selecting a GPU");
    return caps;
  } catch (...) {
    cudaSetDevice(current);
    throw;
  }
}

}  // namespace nnstudio::cuda
