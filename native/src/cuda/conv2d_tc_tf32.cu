// The tensor-core convolution's instances in plain TF32 products (conv2d_tc_kernels.cuh).
#include "cuda/conv2d_tc_kernels.cuh"

// A pass without this arithmetic's instructions compiles the kernels empty, leaving device helpers unreferenced
// there: expected, not worth a warning.
#pragma nv_diag_suppress 177

namespace nnstudio::cuda::conv_tc {

NNSTUDIO_CONV_TC_TILES(, TcMath::Tf32)

}  // namespace nnstudio::cuda::conv_tc
