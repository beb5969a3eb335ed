// One GPU's session of a run, alone or as one rank of a data-parallel run (data_parallel.cu): the rank
// reads its share of each epoch (train/partition.h), averages its gradients with the other ranks' through
// NCCL inside its captured steps, and draws its augmentation and dropout from a seed of its own.
#pragma once

#include <memory>
#include <string>

#include "cuda/nccl_library.h"
#include "train/session.h"

namespace nnstudio::cuda {

struct RankSetup {
  int rank = 0, ranks = 1;
  int64_t epochSamples = 0;           // the samples of an epoch this rank reads; 0: all of the data
  const NcclLibrary* nccl = nullptr;  // ranks > 1
  NcclComm comm = nullptr;            // this rank's communicator (ranks > 1)
};

// On the calling thread's current GPU: throws (saying what to do) when the run does not fit in its free memory.
void checkRankFits(const SessionSetup& setup, const std::string& deviceName);

// On the calling thread's current GPU: allocates the run and captures its steps (with ranks > 1, every rank
// must do this at the same time, one thread each: the captured all-reduce is a collective). checkRankFits first.
std::unique_ptr<TrainingSession> openRankSession(const SessionSetup& setup, const std::string& deviceName,
                                                 const RankSetup& rank);

// A data-parallel run over `devices` (one thread per GPU), `nccl` loaded.
std::unique_ptr<TrainingSession> openDataParallelSession(const SessionSetup& setup, const std::vector<int>& devices,
                                                         const NcclLibrary& nccl);

}  // namespace nnstudio::cuda
