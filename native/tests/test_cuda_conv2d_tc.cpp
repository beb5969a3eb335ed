// The tensor-core conv2d passes (cuda/conv2d_tc.cu: TF32 mma with 3xTF32 compensation) against the CPU
// reference (cpu/conv2d.cpp) and the SIMT kernel: forward (linear, ReLU, sigmoid) and input gradient
// (ungated, ReLU-gated; stride 1 and the strided gather) on keras conv2's shape, stride 2, 'same' and
// 'full' padding, and M, J, K that are not multiples of the tiles. Tolerance as test_cuda_conv2d:
// max |gpu - cpu| <= 1e-4 * (1 + max |cpu|). Outputs are poisoned with NaN before every launch; the
// tensor-core path is forced (the chooser's scoped override, NNSTUDIO_CONV_TC=1) and must be the
// chosen path;
// a second run must give the same bits, and so must every tile variant. 1xTF32's error is printed for
// information.
// `test_cuda_conv2d_tc --bench` prints µs of the SIMT kernel, 3xTF32 and 1xTF32 on keras' conv passes.
#include <cstdio>

#ifdef NNSTUDIO_WITH_CUDA

#include <algorithm>
#include <string>
#include <vector>

#include "conv_test_case.h"  // the CPU layers, cuda_test_util.h, test_util.h, spec/model.h
#include "cuda/device_caps.h"
#include "cuda/kernel_choice.h"
#include "cuda/kernels.h"
#include "cuda_timing.h"

using namespace nnstudio;
using namespace nnstudio::test;
using Case = nnstudio::test::ConvCase;
using cpu::ConvGeometry;
using cuda::ConvTcMode;

