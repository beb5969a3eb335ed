// Probes of our cluster kernels on the current device, run once per device while its DeviceCaps are made
// (device_caps.cu): the largest cluster each kernel co-schedules with its own threads and shared memory.
// They also set the kernel attributes that launch needs in this device's context.
#pragma once

#include <cstddef>

namespace nnstudio::cuda {

// gemm.cu's split-K: 1 (no clusters: no sm_90 code loaded, or the GPU cannot co-schedule 8), 8 or 16.
int gemmClusterLimit(bool clusterLaunch);
// batchnorm_cluster.cu: 1 (no clusters), 2 .. 16 blocks of 512 threads.
int batchnormClusterLimit(bool clusterLaunch);
// dense_head.cu: opts its kernels into `sharedBytes` of dynamic shared memory; 1 .. 16 blocks.
int denseHeadClusterLimit(size_t sharedBytes, bool clusterLaunch);

}  // namespace nnstudio::cuda
