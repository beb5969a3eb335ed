// The order in which an epoch visits the training samples, the same for every backend: a function of
// (seed, epoch) alone, so a resumed run recomputes it and never stores it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nnstudio {

// order (count): 0..count-1, shuffled (Fisher-Yates, seeded by seed and epoch) when `shuffle`.
void epochOrder(uint32_t* order, size_t count, bool shuffle, uint64_t seed, int epoch);

}  // namespace nnstudio