namespace {

// The tensor-core mode (and tile variant) forced while `run` runs; Auto = the environment's choice.
template <class Run>
void withTc(ConvTcMode mode, int variant, Run&& run) {
  cuda::ScopedKernelOverride force([&](cuda::KernelOverrides& o) {
    o.convTc = mode;
    o.convTcVariant = variant;
  });
  run();
}

// does the chooser send this pass to the tensor cores under the overrides in force?
bool onTensorCores(cuda::ConvPass pass, int N, const ConvGeometry& g) {
  const cuda::ConvKernel k = cuda::chooseConvPass(cuda::currentDeviceCaps(), cuda::kernelOverrides(), pass, N, g).kernel;
  return k == cuda::ConvKernel::TensorCore3xTf32 || k == cuda::ConvKernel::TensorCoreTf32;
}

// the forward / input gradient through the engine's launcher, when it runs on the tensor cores
bool tcForward(float* out, const float* in, const float* weight, const float* bias, int N, const ConvGeometry& g,
               ActivationFn act) {
  if (!onTensorCores(cuda::ConvPass::Forward, N, g)) return false;
  cuda::conv2d_forward(nullptr, out, in, weight, bias, N, g, act, 0.0f);
  return true;
}
bool tcInput(float* dIn, const float* dOut, const float* weight, const float* in, int N, const ConvGeometry& g,
             ActivationFn gate) {
  if (!onTensorCores(cuda::ConvPass::InputGradient, N, g)) return false;
  cuda::conv2d_backward_input(nullptr, dIn, dOut, weight, in, N, g, gate, 0.0f);
  return true;
}

void runCase(cpu::ThreadPool& pool, const Case& c, uint64_t seed) {
  const ConvGeometry g = geometryOf(c);
  const std::string name = describe(c, g);
  std::printf("%s\n", name.c_str());
  const ConvTensors t(c, g, seed);
  const size_t inSize = t.inSize, outSize = t.outSize;

  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  DeviceVector<float> dIn(t.in), dWeight(t.weight), dBias(t.bias), dDOut(t.dOut);
  DeviceVector<float> gOut(outSize), gDIn(inSize);

  // forward: 3xTF32 against the CPU and the SIMT kernel; bit-identical on a second run
  std::vector<float> cpuOut(outSize);
  const ActivationFn acts[] = {ActivationFn::Linear, ActivationFn::ReLU, ActivationFn::Sigmoid};
  for (ActivationFn act : acts) {
    const std::string an = activationName(act);
    cpu::conv2d_forward(pool, scratch, cpuOut.data(), t.in.data(), t.weight.data(), t.bias.data(), c.N, g, act, 0.0f);
    std::vector<float> tc;
    withTc(ConvTcMode::On, 0, [&] {
      poison(gOut);
      CHECK_MSG(tcForward(gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act),
                name + " forward " + an + " ran on the tensor cores");
      tc = gOut.download();
      CHECK_PARITY(name + " forward " + an + " (3xTF32 vs CPU)", tc, cpuOut);
      poison(gOut);
      cuda::conv2d_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act, 0.0f);
      CHECK_MSG(sameBits(gOut.download(), tc), name + " forward " + an + " bit-identical through conv2d_forward");
    });
    withTc(ConvTcMode::Off, 0, [&] {
      poison(gOut);
      cuda::conv2d_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act, 0.0f);
      CHECK_PARITY(name + " forward " + an + " (3xTF32 vs SIMT)", tc, gOut.download());
    });
    if (act == ActivationFn::Linear) {
      withTc(ConvTcMode::Tf32, 0, [&] {  // only where the tensor cores pay
        poison(gOut);
        if (tcForward(gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act)) {
          const Comparison r = compareToCpu(gOut.download(), cpuOut);
          std::printf("  info: 1xTF32 forward max |err| %.3g (3xTF32 tolerance %.3g)\n", r.error(), r.tol);
        }
      });
    }
  }

  // input gradient (CPU with Linear: dOut is already dLoss/d(pre-activation)), ungated and ReLU-gated
  const std::vector<float> cpuDIn = cpuConvGradients(pool, scratch, c.N, g, t).dIn;
  const ActivationFn gates[] = {ActivationFn::Linear, ActivationFn::ReLU};
  for (ActivationFn gate : gates) {
    const char* gn = gate == ActivationFn::Linear ? "ungated" : "gate relu";
    std::vector<float> ref(inSize);
    cpu::activation_backward(ref.data(), cpuDIn.data(), t.in.data(), 1, int64_t(inSize), gate, 0.0f);
    std::vector<float> tc;
    withTc(ConvTcMode::On, 0, [&] {
      poison(gDIn);
      CHECK_MSG(tcInput(gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate),
                name + " dIn " + gn + " ran on the tensor cores");
      tc = gDIn.download();
      CHECK_PARITY(name + " dIn " + gn + " (3xTF32 vs CPU)", tc, ref);
      poison(gDIn);
      cuda::conv2d_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate, 0.0f);
      CHECK_MSG(sameBits(gDIn.download(), tc), name + " dIn " + gn + " bit-identical through conv2d_backward_input");
    });
    withTc(ConvTcMode::Off, 0, [&] {
      poison(gDIn);
      cuda::conv2d_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate, 0.0f);
      CHECK_PARITY(name + " dIn " + gn + " (3xTF32 vs SIMT)", tc, gDIn.download());
    });
    if (gate == ActivationFn::Linear) {
      withTc(ConvTcMode::Tf32, 0, [&] {
        poison(gDIn);
        if (tcInput(gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate)) {
          const Comparison r = compareToCpu(gDIn.download(), ref);
          std::printf("  info: 1xTF32 dIn max |err| %.3g (3xTF32 tolerance %.3g)\n", r.error(), r.tol);
        }
      });
    }
  }
}

