// The direct conv2d kernels (cuda/conv2d_direct.cu) against the CPU reference (cpu/conv2d.cpp): forward
// with every elementwise activation and the input gradient gated by every elementwise activation, on
// the presets' small layers (seed000, seed002, LeNet) and on odd shapes (H, W, N not multiples of the
// tiles, 'same' with even kernels whose extra pad is bottom/right, 'full', channel counts that leave
// padding lanes; kh != kw must be refused, the implicit GEMM takes it). Every launch shape (filters x pixels per thread, rows per block) is forced
// once, then the engine's own launchers (conv2d_forward / conv2d_backward_input) are checked, and that
// two runs give the same bits. Outputs are poisoned with NaN before every launch.
// Tolerance: max |gpu - cpu| <= 1e-4 * (1 + max |cpu|) per tensor.
// `test_cuda_conv2d_direct --bench` prints µs per launch, direct vs implicit GEMM, per shape and pass.
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

namespace {

// max |gpu - cpu| <= 1e-4 (1 + max |cpu|); reports failures only (the case's summary line says ok) and
// keeps the worst max |err| / (1 + max |cpu|)
bool compare(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& cpu, double& worstRel) {
  const Comparison r = compareToCpu(gpu, cpu);
  worstRel = std::max(worstRel, r.maxErr / (1.0 + r.maxRef));
  if (!r.ok) reportComparison(what, r, __FILE__, __LINE__);
  return r.ok;
}

// The direct kernel forced with launch shape `s` (thresholds skipped, as NNSTUDIO_CONV_DIRECT_SHAPE with the
// chooser's scoped override): runs the pass through the engine's launcher and returns true when the chooser
// takes it there, else false and nothing runs.
bool directPass(cudaStream_t stream, const cuda::ConvDirectShape& s, cuda::ConvPass pass, float* dst, const float* src,
                const float* weight, const float* biasOrIn, int N, const ConvGeometry& g, ActivationFn act, float alpha) {
  cuda::ScopedKernelOverride force([&](cuda::KernelOverrides& o) {
    o.convDirect = cuda::Switch::On;
    o.convDirectShape = s;
  });
  if (cuda::chooseConvPass(cuda::currentDeviceCaps(), cuda::kernelOverrides(), pass, N, g).kernel != cuda::ConvKernel::Direct)
    return false;
  if (pass == cuda::ConvPass::Forward) cuda::conv2d_forward(stream, dst, src, weight, biasOrIn, N, g, act, alpha);
  else cuda::conv2d_backward_input(stream, dst, src, weight, biasOrIn, N, g, act, alpha);
  return true;
}
bool directForward(cudaStream_t stream, float* out, const float* in, const float* weight, const float* bias, int N,
                   const ConvGeometry& g, ActivationFn act, float alpha, const cuda::ConvDirectShape* s) {
  return directPass(stream, *s, cuda::ConvPass::Forward, out, in, weight, bias, N, g, act, alpha);
}
bool directInput(cudaStream_t stream, float* dIn, const float* dOut, const float* weight, const float* in, int N,
                 const ConvGeometry& g, ActivationFn act, float alpha, const cuda::ConvDirectShape* s) {
  return directPass(stream, *s, cuda::ConvPass::InputGradient, dIn, dOut, weight, in, N, g, act, alpha);
}

std::string shapeName(const cuda::ConvDirectShape& s) {
  return "ft" + std::to_string(s.ft) + " px" + std::to_string(s.px) + " splits" + std::to_string(s.splits) + " rows" +
         std::to_string(s.rows) + " blocks" + std::to_string(s.blocks);
}

const ActivationFn kActs[] = {ActivationFn::Linear,  ActivationFn::ReLU, ActivationFn::LeakyReLU,
                              ActivationFn::Sigmoid, ActivationFn::Tanh, ActivationFn::Softplus};

// every launch shape once: filters x pixels per thread, the planner's rows and a few forced ones
std::vector<cuda::ConvDirectShape> forcedShapes() {
  std::vector<cuda::ConvDirectShape> shapes;
  for (int ftpx : {41, 42, 44, 81, 82}) shapes.push_back({ftpx / 10, ftpx % 10, 1, 0, 0});
  shapes.push_back({4, 2, 0, 0, 0});   // the planner's splits and rows
  shapes.push_back({4, 2, 2, 0, 0});   // channel splits
  shapes.push_back({8, 1, 4, 0, 0});
  shapes.push_back({4, 4, 3, 0, 0});   // a split count that does not divide the channels
  shapes.push_back({4, 1, 8, 1, 0});
  shapes.push_back({8, 2, 1, 1, 0});   // one row per block
  shapes.push_back({4, 4, 2, 3, 0});   // three rows per block
  shapes.push_back({8, 1, 1, 0, 16});  // few blocks: many rows per block
  return shapes;
}

void runCase(cpu::ThreadPool& pool, const Case& c, uint64_t seed) {
  const ConvGeometry g = geometryOf(c);
  const std::string name = describe(c, g);
  const ConvTensors t(c, g, seed);
  const size_t inSize = t.inSize, outSize = t.outSize;
  const float alpha = 0.1f;

  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  DeviceVector<float> dIn(t.in), dWeight(t.weight), dBias(t.bias), dDOut(t.dOut);
  DeviceVector<float> gOut(outSize), gDIn(inSize);
  const std::vector<cuda::ConvDirectShape> shapes = forcedShapes();
  int launched = 0, checks = 0;
  double worst = 0;

  // forward, every activation: each forced shape, then the engine's launcher
  std::vector<float> cpuOut(outSize);
  for (ActivationFn act : kActs) {
    cpu::conv2d_forward(pool, scratch, cpuOut.data(), t.in.data(), t.weight.data(), t.bias.data(), c.N, g, act,
                        alpha);
    for (const auto& s : shapes) {
      poison(gOut);
      if (!directForward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act, alpha, &s))
        continue;
      ++launched;
      ++checks;
      compare(name + " forward " + activationName(act) + " " + shapeName(s), gOut.download(), cpuOut, worst);
    }
    poison(gOut);
    cuda::conv2d_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act, alpha);
    ++checks;
    compare(name + " forward " + activationName(act) + " (conv2d_forward)", gOut.download(), cpuOut, worst);
  }
  // square 2x2 / 3x3 / 5x5 kernels run direct; the others stay on the implicit GEMM
  const bool supported = c.kh == c.kw && (c.kw == 2 || c.kw == 3 || c.kw == 5);
  const int all = int(shapes.size() * (sizeof kActs / sizeof kActs[0]));
  CHECK_MSG(launched == (supported ? all : 0), name + (supported ? ": the direct forward takes every forced shape"
                                                           : ": the direct forward refuses the kernel shape"));

  // input gradient: the CPU's with Linear (dOut is dLoss/d(pre-activation)), then gated by each activation
  const std::vector<float> cpuDIn = cpuConvGradients(pool, scratch, c.N, g, t).dIn;
  launched = 0;
  for (ActivationFn gate : kActs) {
    std::vector<float> ref(inSize);
    cpu::activation_backward(ref.data(), cpuDIn.data(), t.in.data(), 1, int64_t(inSize), gate, alpha);
    for (const auto& s : shapes) {
      poison(gDIn);
      if (!directInput(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate, alpha,
                                              &s))
        continue;
      ++launched;
      ++checks;
      compare(name + " dIn gate " + activationName(gate) + " " + shapeName(s), gDIn.download(), ref, worst);
    }
    poison(gDIn);
    cuda::conv2d_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate, alpha);
    ++checks;
    compare(name + " dIn gate " + activationName(gate) + " (conv2d_backward_input)", gDIn.download(), ref, worst);
  }
  CHECK_MSG(launched == (supported ? all : 0), name + (supported ? ": the direct input gradient takes every forced shape"
                                                           : ": the direct input gradient refuses the kernel shape"));

  // the engine's path twice: the same bits
  cuda::conv2d_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, ActivationFn::Tanh, alpha);
  cuda::conv2d_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, ActivationFn::Sigmoid, alpha);
  const std::vector<float> out1 = gOut.download(), din1 = gDIn.download();
  poison(gOut);
  poison(gDIn);
  cuda::conv2d_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, ActivationFn::Tanh, alpha);
  cuda::conv2d_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, ActivationFn::Sigmoid, alpha);
  CHECK_MSG(sameBits(gOut.download(), out1) && sameBits(gDIn.download(), din1),
            name + " forward and dIn are bit-identical on a second run");

  nnstudio_test::report(true, name + ": " + std::to_string(checks) + " comparisons within tolerance",
                        __FILE__, __LINE__, "worst |err| / (1 + max|cpu|) " + nnstudio_test::num(worst));
}

