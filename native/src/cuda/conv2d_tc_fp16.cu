// The tensor-core convolution's instances in FP16 (also sm_75) products (conv2d_tc_kernels.cuh).
#include "cuda/conv2d_tc_kernels.cuh"

// A pass without this arithmetic's instructions compiles the kernels empty, leaving device helpers unreferenced
// there: expected, not worth a warning.
#pragma nv_diag_suppress 177

namespace nnstudio::cuda::conv_tc {

NNSTUDIO_CONV_TC_TILES(, TcMath::Fp16)

}  // namespace nnstudio::cuda::conv_tc
