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
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cpu/thread_pool.h"
#include "cuda/conv2d_direct.h"
#include "cuda/kernels.h"
#include "spec/model.h"
#include "cuda_test_util.h"
#include "cuda_timing.h"
#include "spec/rng.h"
#include "test_util.h"

using namespace nnstudio;
using nnstudio::test::cudaOk;
using nnstudio::test::DeviceVector;
using nnstudio::test::timeLaunches;
using cpu::ConvGeometry;

namespace {

struct Case {
  std::string name;
  int N, C, H, W, F, kh, kw;
  char pad;  // 'v'alid, 's'ame, 'f'ull
};

ConvGeometry geometryOf(const Case& c) {
  auto padding = [](char p) { return p == 's' ? Padding::Same : p == 'f' ? Padding::Full : Padding::Valid; };
  ConvGeometry g;
  g.C = c.C;
  g.H = c.H;
  g.W = c.W;
  g.F = c.F;
  g.kh = c.kh;
  g.kw = c.kw;
  g.stride = 1;
  convAxis(c.H, c.kh, 1, padding(c.pad), g.OH, g.padTop);
  convAxis(c.W, c.kw, 1, padding(c.pad), g.OW, g.padLeft);
  return g;
}

// uniform in [-scale, scale], never exactly zero
std::vector<float> randomVector(size_t n, uint64_t seed, float scale) {
  std::vector<float> v = nnstudio::test::randomVector(n, seed, scale);
  for (auto& x : v)
    if (x == 0.0f) x = 0.5f * scale;
  return v;
}

void poison(DeviceVector<float>& v) { cudaOk(cudaMemset(v.ptr, 0xFF, sizeof(float) * (v.count ? v.count : 1)), "poison"); }

// max |gpu - cpu| <= 1e-4 (1 + max |cpu|); reports failures only (the case's summary line says ok)
bool compare(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& cpu, double& worstRel) {
  double maxRef = 0, maxErr = 0;
  size_t worst = 0, nonFinite = 0;
  for (size_t i = 0; i < cpu.size() && i < gpu.size(); ++i) {
    maxRef = std::max(maxRef, std::fabs(double(cpu[i])));
    if (!std::isfinite(gpu[i])) {
      ++nonFinite;
      continue;
    }
    const double err = std::fabs(double(gpu[i]) - double(cpu[i]));
    if (err > maxErr) {
      maxErr = err;
      worst = i;
    }
  }
  const double tol = 1e-4 * (1.0 + maxRef);
  const bool ok = gpu.size() == cpu.size() && nonFinite == 0 && maxErr <= tol;
  worstRel = std::max(worstRel, maxErr / (1.0 + maxRef));
  if (!ok) {
    std::string detail = "max |err| " + nnstudio_test::num(maxErr) + " at " + std::to_string(worst) + " (tol " +
                         nnstudio_test::num(tol) + ")";
    if (nonFinite) detail += ", " + std::to_string(nonFinite) + " not finite";
    if (gpu.size() != cpu.size()) detail += ", size mismatch";
    nnstudio_test::report(false, what, __FILE__, __LINE__, detail);
  }
  return ok;
}

const char* actName(ActivationFn fn) {
  switch (fn) {
    case ActivationFn::Linear: return "linear";
    case ActivationFn::ReLU: return "relu";
    case ActivationFn::LeakyReLU: return "leaky_relu";
    case ActivationFn::Sigmoid: return "sigmoid";
    case ActivationFn::Tanh: return "tanh";
    case ActivationFn::Softplus: return "softplus";
    default: return "softmax";
  }
}

std::string describe(const Case& c, const ConvGeometry& g) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s [N%d %dx%dx%d -> %dx%dx%d k%dx%d pad %d,%d]", c.name.c_str(), c.N, g.C, g.H, g.W,
                g.F, g.OH, g.OW, g.kh, g.kw, g.padTop, g.padLeft);
  return buf;
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
  const size_t inSize = size_t(c.N) * g.C * g.H * g.W, outSize = size_t(c.N) * g.F * g.OH * g.OW;
  const size_t wSize = size_t(g.F) * size_t(g.colRows());
  const float wScale = 1.0f / std::sqrt(float(g.colRows()));
  const std::vector<float> in = randomVector(inSize, seed * 16 + 1, 1.0f);
  const std::vector<float> weight = randomVector(wSize, seed * 16 + 2, wScale);
  const std::vector<float> bias = randomVector(size_t(g.F), seed * 16 + 3, 0.5f);
  const std::vector<float> dOut = randomVector(outSize, seed * 16 + 4, 1.0f);
  const float alpha = 0.1f;

  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  DeviceVector<float> dIn(in), dWeight(weight), dBias(bias), dDOut(dOut);
  DeviceVector<float> gOut(outSize), gDIn(inSize);
  const std::vector<cuda::ConvDirectShape> shapes = forcedShapes();
  int launched = 0, checks = 0;
  double worst = 0;

  // forward, every activation: each forced shape, then the engine's launcher
  std::vector<float> cpuOut(outSize);
  for (ActivationFn act : kActs) {
    cpu::conv2d_forward(pool, scratch, cpuOut.data(), in.data(), weight.data(), bias.data(), c.N, g, act, alpha);
    for (const auto& s : shapes) {
      poison(gOut);
      if (!cuda::conv2d_direct_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act, alpha, &s))
        continue;
      ++launched;
      ++checks;
      compare(name + " forward " + actName(act) + " " + shapeName(s), gOut.download(), cpuOut, worst);
    }
    poison(gOut);
    cuda::conv2d_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act, alpha);
    ++checks;
    compare(name + " forward " + actName(act) + " (conv2d_forward)", gOut.download(), cpuOut, worst);
  }
  // square 2x2 / 3x3 / 5x5 kernels run direct; the others stay on the implicit GEMM
  const bool supported = c.kh == c.kw && (c.kw == 2 || c.kw == 3 || c.kw == 5);
  const int all = int(shapes.size() * (sizeof kActs / sizeof kActs[0]));
  CHECK_MSG(launched == (supported ? all : 0), name + (supported ? ": the direct forward takes every forced shape"
                                                           : ": the direct forward refuses the kernel shape"));

  // input gradient: the CPU's with Linear (dOut is dLoss/d(pre-activation)), then gated by each activation
  std::vector<float> cpuDIn(inSize), cpuDW(wSize), cpuDB(size_t(g.F));
  {
    std::vector<float> dOutCopy = dOut;
    cpu::conv2d_forward(pool, scratch, cpuOut.data(), in.data(), weight.data(), bias.data(), c.N, g,
                        ActivationFn::Linear, 0.0f);
    cpu::conv2d_backward(pool, scratch, cpuDIn.data(), cpuDW.data(), cpuDB.data(), dOutCopy.data(), cpuOut.data(),
                         in.data(), weight.data(), c.N, g, ActivationFn::Linear, 0.0f);
  }
  launched = 0;
  for (ActivationFn gate : kActs) {
    std::vector<float> ref(inSize);
    cpu::activation_backward(ref.data(), cpuDIn.data(), in.data(), 1, int64_t(inSize), gate, alpha);
    for (const auto& s : shapes) {
      poison(gDIn);
      if (!cuda::conv2d_direct_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate, alpha,
                                              &s))
        continue;
      ++launched;
      ++checks;
      compare(name + " dIn gate " + actName(gate) + " " + shapeName(s), gDIn.download(), ref, worst);
    }
    poison(gDIn);
    cuda::conv2d_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate, alpha);
    ++checks;
    compare(name + " dIn gate " + actName(gate) + " (conv2d_backward_input)", gDIn.download(), ref, worst);
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
  const std::vector<float> out2 = gOut.download(), din2 = gDIn.download();
  CHECK_MSG(std::memcmp(out1.data(), out2.data(), out1.size() * sizeof(float)) == 0 &&
                std::memcmp(din1.data(), din2.data(), din1.size() * sizeof(float)) == 0,
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
  CHECK_MSG(!cuda::conv2d_direct_forward(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0, &any),
            "direct forward refuses stride 2");
  CHECK_MSG(!cuda::conv2d_direct_backward_input(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0,
                                                &any),
            "direct input gradient refuses stride 2");
  g.stride = 1;
  g.kh = g.kw = 1;
  g.OH = g.OW = 9;
  CHECK_MSG(!cuda::conv2d_direct_forward(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0, &any),
            "direct forward refuses 1x1 kernels");
  g.kh = g.kw = 7;
  g.OH = g.OW = 3;
  CHECK_MSG(!cuda::conv2d_direct_forward(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0, &any),
            "direct forward refuses 7x7 kernels");
  g.kh = g.kw = 3;
  g.OH = g.OW = 7;
  const cuda::ConvDirectShape wide{8, 4, 1, 0, 0};
  CHECK_MSG(!cuda::conv2d_direct_forward(nullptr, buf.ptr, buf.ptr, buf.ptr, buf.ptr, 1, g, ActivationFn::ReLU, 0, &wide),
            "direct forward refuses the 8x4 thread tile");
}

