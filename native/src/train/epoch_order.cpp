// The epoch order (see epoch_order.h).
#include "train/epoch_order.h"

#include <utility>

#include "spec/rng.h"

namespace nnstudio {

void epochOrder(uint32_t* order, size_t count, bool shuffle, uint64_t seed, int epoch) {
  for (uint32_t i = 0; i < count; ++i) order[i] = i;
  if (!shuffle || count < 2) return;
  Rng rng(mixSeed(seed, uint64_t(epoch), 0x5EED));
  for (size_t i = count - 1; i > 0; --i) std::swap(order[i], order[rng.below(uint32_t(i + 1))]);
}

}  // namespace nnstudio