// Every tile variant of conv2d_tc.cu (test hook) against the CPU, and bit-identical to the default:
// each tile shape adds the same products in the same order.
void runVariants(cpu::ThreadPool& pool, const Case& c, uint64_t seed) {
  const ConvGeometry g = geometryOf(c);
  const std::string name = describe(c, g) + " variants";
  std::printf("%s\n", name.c_str());
  const ConvTensors t(c, g, seed);
  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  const CpuConvGradients cpuGrad = cpuConvGradients(pool, scratch, c.N, g, t);
  DeviceVector<float> dIn(t.in), dWeight(t.weight), dBias(t.bias), dDOut(t.dOut), gOut(t.outSize), gDIn(t.inSize);
  std::vector<float> out0, din0;
  for (int variant = 0; variant <= 6; ++variant) {
    const std::string v = name + " " + std::to_string(variant);
    poison(gOut);
    poison(gDIn);
    bool ran = false;
    withTc(ConvTcMode::On, variant, [&] {
      ran = tcForward(gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, ActivationFn::Linear) &&
            tcInput(gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, ActivationFn::Linear);
    });
    CHECK_MSG(ran, v + " ran on the tensor cores");
    const std::vector<float> out = gOut.download(), din = gDIn.download();
    CHECK_PARITY(v + " forward (vs CPU)", out, cpuGrad.out);
    CHECK_PARITY(v + " dIn (vs CPU)", din, cpuGrad.dIn);
    if (variant == 0) {
      out0 = out;
      din0 = din;
    } else {
      CHECK_MSG(sameBits(out, out0) && sameBits(din, din0), v + " bit-identical to the default tiles");
    }
  }
}

// ---- --bench: SIMT vs 3xTF32 vs 1xTF32 on keras_cnn's conv passes (batch 128) ----

int bench() {
  const Case cases[] = {
      {"keras conv2", 128, 32, 26, 26, 64, 3, 3, 1, 'v'},
      {"keras conv1", 128, 1, 28, 28, 32, 3, 3, 1, 'v'},
      {"C64 F64 s 3x3", 128, 64, 14, 14, 64, 3, 3, 1, 's'},
      {"C32 F64 s2", 128, 32, 26, 26, 64, 3, 3, 2, 's'},
      {"fast conv2", 256, 24, 12, 12, 32, 5, 5, 1, 'v'},
      {"fast conv2 128", 128, 24, 12, 12, 32, 5, 5, 1, 'v'},
  };
  cudaStream_t stream;
  cudaOk(cudaStreamCreate(&stream), "stream");
  struct Variant {
    const char* name;
    ConvTcMode mode;
    int variant;
  };
  const Variant variants[] = {{"SIMT", ConvTcMode::Off, 0},
                              {"3xTF32", ConvTcMode::On, 0},
                              {"3x v1 x128", ConvTcMode::On, 1},
                              {"3x v2 x64", ConvTcMode::On, 2},
                              {"3x v3 BK32", ConvTcMode::On, 3},
                              {"3x v4 S4", ConvTcMode::On, 4},
                              {"3x v5", ConvTcMode::On, 5},
                              {"3x v6 minb", ConvTcMode::On, 6},
                              {"1xTF32*", ConvTcMode::Tf32, 0}};
  std::printf("microseconds per launch, inside a CUDA graph of 20 (median of 50); forward ReLU, dIn ReLU-gated\n"
              "(* 1xTF32 only where the tensor cores pay: elsewhere it is the SIMT kernel)\n");
  std::printf("%-14s %-12s %9s %9s\n", "shape", "kernel", "fwd", "dIn");
  for (const Case& c : cases) {
    const ConvGeometry g = geometryOf(c);
    ConvBenchTensors d(c, g);
    for (const Variant& v : variants) {
      cuda::ScopedKernelOverride force([&](cuda::KernelOverrides& o) {
        o.convTc = v.mode;
        o.convTcVariant = v.variant;
      });
      auto fwd = [&] {
        cuda::conv2d_forward(stream, d.out.ptr, d.in.ptr, d.weight.ptr, d.bias.ptr, c.N, g, ActivationFn::ReLU, 0);
      };
      auto di = [&] {
        cuda::conv2d_backward_input(stream, d.dIn.ptr, d.dOut.ptr, d.weight.ptr, d.in.ptr, c.N, g, ActivationFn::ReLU, 0);
      };
      const float tf = timeLaunches(fwd, stream, true), ti = timeLaunches(di, stream, true);
      std::printf("%-14s %-12s %9.1f %9.1f\n", c.name.c_str(), v.name, tf, ti);
    }
  }
  cudaOk(cudaStreamDestroy(stream), "stream");
  return 0;
}