// shapes the direct kernel must refuse (the implicit GEMM takes them): stride 2, 1x1, 7-wide kernels
void checkRefusals() {
  const cuda::ConvDirectShape any{8, 2, 1, 0, 0};
  DeviceVector<float> buf(size_t(4096));
  ConvGeometry g;
  g.C = 2;
  g.H = g.W = 9;
  g.F = 3;
  g.kh = g.kw = 3;
  g.stride = 2;
  g.OH = g.OW = 4;
  CHECK_MSG(!directForward(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0, &any),
            "direct forward refuses stride 2");
  CHECK_MSG(!directInput(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0,
                                                &any),
            "direct input gradient refuses stride 2");
  g.stride = 1;
  g.kh = g.kw = 1;
  g.OH = g.OW = 9;
  CHECK_MSG(!directForward(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0, &any),
            "direct forward refuses 1x1 kernels");
  g.kh = g.kw = 7;
  g.OH = g.OW = 3;
  CHECK_MSG(!directForward(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0, &any),
            "direct forward refuses 7x7 kernels");
  g.kh = g.kw = 3;
  g.OH = g.OW = 7;
  const cuda::ConvDirectShape wide{8, 4, 1, 0, 0};
  CHECK_MSG(!directForward(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0, &wide),
            "direct forward refuses the 8x4 thread tile");
}

