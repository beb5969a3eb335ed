// The batchnorm's kernels: a cluster per channel (one launch each way) or the two-pass kernels
// (kernel_choice.h, chooseBatchnormCluster).
#include <algorithm>
#include <cstdint>
#include <limits>

#include "cuda/kernel_choice.h"

namespace nnstudio::cuda {

int chooseBatchnormCluster(const DeviceCaps& caps, const KernelOverrides& o, int maxN, int C, int S) {
  const int largest = caps.batchnormMaxCluster;
  if (o.batchnormCluster == Switch::Off || largest < 2 || C < 1 || C > 65535) return 1;
  if (o.batchnormCluster == Switch::On) return largest;
  const int64_t values = int64_t(std::max(maxN, 1)) * S;  // a channel's
  const int64_t grid = o.batchnormClusterGrid > 0 ? o.batchnormClusterGrid : int64_t(kBatchnormClusterBlocksPerSm) * caps.sms;
  // loaded a value at a time (S % 4 != 0), large channels read faster on the two-pass kernels' wide grids
  const bool quads = S % 4 == 0 && o.batchnormQuads != Switch::Off;
  const int64_t most = o.batchnormClusterValues > 0 ? o.batchnormClusterValues
                       : quads                       ? std::numeric_limits<int64_t>::max()
                                                     : kBatchnormClusterMaxValues;
  if (values > most) return 1;
  int K = 1;
  while (2 * K <= largest && int64_t(C) * 2 * K <= grid && values / (2 * K) >= kBatchnormClusterMinValues) K *= 2;
  return K;
}

bool chooseBatchnormConvWgrad(const DeviceCaps& caps, const KernelOverrides& o, int maxN, const ConvGeometry& g) {
  if (o.batchnormConvWgrad == Switch::Off || o.batchnormQuads == Switch::Off) return false;
  if (g.C != 1 || g.kh != 3 || g.kw != 3 || g.stride != 1 || g.OW % 4 != 0 || g.OH < 1) return false;
  const int S = g.OH * g.OW;
  const int K = chooseBatchnormCluster(caps, o, maxN, g.F, S);
  if (K < 2) return false;
  return o.batchnormConvWgrad == Switch::On || int64_t(std::max(maxN, 1)) * S / K >= kBatchnormConvWgradMinValues;
}

}  // namespace nnstudio::cuda