// --profile: keras conv2's passes once each (SIMT, 3xTF32, 1xTF32), for ncu
int profile() {
  const Case c{"keras conv2", 128, 32, 26, 26, 64, 3, 3, 1, 'v'};
  const ConvGeometry g = geometryOf(c);
  ConvBenchTensors d(c, g);
  const ConvTcMode modes[] = {ConvTcMode::Off, ConvTcMode::On, ConvTcMode::Tf32};
  for (ConvTcMode m : modes) {
    cuda::ScopedKernelOverride force([&](cuda::KernelOverrides& o) { o.convTc = m; });
    cuda::conv2d_forward(nullptr, d.out.ptr, d.in.ptr, d.weight.ptr, d.bias.ptr, c.N, g, ActivationFn::ReLU, 0);
    cuda::conv2d_backward_input(nullptr, d.dIn.ptr, d.dOut.ptr, d.weight.ptr, d.in.ptr, c.N, g, ActivationFn::ReLU, 0);
  }
  cudaOk(cudaDeviceSynchronize(), "profile");
  return 0;
}

bool deviceHasTf32() {
  int device = 0, major = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 8;
}

}  // namespace

int main(int argc, char** argv) {
  if (!haveCudaDevice()) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  if (!deviceHasTf32()) {
    std::printf("skipped: no TF32 tensor cores (compute capability < 8.0)\n");
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--bench") return bench();
  if (argc > 1 && std::string(argv[1]) == "--profile") return profile();

  cpu::ThreadPool pool(0);
  const Case cases[] = {
      {"keras conv2", 32, 32, 26, 26, 64, 3, 3, 1, 'v'},
      {"keras conv1 (K=9)", 8, 1, 28, 28, 32, 3, 3, 1, 'v'},
      {"stride 2 same", 6, 32, 13, 15, 40, 3, 3, 2, 's'},
      {"stride 2 valid 4x4", 5, 20, 16, 17, 33, 4, 4, 2, 'v'},
      {"stride 3 full 3x2", 3, 17, 10, 11, 36, 3, 2, 3, 'f'},
      {"same 5x5 (odd J)", 3, 35, 9, 11, 70, 5, 5, 1, 's'},
      {"same 4x2 (asymmetric pads)", 4, 48, 7, 9, 96, 4, 2, 1, 's'},
      {"full 3x3 M=33", 3, 33, 7, 7, 33, 3, 3, 1, 'f'},
      {"F=130 C=5 (3 row tiles)", 2, 5, 12, 13, 130, 3, 3, 1, 'v'},
      {"1x1 C=64", 4, 64, 9, 9, 48, 1, 1, 1, 'v'},
      {"small M=4 C=3", 2, 3, 8, 8, 4, 3, 3, 1, 's'},
      {"N=1 OH=1", 1, 16, 5, 5, 40, 5, 5, 1, 'v'},
      {"fast_mnist conv2 (dIn M=24)", 8, 24, 12, 12, 32, 5, 5, 1, 'v'},
  };
  uint64_t seed = 101;
  for (const Case& c : cases) runCase(pool, c, seed++);
  const Case variantCases[] = {
      {"keras conv2", 8, 32, 26, 26, 64, 3, 3, 1, 'v'},
      {"same 5x5 (odd J)", 3, 35, 9, 11, 70, 5, 5, 1, 's'},
      {"stride 2 same", 6, 32, 13, 15, 40, 3, 3, 2, 's'},
      {"fast_mnist conv2 (dIn M=24)", 8, 24, 12, 12, 32, 5, 5, 1, 'v'},
  };
  for (const Case& c : variantCases) runVariants(pool, c, seed++);
  return nnstudio_test::summary();
}

#else
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