// ---- --bench: µs per launch, direct vs implicit GEMM ----

int bench() {
  struct BenchCase {
    Case c;
    bool fwd, din;
  };
  const BenchCase cases[] = {
      {{"seed000 conv1", 32, 1, 28, 28, 4, 2, 2, 1, 's'}, true, true},
      {{"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'}, true, true},
      {{"seed002 conv1", 32, 1, 28, 28, 8, 5, 5, 1, 'v'}, true, true},
      {{"seed002 conv2", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, true, true},
      {{"lenet conv1", 64, 1, 28, 28, 6, 5, 5, 1, 's'}, true, true},
      {{"lenet conv2", 64, 6, 14, 14, 16, 5, 5, 1, 'v'}, true, true},
      {{"keras conv1", 128, 1, 28, 28, 32, 3, 3, 1, 'v'}, true, true},
      {{"C16 F16 3x3", 32, 16, 28, 28, 16, 3, 3, 1, 's'}, true, true},
      {{"C32 F8 3x3", 32, 32, 14, 14, 8, 3, 3, 1, 's'}, true, true},
      {{"fast conv1", 256, 1, 28, 28, 24, 5, 5, 1, 'v'}, true, false},
      {{"fast conv1 128", 128, 1, 28, 28, 24, 5, 5, 1, 'v'}, true, false},
  };
  cudaStream_t stream;
  cudaOk(cudaStreamCreate(&stream), "stream");
  std::printf("microseconds per launch inside a CUDA graph of 20 launches (median of 50)\n");
  std::printf("gemm = implicit GEMM (NNSTUDIO_CONV_DIRECT=0), engine = conv2d_forward / conv2d_backward_input as "
              "dispatched, then every forced direct shape FP/splits@blocks (ft F, px P)\n");
  for (const BenchCase& bc : cases) {
    const Case& c = bc.c;
    const ConvGeometry g = geometryOf(c);
    ConvBenchTensors d(c, g);
    for (int pass = 0; pass < 2; ++pass) {
      if ((pass == 0 && !bc.fwd) || (pass == 1 && !bc.din)) continue;
      auto engine = [&] {
        if (pass == 0)
          cuda::conv2d_forward(stream, d.out.ptr, d.in.ptr, d.weight.ptr, d.bias.ptr, c.N, g, ActivationFn::ReLU, 0);
        else
          cuda::conv2d_backward_input(stream, d.dIn.ptr, d.dOut.ptr, d.weight.ptr, d.in.ptr, c.N, g, ActivationFn::ReLU,
                                      0);
      };
      float gemm = 0;
      {
        cuda::ScopedKernelOverride off([](cuda::KernelOverrides& o) { o.convDirect = cuda::Switch::Off; });
        gemm = timeLaunches(engine, stream, true);
      }
      const float eng = timeLaunches(engine, stream, true);
      std::printf("%-14s %-3s gemm %6.2f  engine %6.2f |", c.name.c_str(), pass == 0 ? "fwd" : "dIn", gemm, eng);
      float best = 1e30f;
      std::string bestName;
      for (int ftpx : {41, 42, 44, 81, 82})
        for (int splits : {1, 2, 4, 8})
          for (int blocks : {132, 264}) {
            const int ft = ftpx / 10, px = ftpx % 10;
            if (splits > (pass == 0 ? g.C : g.F)) continue;
            const cuda::ConvDirectShape s{ft, px, splits, 0, blocks};
            auto direct = [&] {
              return pass == 0 ? directForward(stream, d.out.ptr, d.in.ptr, d.weight.ptr, d.bias.ptr, c.N, g,
                                                             ActivationFn::ReLU, 0, &s)
                               : directInput(stream, d.dIn.ptr, d.dOut.ptr, d.weight.ptr, d.in.ptr,
                                                                    c.N, g, ActivationFn::ReLU, 0, &s);
            };
            const float t = direct() ? timeLaunches(direct, stream, true) : -1.0f;  // -1: refused
            std::printf(" %d%d/%d@%d:%.2f", ft, px, splits, blocks, t);
            if (t > 0 && t < best) {
              best = t;
              bestName = "ft" + std::to_string(ft) + " px" + std::to_string(px) + " splits" + std::to_string(splits) +
                         " @" + std::to_string(blocks);
            }
          }
      std::printf(" | best %s %.2f\n", bestName.c_str(), best);
    }
  }
  cudaOk(cudaStreamDestroy(stream), "stream");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!haveCudaDevice()) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--bench") return bench();

  nnstudio_test::verbose() = true;
  cpu::ThreadPool pool(0);
  const Case cases[] = {
      // the presets' layers
      {"seed000 conv1", 32, 1, 28, 28, 4, 2, 2, 1, 's'},
      {"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'},
      {"seed002 conv1", 32, 1, 28, 28, 8, 5, 5, 1, 'v'},
      {"seed002 conv2", 32, 8, 24, 24, 8, 5, 5, 1, 'v'},
      {"lenet conv1", 64, 1, 28, 28, 6, 5, 5, 1, 's'},
      {"lenet conv2", 64, 6, 14, 14, 16, 5, 5, 1, 'v'},
      // odd shapes
      {"2x2 same C=3 F=7", 5, 3, 9, 7, 7, 2, 2, 1, 's'},
      {"3x3 same odd plane", 3, 2, 13, 11, 5, 3, 3, 1, 's'},
      {"5x5 full", 2, 2, 7, 6, 3, 5, 5, 1, 'f'},
      {"3x3 valid F=16 N=7", 7, 5, 17, 19, 16, 3, 3, 1, 'v'},
      {"5x5 same C=16 F=2", 2, 16, 6, 9, 2, 5, 5, 1, 's'},
      {"4x2 same (asymmetric pads)", 3, 2, 7, 6, 5, 4, 2, 1, 's'},
      {"3x5 valid", 2, 3, 10, 12, 4, 3, 5, 1, 'v'},
      {"OH=1 (kernel = input)", 6, 2, 5, 5, 9, 5, 5, 1, 'v'},
      {"N=1 wide", 1, 1, 5, 61, 3, 3, 3, 1, 's'},
      {"2x2 valid C=1 F=1", 3, 1, 5, 5, 1, 2, 2, 1, 'v'},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) runCase(pool, c, seed++);
  checkRefusals();
  return nnstudio_test::summary();
}

#else
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