// ---- --bench: µs per launch, direct vs implicit GEMM ----

int bench() {
  struct BenchCase {
    Case c;
    bool fwd, din;
  };
  const BenchCase cases[] = {
      {{"seed000 conv1", 32, 1, 28, 28, 4, 2, 2, 's'}, true, true},
      {{"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 's'}, true, true},
      {{"seed002 conv1", 32, 1, 28, 28, 8, 5, 5, 'v'}, true, true},
      {{"seed002 conv2", 32, 8, 24, 24, 8, 5, 5, 'v'}, true, true},
      {{"lenet conv1", 64, 1, 28, 28, 6, 5, 5, 's'}, true, true},
      {{"lenet conv2", 64, 6, 14, 14, 16, 5, 5, 'v'}, true, true},
      {{"keras conv1", 128, 1, 28, 28, 32, 3, 3, 'v'}, true, true},
      {{"C16 F16 3x3", 32, 16, 28, 28, 16, 3, 3, 's'}, true, true},
      {{"C32 F8 3x3", 32, 32, 14, 14, 8, 3, 3, 's'}, true, true},
  };
  cudaStream_t stream;
  cudaOk(cudaStreamCreate(&stream), "stream");
  std::printf("microseconds per launch inside a CUDA graph of 20 launches (median of 50)\n");
  std::printf("gemm = implicit GEMM (NNSTUDIO_CONV_DIRECT=0), engine = conv2d_forward / conv2d_backward_input as "
              "dispatched, then every forced direct shape FP/splits@blocks (ft F, px P)\n");
  bool& enabled = cuda::conv2d_direct_enabled();
  const bool saved = enabled;
  for (const BenchCase& bc : cases) {
    const Case& c = bc.c;
    const ConvGeometry g = geometryOf(c);
    const size_t inSize = size_t(c.N) * g.C * g.H * g.W, outSize = size_t(c.N) * g.F * g.OH * g.OW;
    const size_t wSize = size_t(g.F) * size_t(g.colRows());
    DeviceVector<float> in(randomVector(inSize, 1, 1.0f)), weight(randomVector(wSize, 2, 0.3f)),
        bias(randomVector(size_t(g.F), 3, 0.1f)), dOut(randomVector(outSize, 4, 1.0f));
    DeviceVector<float> out(outSize), dIn(inSize);
    for (int pass = 0; pass < 2; ++pass) {
      if ((pass == 0 && !bc.fwd) || (pass == 1 && !bc.din)) continue;
      auto engine = [&] {
        if (pass == 0) cuda::conv2d_forward(stream, out.ptr, in.ptr, weight.ptr, bias.ptr, c.N, g, ActivationFn::ReLU, 0);
        else cuda::conv2d_backward_input(stream, dIn.ptr, dOut.ptr, weight.ptr, in.ptr, c.N, g, ActivationFn::ReLU, 0);
      };
      enabled = false;
      const float gemm = timeLaunches(engine, stream, true);
      enabled = true;
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
              return pass == 0 ? cuda::conv2d_direct_forward(stream, out.ptr, in.ptr, weight.ptr, bias.ptr, c.N, g,
                                                             ActivationFn::ReLU, 0, &s)
                               : cuda::conv2d_direct_backward_input(stream, dIn.ptr, dOut.ptr, weight.ptr, in.ptr,
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
  enabled = saved;
  cudaOk(cudaStreamDestroy(stream), "stream");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!nnstudio::test::haveCudaDevice()) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--bench") return bench();

  nnstudio_test::verbose() = true;
  cpu::ThreadPool pool(0);
  const Case cases[] = {
      // the presets' layers
      {"seed000 conv1", 32, 1, 28, 28, 4, 2, 2, 's'},
      {"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 's'},
      {"seed002 conv1", 32, 1, 28, 28, 8, 5, 5, 'v'},
      {"seed002 conv2", 32, 8, 24, 24, 8, 5, 5, 'v'},
      {"lenet conv1", 64, 1, 28, 28, 6, 5, 5, 's'},
      {"lenet conv2", 64, 6, 14, 14, 16, 5, 5, 'v'},
      // odd shapes
      {"2x2 same C=3 F=7", 5, 3, 9, 7, 7, 2, 2, 's'},
      {"3x3 same odd plane", 3, 2, 13, 11, 5, 3, 3, 's'},
      {"5x5 full", 2, 2, 7, 6, 3, 5, 5, 'f'},
      {"3x3 valid F=16 N=7", 7, 5, 17, 19, 16, 3, 3, 'v'},
      {"5x5 same C=16 F=2", 2, 16, 6, 9, 2, 5, 5, 's'},
      {"4x2 same (asymmetric pads)", 3, 2, 7, 6, 5, 4, 2, 's'},
      {"3x5 valid", 2, 3, 10, 12, 4, 3, 5, 'v'},
      {"OH=1 (kernel = input)", 6, 2, 5, 5, 9, 5, 5, 'v'},
      {"N=1 wide", 1, 1, 5, 61, 3, 3, 3, 's'},
      {"2x2 valid C=1 F=1", 3, 1, 5, 5, 1, 2, 2, 'v'},
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
