// conv2d's forward and input-gradient implicit GEMMs on the tensor cores: the launchers, which pick the
// instances of the run's arithmetic (the kernel and its tiles: conv2d_tc_kernels.cuh; each arithmetic's
// instances in their own file). Launchers only enqueue.
#include "cuda/conv2d_tc.h"

#include <vector>

#include "cuda/conv2d_tc_kernels.cuh"

namespace nnstudio::cuda {

namespace {

using conv_tc::launchTile;

template <int MODE>
void dispatchTc(cudaStream_t stream, const ConvGemmArgs& a, const ConvTcTile& tile, TcMath math) {
  switch (math) {
    case TcMath::Tf32x3: return launchTile<MODE, TcMath::Tf32x3>(stream, a, tile);
    case TcMath::Tf32: return launchTile<MODE, TcMath::Tf32>(stream, a, tile);
    case TcMath::Bf16: return launchTile<MODE, TcMath::Bf16>(stream, a, tile);
    case TcMath::Fp16: return launchTile<MODE, TcMath::Fp16>(stream, a, tile);
  }
}

}  // namespace

// ---- launchers (conv2d.cu has checked the activation and the sizes) ----

void conv2d_tc_forward(cudaStream_t stream, const ConvTcTile& tile, TcMath math, float* out, const float* in,
                       const float* weight, const float* bias, int N, const ConvGeometry& g, ActivationFn act,
                       float alpha) {
  dispatchTc<kForward>(stream, convForwardGemm(out, in, weight, bias, N, g, act, alpha, 2), tile, math);
}

void conv2d_tc_backward_input(cudaStream_t stream, const ConvTcTile& tile, TcMath math, float* dIn, const float* dOut,
                              const float* weight, const float* in, int N, const ConvGeometry& g, ActivationFn inAct,
                              float inAlpha) {
  const ConvGemmArgs a = convInputGemm(dIn, dOut, weight, in, N, g, inAct, inAlpha, 2);
  if (g.stride == 1) return dispatchTc<kInput>(stream, a, tile, math);
  // one launch per phase; positions that no tap reaches (a kernel smaller than the stride) keep a zero
  // gradient, from one fill first (zero times any gate is zero)
  std::vector<ConvGemmArgs> phases;
  bool untapped = false;
  for (int ry = 0; ry < g.stride; ++ry)
    for (int rx = 0; rx < g.stride; ++rx) {
      ConvGemmArgs phase;
      bool taps = false;
      if (!convInputPhaseGemm(phase, a, g, N, ry, rx, taps)) continue;
      if (taps) phases.push_back(phase);
      else untapped = true;
    }
  if (untapped)
    check(cudaMemsetAsync(dIn, 0, sizeof(float) * size_t(N) * size_t(g.C) * size_t(g.H) * size_t(g.W), stream),
          "conv2d input gradient (positions no tap reaches)");
  for (const ConvGemmArgs& phase : phases) dispatchTc<kInputPhase>(stream, phase, tile, math);
}

}  // namespace nnstudio::cuda
