// Device discovery and backend selection. The CPU backend is always built; the CUDA backend plugs in
// through the functions src/cuda provides when the build has NNSTUDIO_WITH_CUDA.
#include <thread>

#include "cpu/backend.h"
#include "nnstudio/engine.h"

#ifdef NNSTUDIO_WITH_CUDA
namespace nnstudio::cuda {
// provided by src/cuda
bool deviceAvailable();
std::vector<DeviceInfo> listDevices();
std::unique_ptr<Backend> createBackend(int deviceIndex);
}  // namespace nnstudio::cuda
#endif

namespace nnstudio {

bool cudaAvailable() {
#ifdef NNSTUDIO_WITH_CUDA
  return cuda::deviceAvailable();
#else
  return false;
#endif
}

std::vector<DeviceInfo> listDevices() {
  std::vector<DeviceInfo> devices;
  devices.push_back(cpu::cpuDeviceInfo(0));
#ifdef NNSTUDIO_WITH_CUDA
  for (DeviceInfo& d : cuda::listDevices()) devices.push_back(std::move(d));
#endif
  return devices;
}

std::unique_ptr<Backend> createBackend(DeviceKind kind, int threads) {
  if (kind == DeviceKind::CPU) return std::make_unique<cpu::CpuBackend>(threads);
#ifdef NNSTUDIO_WITH_CUDA
  if (cuda::deviceAvailable()) return cuda::createBackend(0);
  throw EngineError("no CUDA device is available: no NVIDIA GPU was found (or its driver is missing)");
#else
  throw EngineError("no CUDA device is available: this build of NN Studio has no CUDA backend");
#endif
}

}  // namespace nnstudio
