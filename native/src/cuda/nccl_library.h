// NCCL, loaded at run time (issue 17: data-parallel training). The engine links no NCCL: `dlopen` finds
// libnccl.so.2 (NVIDIA's libnccl2 package, or the nvidia-nccl wheel's lib folder on LD_LIBRARY_PATH, or the
// file NNSTUDIO_NCCL_LIBRARY names), and a machine without it trains on one GPU, saying why. Only the calls
// data-parallel training makes are resolved. Host code without CUDA types (streams are void*), so it builds
// and is tested where there is no CUDA.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace nnstudio::cuda {

// NCCL's ABI (nccl.h, stable since 2.0): opaque communicators, a 128-byte unique id, int enums.
using NcclComm = struct ncclComm*;
struct NcclUniqueId {
  char internal[128];
};
enum NcclResult : int { kNcclSuccess = 0 };
enum NcclDataType : int { kNcclFloat32 = 7 };
enum NcclRedOp : int { kNcclSum = 0, kNcclAvg = 4 };  // ncclAvg: NCCL >= 2.10

// The oldest NCCL used: 2.10 (ncclAvg; CUDA graph capture of collectives came with 2.9).
constexpr int kMinNcclVersion = 21000;

struct NcclLibrary {
  std::string path;  // as loaded ("libnccl.so.2" or NNSTUDIO_NCCL_LIBRARY's file)
  int version = 0;   // NCCL's code: 2.19.3 -> 21903
  NcclResult (*getVersion)(int*) = nullptr;
  const char* (*getErrorString)(NcclResult) = nullptr;
  NcclResult (*getUniqueId)(NcclUniqueId*) = nullptr;
  NcclResult (*commInitAll)(NcclComm*, int, const int*) = nullptr;
  NcclResult (*commInitRank)(NcclComm*, int, NcclUniqueId, int) = nullptr;
  NcclResult (*commDestroy)(NcclComm) = nullptr;
  // ends a communicator's work at once, also one another thread is blocked in (a rank that failed leaves
  // the others waiting in a collective); the communicator is freed, not to be destroyed after
  NcclResult (*commAbort)(NcclComm) = nullptr;
  NcclResult (*allReduce)(const void*, void*, size_t, NcclDataType, NcclRedOp, NcclComm, void* stream) = nullptr;
  NcclResult (*groupStart)() = nullptr;
  NcclResult (*groupEnd)() = nullptr;
};

// "2.19.3" for 21903 (and the pre-2.9 scheme, 2708 -> "2.7.8").
std::string ncclVersionText(int version);

// Loads `file` (a name dlopen searches for, or a path) and resolves the calls; null with `why` set to one
// line for the user when it cannot be loaded, lacks a call or is older than kMinNcclVersion. Each call
// loads anew (tests); the engine uses ncclLibrary(). The library stays loaded for the process's life
// (no dlclose: communicators may outlive the object).
std::unique_ptr<const NcclLibrary> loadNcclLibrary(const std::string& file, std::string* why);

// The process's NCCL, loaded once: NNSTUDIO_NCCL_LIBRARY when set, else libnccl.so.2. Null with `why`.
const NcclLibrary* ncclLibrary(std::string* why);

}  // namespace nnstudio::cuda
