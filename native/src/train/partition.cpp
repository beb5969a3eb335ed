#include "train/partition.h"

#include <algorithm>
#include <stdexcept>

namespace nnstudio {

namespace {

void checkArguments(int batch, int ranks) {
  if (batch < 1 || ranks < 1) throw std::invalid_argument("data-parallel partition: batch and ranks must be at least 1");
}

}  // namespace

int64_t dataParallelSteps(int64_t count, int batch, int ranks) {
  checkArguments(batch, ranks);
  const int64_t global = int64_t(batch) * ranks;
  const int64_t full = count / global, rest = count - full * global;
  return full + (rest >= ranks ? 1 : 0);
}

int64_t rankSamples(int64_t count, int batch, int ranks, int rank) {
  checkArguments(batch, ranks);
  if (rank < 0 || rank >= ranks) throw std::invalid_argument("data-parallel partition: rank out of range");
  const int64_t global = int64_t(batch) * ranks, full = count / global, rest = count - full * global;
  const int64_t last = rest >= ranks ? rest / ranks + (rank < rest % ranks ? 1 : 0) : 0;
  return full * batch + last;
}

std::vector<uint32_t> rankOrder(const std::vector<uint32_t>& order, int batch, int ranks, int rank) {
  checkArguments(batch, ranks);
  if (rank < 0 || rank >= ranks) throw std::invalid_argument("data-parallel partition: rank out of range");
  const int64_t count = int64_t(order.size()), global = int64_t(batch) * ranks;
  const int64_t full = count / global, rest = count - full * global;
  std::vector<uint32_t> mine;
  mine.reserve(size_t(full * batch + (rest + ranks - 1) / ranks));
  for (int64_t s = 0; s < full; ++s) {
    const auto begin = order.begin() + s * global + int64_t(rank) * batch;
    mine.insert(mine.end(), begin, begin + batch);
  }
  if (rest >= ranks) {  // the last step: `rest` samples, the first rest % ranks devices one more
    const int64_t base = rest / ranks, extra = rest % ranks;
    const int64_t offset = full * global + rank * base + std::min<int64_t>(rank, extra);
    const int64_t size = base + (rank < extra ? 1 : 0);
    mine.insert(mine.end(), order.begin() + offset, order.begin() + offset + size);
  }
  return mine;
}

}  // namespace nnstudio
