// NCCL loaded at run time (src/cuda/nccl_library.h): a library with NCCL's calls and a recent version loads
// and its calls work through the resolved pointers; one too old, one without NCCL's calls and a missing one
// are refused with one line that says what to install. Stand-ins (fake_nccl.cpp) play libnccl.so.2.
#include <cstdio>
#include <string>
#include <vector>

#include "cuda/nccl_library.h"
#include "test_util.h"

using namespace nnstudio::cuda;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void checkVersionText() {
  std::printf("version numbers\n");
  CHECK(ncclVersionText(21903) == "2.19.3");
  CHECK(ncclVersionText(21000) == "2.10.0");
  CHECK(ncclVersionText(2708) == "2.7.8");
}

void checkLoads() {
  std::printf("a current library\n");
  std::string why;
  const std::unique_ptr<const NcclLibrary> nccl = loadNcclLibrary(FAKE_NCCL, &why);
  CHECK_MSG(nccl != nullptr, ("loads: " + why).c_str());
  if (!nccl) return;
  CHECK(nccl->version == 21903);
  std::vector<float> send = {1, 2, 3}, receive(3, 0.0f);
  CHECK(nccl->allReduce(send.data(), receive.data(), 3, kNcclFloat32, kNcclAvg, nullptr, nullptr) == kNcclSuccess);
  CHECK(receive == send);
  NcclUniqueId id{};
  CHECK(nccl->getUniqueId(&id) == kNcclSuccess && id.internal[127] == 7);
  CHECK(std::string(nccl->getErrorString(NcclResult(3))) == "fake NCCL error");
  CHECK(nccl->commAbort != nullptr && nccl->commAbort(nullptr) == kNcclSuccess);
}

void checkRefusals() {
  std::printf("refused, with what to do\n");
  std::string why;
  CHECK(loadNcclLibrary(FAKE_NCCL_OLD, &why) == nullptr);
  CHECK_MSG(contains(why, "is NCCL 2.7.8; data-parallel training needs 2.10.0 or newer") && contains(why, "libnccl2"), why.c_str());
  why.clear();
  CHECK(loadNcclLibrary("/nonexistent/libnccl.so.2", &why) == nullptr);
  CHECK_MSG(contains(why, "NCCL not found (") && contains(why, "NNSTUDIO_NCCL_LIBRARY"), why.c_str());
  why.clear();
  CHECK(loadNcclLibrary("libm.so.6", &why) == nullptr);  // a library without NCCL's calls
  CHECK_MSG(contains(why, "libm.so.6 has no ncclGetVersion"), why.c_str());
  // the process's own: loaded or refused with the install hint, never a crash
  why.clear();
  const NcclLibrary* system = ncclLibrary(&why);
  CHECK_MSG(system != nullptr || contains(why, "libnccl2"), ("libnccl.so.2 on this machine: " + (system ? ncclVersionText(system->version) : why)).c_str());
}

}  // namespace

int main() {
  checkVersionText();
  checkLoads();
  checkRefusals();
  return nnstudio_test::summary();
}
