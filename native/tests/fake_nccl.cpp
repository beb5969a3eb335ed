// A stand-in for libnccl.so.2 (test_nccl_library): NCCL's C entry points, doing nothing but answering.
// FAKE_NCCL_VERSION picks the version it reports (default 2.19.3).
#include <cstddef>
#include <cstring>

#ifndef FAKE_NCCL_VERSION
#define FAKE_NCCL_VERSION 21903
#endif

extern "C" {
struct ncclComm;
struct ncclUniqueIdFake {
  char internal[128];
};
int ncclGetVersion(int* version) {
  *version = FAKE_NCCL_VERSION;
  return 0;
}
const char* ncclGetErrorString(int) { return "fake NCCL error"; }
int ncclGetUniqueId(ncclUniqueIdFake* id) {
  std::memset(id->internal, 7, sizeof id->internal);
  return 0;
}
int ncclCommInitAll(ncclComm** comms, int count, const int*) {
  for (int i = 0; i < count; ++i) comms[i] = nullptr;
  return 0;
}
int ncclCommInitRank(ncclComm** comm, int, ncclUniqueIdFake, int) {
  *comm = nullptr;
  return 0;
}
int ncclCommDestroy(ncclComm*) { return 0; }
int ncclCommAbort(ncclComm*) { return 0; }
// "sum" over one rank: the result is the input
int ncclAllReduce(const void* send, void* receive, size_t count, int, int, ncclComm*, void*) {
  if (send != receive) std::memmove(receive, send, count * sizeof(float));
  return 0;
}
int ncclGroupStart() { return 0; }
int ncclGroupEnd() { return 0; }
}
