// Dense (fully connected) layer on the GPU: every pass is one gemm() launch (gemm.cu), the bias,
// activation and input-gradient gate fused into its epilogue.
//   forward          out (N, units)     = act(in (N, inputs) . W^T + b)        A . B^T
//   weight gradient  dW (units, inputs) = dOut^T . in, dBias = sums of dOut    A^T . B, + row sums of A^T
//   input gradient   dIn (N, inputs)    = (dOut . W) * inAct'(in)               A . B
// Split-K (a long K with few output tiles) happens inside gemm() through thread-block clusters, with a
// fixed-order reduction in distributed shared memory, so no pass needs a workspace and every result is
// deterministic; a layer of few units over a long input (10816 -> 10) has its forward and weight gradient
// streamed that way too (gemm_stream.cu).
#include "cuda/check.h"
#include "cuda/gemm_detail.h"
#include "cuda/kernels.h"

namespace nnstudio::cuda {

void dense_forward(cudaStream_t stream, float* out, const float* in, const float* weight, const float* bias, int N,
                   int inputs, int units, ActivationFn act, float alpha) {
  GemmEpilogue e;
  e.bias = bias;
  e.act = act;
  e.alpha = alpha;
  gemm(stream, false, true, N, units, inputs, in, weight, out, e);
}

size_t dense_weights_workspace(int /*N*/, int /*units*/) { return 0; }

void dense_backward_weights(cudaStream_t stream, float* dWeight, float* dBias, const float* dOut, const float* in,
                            int N, int inputs, int units, float* /*workspace*/) {
  detail::gemmWithRowSums(stream, units, inputs, N, dOut, in, dWeight, dBias);
}

void dense_backward_input(cudaStream_t stream, float* dIn, const float* dOut, const float* weight, const float* in,
                          int N, int inputs, int units, ActivationFn inAct, float inAlpha) {
  GemmEpilogue e;
  if (inAct != ActivationFn::Linear && inAct != ActivationFn::Softmax) {
    e.gate = in;
    e.gateAct = inAct;
    e.gateAlpha = inAlpha;
  }
  gemm(stream, false, false, N, inputs, units, dOut, weight, dIn, e);
}

}  // namespace nnstudio::cuda
