// Data-parallel training's share of an epoch (issue 17): the one-device order (epoch_order.h) dealt to
// `ranks` devices so that a run is reproducible for a given device count and each global step reads one
// contiguous block of the one-device order. Global step s reads order[s * ranks * batch, ...): device r
// takes the r-th `batch` of it. The last global step's m remaining samples are split as evenly as
// possible (sizes differ by at most 1); with m < ranks, those m samples sit this epoch out (every device
// must take part in every step's all-reduce with at least one sample, and the shuffle differs next epoch).
#pragma once

#include <cstdint>
#include <vector>

namespace nnstudio {

// Global steps of an epoch of `count` samples: every device runs this many.
int64_t dataParallelSteps(int64_t count, int batch, int ranks);

// How many samples device `rank` reads an epoch (rankOrder's size, without an order).
int64_t rankSamples(int64_t count, int batch, int ranks, int rank);

// Device `rank`'s samples in its step order: steps of `batch` (its last one possibly smaller), ready for
// TrainingSession::beginEpoch with that batch size.
std::vector<uint32_t> rankOrder(const std::vector<uint32_t>& order, int batch, int ranks, int rank);

}  // namespace nnstudio
