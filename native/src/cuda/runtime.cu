// Device discovery and CUDA error messages. A machine without a driver or a GPU is normal (the CPU
// backend takes over); every CUDA failure becomes an EngineError with a message for the user.
#include <cstdio>
#include <string>
#include <vector>

#include "cuda/check.h"

namespace nnstudio::cuda {

namespace {

[[noreturn]] void throwWith(cudaError_t error, const char* what, const std::string& detail) {
  std::string message = std::string("CUDA error in ") + what + ": " + cudaGetErrorString(error) + detail;
  if (error == cudaErrorMemoryAllocation)
    message += " (the GPU has too little free memory for this model and batch size: lower the batch size, "
               "close other GPU programs, or train on the CPU)";
  else if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice)
    message += " (install or update the NVIDIA driver, or train on the CPU)";
  else if (error == cudaErrorNoKernelImageForDevice || error == cudaErrorUnsupportedPtxVersion)
    message += " (this build of NN Studio has no code for this GPU; update the NVIDIA driver or train on the CPU)";
  // a sticky error (a kernel fault) leaves the context unusable until the process resets it: clear
  // what can be cleared so that a later run on the CPU, or a retry, starts clean
  cudaGetLastError();
  throw EngineError(message);
}

}  // namespace

std::string gibText(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(1ull << 30));
  return text;
}

void gpuMemory(size_t& freeBytes, size_t& totalBytes) {
  freeBytes = totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess) {
    cudaGetLastError();
    freeBytes = totalBytes = 0;
  }
}

[[noreturn]] void throwCudaError(cudaError_t error, const char* what) { throwWith(error, what, ""); }

[[noreturn]] void throwAllocationError(cudaError_t error, const char* what, size_t bytes) {
  std::string detail;
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky, but clear it before asking the driver again
    size_t freeBytes = 0, totalBytes = 0;
    gpuMemory(freeBytes, totalBytes);
    detail = ": " + gibText(double(bytes)) + " asked for";
    if (totalBytes > 0) detail += ", " + gibText(double(freeBytes)) + " free of " + gibText(double(totalBytes));
  }
  throwWith(error, what, detail);
}

bool deviceAvailable() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error here
    return false;
  }
  return count > 0;
}

std::vector<DeviceInfo> listDevices() {
  std::vector<DeviceInfo> devices;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    DeviceInfo info;
    info.kind = DeviceKind::CUDA;
    info.index = i;
    info.name = prop.name;
    info.memoryBytes = int64_t(prop.totalGlobalMem);
    info.computeMajor = prop.major;
    info.computeMinor = prop.minor;
    devices.push_back(info);
  }
  return devices;
}

}  // namespace nnstudio::cuda
