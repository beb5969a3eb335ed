// Device discovery and CUDA error messages. A machine without a driver or a GPU is normal (the CPU
// backend takes over); every CUDA failure becomes an EngineError with a message for the user.
#include <string>
#include <vector>

#include "cuda/check.h"

namespace nnstudio::cuda {

[[noreturn]] void throwCudaError(cudaError_t error, const char* what) {
  std::string message = std::string("CUDA error in ") + what + ": " + cudaGetErrorString(error);
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
