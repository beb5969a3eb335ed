// A value per GPU, made once by the first thread that asks for that GPU (others wait for it), then read
// without a lock. DeviceCaps lives in one (device_caps.cu), and so does every per-kernel, per-device
// setting (a kernel attribute must be set in each device's context). Plain C++: no CUDA here, so the
// CPU tests check it with fake devices (tests/test_kernel_choice.cpp).
#pragma once

#include <mutex>
#include <string>

#include "nnstudio/engine.h"

namespace nnstudio::cuda {

inline constexpr int kMaxDevices = 64;

template <class T>
class PerDevice {
 public:
  // The value of `device`, made by make(device) the first time any thread asks for it. If make throws,
  // nothing is stored and the next call tries again.
  template <class Make>
  const T& get(int device, Make&& make) {
    if (device < 0 || device >= kMaxDevices)
      throw EngineError("CUDA device " + std::to_string(device) + " is beyond the " +
                              std::to_string(kMaxDevices) + " the engine supports");
    Slot& slot = slots_[device];
    std::call_once(slot.once, [&] { slot.value = make(device); });
    return slot.value;
  }

 private:
  struct Slot {
    std::once_flag once;
    T value{};
  };
  Slot slots_[kMaxDevices];
};

}  // namespace nnstudio::cuda
