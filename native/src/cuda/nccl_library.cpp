#include "cuda/nccl_library.h"

#include <cstdlib>
#include <memory>
#include <mutex>

#if defined(_WIN32)
// NCCL is Linux-only; a Windows build reports it missing.
#else
#include <dlfcn.h>
#endif

namespace nnstudio::cuda {

namespace {

const char* const kInstallHint =
    "install NVIDIA's libnccl2 package (apt install libnccl2), or `pip install nvidia-nccl-cu12` and put its "
    "nvidia/nccl/lib on LD_LIBRARY_PATH, or set NNSTUDIO_NCCL_LIBRARY to libnccl.so.2's path";

template <class Fn>
bool resolve(void* handle, const char* name, Fn& fn, std::string* why, const std::string& file) {
#if defined(_WIN32)
  (void)handle;
#else
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
#endif
  if (fn) return true;
  if (why) *why = file + " has no " + name + " (not an NCCL library?)";
  return false;
}

}  // namespace

std::string ncclVersionText(int version) {
  // NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z from 2.9 on; X*1000 + Y*100 + Z before
  const bool newScheme = version >= 20900;
  const int major = newScheme ? version / 10000 : version / 1000;
  const int minor = newScheme ? (version % 10000) / 100 : (version % 1000) / 100;
  const int patch = version % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::unique_ptr<const NcclLibrary> loadNcclLibrary(const std::string& file, std::string* why) {
#if defined(_WIN32)
  if (why) *why = "NCCL is not available on Windows";
  return nullptr;
#else
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    if (why) *why = "NCCL not found (" + std::string(error ? error : file) + "): " + kInstallHint;
    return nullptr;
  }
  auto library = std::make_unique<NcclLibrary>();
  library->path = file;
  NcclLibrary& l = *library;
  if (!resolve(handle, "ncclGetVersion", l.getVersion, why, file) ||
      !resolve(handle, "ncclGetErrorString", l.getErrorString, why, file) ||
      !resolve(handle, "ncclGetUniqueId", l.getUniqueId, why, file) ||
      !resolve(handle, "ncclCommInitAll", l.commInitAll, why, file) ||
      !resolve(handle, "ncclCommInitRank", l.commInitRank, why, file) ||
      !resolve(handle, "ncclCommDestroy", l.commDestroy, why, file) ||
      !resolve(handle, "ncclCommAbort", l.commAbort, why, file) ||
      !resolve(handle, "ncclAllReduce", l.allReduce, why, file) ||
      !resolve(handle, "ncclGroupStart", l.groupStart, why, file) ||
      !resolve(handle, "ncclGroupEnd", l.groupEnd, why, file)) {
    dlclose(handle);
    return nullptr;
  }
  if (l.getVersion(&l.version) != kNcclSuccess || l.version < kMinNcclVersion) {
    if (why)
      *why = file + " is NCCL " + ncclVersionText(l.version) + "; data-parallel training needs " +
             ncclVersionText(kMinNcclVersion) + " or newer: " + kInstallHint;
    dlclose(handle);
    return nullptr;
  }
  return library;
#endif
}

const NcclLibrary* ncclLibrary(std::string* why) {
  static std::once_flag once;
  static std::unique_ptr<const NcclLibrary> library;
  static std::string reason;
  std::call_once(once, [] {
    const char* chosen = std::getenv("NNSTUDIO_NCCL_LIBRARY");
    library = loadNcclLibrary(chosen && *chosen ? chosen : "libnccl.so.2", &reason);
  });
  if (!library && why) *why = reason;
  return library.get();
}

}  // namespace nnstudio::cuda
