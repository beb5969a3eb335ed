// The CUDA conv2d kernels (cuda/conv2d.cu) against the CPU reference (cpu/conv2d.cpp): forward with
// every elementwise activation, weight + bias gradients (and that two runs give the same bits), input
// gradient ungated and gated by ReLU / Sigmoid, on the presets' shapes and on odd geometries (strides
// 2 and 3, asymmetric 'same' pads of even kernels, 'full' padding, 1x1, 3x2, C = 3, N = 1, OH = 1).
// Tolerance: max |gpu - cpu| <= 1e-4 * (1 + max |cpu|) per tensor (the sums run in another order).
// Outputs are poisoned with NaN before every launch, inputs are random and never zero. The weight
// gradient is also run with forced split counts (1 .. many, chunks that do not divide N*OH*OW), three
// times in a row and replayed from a CUDA graph: the same bits every time.
// `test_cuda_conv2d --bench` prints the median time of each launcher on the presets' full shapes.
#include <cstdio>

#ifdef NNSTUDIO_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cpu/thread_pool.h"
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
  int N, C, H, W, F, kh, kw, stride;
  char pad;  // 'v'alid, 's'ame, 'f'ull
};

// the engine's own padding rule (spec/model.h)
void axis(int in, int k, int stride, char pad, int& out, int& before) {
  convAxis(in, k, stride, pad == 's' ? Padding::Same : pad == 'f' ? Padding::Full : Padding::Valid, out, before);
}

ConvGeometry geometryOf(const Case& c) {
  ConvGeometry g;
  g.C = c.C;
  g.H = c.H;
  g.W = c.W;
  g.F = c.F;
  g.kh = c.kh;
  g.kw = c.kw;
  g.stride = c.stride;
  axis(c.H, c.kh, c.stride, c.pad, g.OH, g.padTop);
  axis(c.W, c.kw, c.stride, c.pad, g.OW, g.padLeft);
  return g;
}

// uniform in [-scale, scale], never exactly zero
std::vector<float> randomVector(size_t n, uint64_t seed, float scale) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = (2.0f * rng.uniform() - 1.0f) * scale;
    if (x == 0.0f) x = 0.5f * scale;
  }
  return v;
}

template <class T>
void poison(DeviceVector<T>& v) {
  cudaOk(cudaMemset(v.ptr, 0xFF, sizeof(T) * (v.count ? v.count : 1)), "poison");
}

void compare(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& cpu) {
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
  std::string detail = "max |err| " + nnstudio_test::num(maxErr) + " at " + std::to_string(worst) + " (tol " +
                       nnstudio_test::num(tol) + ", max |ref| " + nnstudio_test::num(maxRef) + ")";
  if (nonFinite) detail += ", " + std::to_string(nonFinite) + " not finite";
  if (gpu.size() != cpu.size()) detail += ", size mismatch";
  nnstudio_test::report(ok, what, __FILE__, __LINE__, detail);
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
  std::snprintf(buf, sizeof buf, "%s [N%d %dx%dx%d -> %dx%dx%d k%dx%d s%d pad %d,%d]", c.name.c_str(), c.N, g.C, g.H,
                g.W, g.F, g.OH, g.OW, g.kh, g.kw, g.stride, g.padTop, g.padLeft);
  return buf;
}

void runCase(cpu::ThreadPool& pool, const Case& c, uint64_t seed) {
  const ConvGeometry g = geometryOf(c);
  const std::string name = describe(c, g);
  std::printf("%s\n", name.c_str());
  const size_t inSize = size_t(c.N) * g.C * g.H * g.W, outSize = size_t(c.N) * g.F * g.OH * g.OW;
  const size_t wSize = size_t(g.F) * size_t(g.colRows());
  const float wScale = 1.0f / std::sqrt(float(g.colRows()));
  const std::vector<float> in = randomVector(inSize, seed * 16 + 1, 1.0f);
  const std::vector<float> weight = randomVector(wSize, seed * 16 + 2, wScale);
  const std::vector<float> bias = randomVector(size_t(g.F), seed * 16 + 3, 0.5f);
  const std::vector<float> dOut = randomVector(outSize, seed * 16 + 4, 1.0f);

  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  DeviceVector<float> dIn(in), dWeight(weight), dBias(bias), dDOut(dOut);

  // forward, every elementwise activation
  std::vector<float> cpuOut(outSize);
  DeviceVector<float> gOut(outSize);
  const ActivationFn acts[] = {ActivationFn::Linear, ActivationFn::ReLU,  ActivationFn::LeakyReLU,
                               ActivationFn::Sigmoid, ActivationFn::Tanh, ActivationFn::Softplus};
  for (ActivationFn act : acts) {
    const float alpha = 0.1f;
    cpu::conv2d_forward(pool, scratch, cpuOut.data(), in.data(), weight.data(), bias.data(), c.N, g, act, alpha);
    poison(gOut);
    cuda::conv2d_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act, alpha);
    compare(name + " forward " + actName(act), gOut.download(), cpuOut);
  }

  // CPU backward with Linear: dOut is already dLoss/d(pre-activation)
  std::vector<float> cpuDIn(inSize), cpuDW(wSize), cpuDB(size_t(g.F));
  {
    std::vector<float> dOutCopy = dOut;
    cpu::conv2d_forward(pool, scratch, cpuOut.data(), in.data(), weight.data(), bias.data(), c.N, g,
                        ActivationFn::Linear, 0.0f);
    cpu::conv2d_backward(pool, scratch, cpuDIn.data(), cpuDW.data(), cpuDB.data(), dOutCopy.data(), cpuOut.data(),
                         in.data(), weight.data(), c.N, g, ActivationFn::Linear, 0.0f);
  }

  // weight and bias gradients, twice: the same bits
  const size_t ws = cuda::conv2d_weights_workspace(c.N, g);
  DeviceVector<float> work(std::max<size_t>(ws, 1));
  poison(work);
  DeviceVector<float> gDW(wSize), gDB(size_t(g.F));
  poison(gDW);
  poison(gDB);
  cuda::conv2d_backward_weights(nullptr, gDW.ptr, gDB.ptr, dDOut.ptr, dIn.ptr, c.N, g, ws ? work.ptr : nullptr);
  const std::vector<float> dw1 = gDW.download(), db1 = gDB.download();
  compare(name + " dWeight", dw1, cpuDW);
  compare(name + " dBias", db1, cpuDB);
  poison(gDW);
  poison(gDB);
  poison(work);
  cuda::conv2d_backward_weights(nullptr, gDW.ptr, gDB.ptr, dDOut.ptr, dIn.ptr, c.N, g, ws ? work.ptr : nullptr);
  const std::vector<float> dw2 = gDW.download(), db2 = gDB.download();
  CHECK_MSG(std::memcmp(dw1.data(), dw2.data(), dw1.size() * sizeof(float)) == 0 &&
                std::memcmp(db1.data(), db2.data(), db1.size() * sizeof(float)) == 0,
            name + " backward_weights is bit-identical on a second run");

  // input gradient: ungated, then gated by the activation that produced `in`
  DeviceVector<float> gDIn(inSize);
  const ActivationFn gates[] = {ActivationFn::Linear, ActivationFn::ReLU, ActivationFn::Sigmoid};
  for (ActivationFn gate : gates) {
    std::vector<float> ref(inSize);
    cpu::activation_backward(ref.data(), cpuDIn.data(), in.data(), 1, int64_t(inSize), gate, 0.0f);
    poison(gDIn);
    cuda::conv2d_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate, 0.0f);
    compare(name + " dIn gate " + actName(gate), gDIn.download(), ref);
  }
}

// The weight gradient with `splits` chunks: CPU parity, then 3 launches in a row and 5 replays of a CUDA
// graph of 2 launches give the same bits.
void runSplits(const Case& c, uint64_t seed, const std::vector<int>& splitCounts) {
  const ConvGeometry g = geometryOf(c);
  const std::string name = describe(c, g);
  const size_t inSize = size_t(c.N) * g.C * g.H * g.W, outSize = size_t(c.N) * g.F * g.OH * g.OW;
  const size_t wSize = size_t(g.F) * size_t(g.colRows());
  const std::vector<float> in = randomVector(inSize, seed * 16 + 1, 1.0f);
  const std::vector<float> dOut = randomVector(outSize, seed * 16 + 4, 1.0f);
  cpu::ThreadPool pool(0);
  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  std::vector<float> cpuOut(outSize), cpuDW(wSize), cpuDB(size_t(g.F)), dOutCopy = dOut;
  const std::vector<float> weight(wSize, 0.0f), bias(size_t(g.F), 0.0f);
  cpu::conv2d_forward(pool, scratch, cpuOut.data(), in.data(), weight.data(), bias.data(), c.N, g,
                      ActivationFn::Linear, 0.0f);
  cpu::conv2d_backward(pool, scratch, nullptr, cpuDW.data(), cpuDB.data(), dOutCopy.data(), cpuOut.data(), in.data(),
                       weight.data(), c.N, g, ActivationFn::Linear, 0.0f);
  DeviceVector<float> dIn(in), dDOut(dOut), gDW(wSize), gDB(size_t(g.F));
  cudaStream_t stream;
  cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  for (int splits : splitCounts) {
    const std::string what = name + " splits " + std::to_string(splits);
    const size_t ws = cuda::conv2d_weights_workspace_split(c.N, g, splits);
    DeviceVector<float> work(std::max<size_t>(ws, 1));
    poison(work);
    poison(gDW);
    poison(gDB);
    auto launch = [&] {
      cuda::conv2d_backward_weights_split(stream, gDW.ptr, gDB.ptr, dDOut.ptr, dIn.ptr, c.N, g, work.ptr, splits);
    };
    launch();
    cudaOk(cudaStreamSynchronize(stream), "split run");
    const std::vector<float> dw1 = gDW.download(), db1 = gDB.download();
    compare(what + " dWeight", dw1, cpuDW);
    compare(what + " dBias", db1, cpuDB);
    bool same = true;
    auto sameBits = [&] {
      cudaOk(cudaStreamSynchronize(stream), "split run");
      const std::vector<float> dw = gDW.download(), db = gDB.download();
      same = same && std::memcmp(dw.data(), dw1.data(), dw1.size() * sizeof(float)) == 0 &&
             std::memcmp(db.data(), db1.data(), db1.size() * sizeof(float)) == 0;
      poison(gDW);
      poison(gDB);
    };
    poison(gDW);
    poison(gDB);
    for (int i = 0; i < 3; ++i) launch();
    sameBits();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    launch();
    launch();
    cudaOk(cudaStreamEndCapture(stream, &graph), "capture");
    cudaOk(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    for (int i = 0; i < 5; ++i) {
      cudaOk(cudaGraphLaunch(exec, stream), "replay");
      sameBits();
    }
    cudaOk(cudaGraphExecDestroy(exec), "graph");
    cudaOk(cudaGraphDestroy(graph), "graph");
    CHECK_MSG(same, what + ": 3 launches in a row and 5 graph replays give the same bits");
  }
  cudaOk(cudaStreamDestroy(stream), "stream");
}

// ---- --bench: median launch times on the presets' shapes ----

int bench() {
  const Case cases[] = {
      {"seed000 conv1", 32, 1, 28, 28, 4, 2, 2, 1, 's'},    {"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'},
      {"seed001 F64", 100, 1, 28, 28, 64, 3, 3, 1, 'v'},    {"seed001 F256", 1000, 1, 28, 28, 256, 3, 3, 1, 'v'},
      {"seed002 conv1 v", 32, 1, 28, 28, 8, 5, 5, 1, 'v'},  {"seed002 conv1 s", 32, 1, 28, 28, 8, 5, 5, 1, 's'},
      {"seed002 conv2 v", 32, 8, 24, 24, 8, 5, 5, 1, 'v'},  {"seed002 conv2 s", 32, 8, 28, 28, 8, 5, 5, 1, 's'},
      {"keras conv1", 128, 1, 28, 28, 32, 3, 3, 1, 'v'},    {"keras conv2", 128, 32, 26, 26, 64, 3, 3, 1, 'v'},
      {"lenet conv1", 128, 1, 28, 28, 6, 5, 5, 1, 's'},     {"lenet conv2", 128, 6, 14, 14, 16, 5, 5, 1, 'v'},
  };
  cudaStream_t stream;
  cudaOk(cudaStreamCreate(&stream), "stream");
  std::printf("microseconds per launch: in a CUDA graph of 20 (median of 50) | alone, event pair (median of 100)\n");
  std::printf("%-16s %8s %8s %8s | %8s %8s %8s %10s\n", "shape", "fwd", "dW", "dIn", "fwd", "dW", "dIn", "ws floats");
  for (const Case& c : cases) {
    const ConvGeometry g = geometryOf(c);
    const size_t inSize = size_t(c.N) * g.C * g.H * g.W, outSize = size_t(c.N) * g.F * g.OH * g.OW;
    const size_t wSize = size_t(g.F) * size_t(g.colRows());
    DeviceVector<float> in(randomVector(inSize, 1, 1.0f)), weight(randomVector(wSize, 2, 0.3f)),
        bias(randomVector(size_t(g.F), 3, 0.1f));
    DeviceVector<float> out(outSize), dOut(outSize), dIn(inSize), dW(wSize), dB(size_t(g.F));
    cudaOk(cudaMemset(dOut.ptr, 0, outSize * sizeof(float)), "memset");
    const size_t ws = cuda::conv2d_weights_workspace(c.N, g);
    DeviceVector<float> work(std::max<size_t>(ws, 1));
    auto fwd = [&] {
      cuda::conv2d_forward(stream, out.ptr, in.ptr, weight.ptr, bias.ptr, c.N, g, ActivationFn::ReLU, 0);
    };
    auto dw = [&] { cuda::conv2d_backward_weights(stream, dW.ptr, dB.ptr, dOut.ptr, in.ptr, c.N, g, work.ptr); };
    auto di = [&] {
      cuda::conv2d_backward_input(stream, dIn.ptr, dOut.ptr, weight.ptr, in.ptr, c.N, g, ActivationFn::ReLU, 0);
    };
    const float tf = timeLaunches(fwd, stream, false), tw = timeLaunches(dw, stream, false), ti = timeLaunches(di, stream, false);
    const float gf = timeLaunches(fwd, stream, true), gw = timeLaunches(dw, stream, true), gi = timeLaunches(di, stream, true);
    std::printf("%-16s %8.1f %8.1f %8.1f | %8.1f %8.1f %8.1f %10zu\n", c.name.c_str(), gf, gw, gi, tf, tw, ti, ws);
  }
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

  cpu::ThreadPool pool(0);
  const Case cases[] = {
      // the presets' shapes (smaller batches where the CPU reference would be slow)
      {"seed000 conv1", 32, 1, 28, 28, 4, 2, 2, 1, 's'},
      {"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'},
      {"seed001 F64", 100, 1, 28, 28, 64, 3, 3, 1, 'v'},
      {"seed001 F256", 8, 1, 28, 28, 256, 3, 3, 1, 'v'},
      {"seed002 conv1 valid", 32, 1, 28, 28, 8, 5, 5, 1, 'v'},
      {"seed002 conv1 same", 32, 1, 28, 28, 8, 5, 5, 1, 's'},
      {"seed002 conv2 valid", 32, 8, 24, 24, 8, 5, 5, 1, 'v'},
      {"seed002 conv2 same", 32, 8, 28, 28, 8, 5, 5, 1, 's'},
      {"keras conv1", 128, 1, 28, 28, 32, 3, 3, 1, 'v'},
      {"keras conv2", 100, 32, 26, 26, 64, 3, 3, 1, 'v'},
      {"lenet conv1", 16, 1, 28, 28, 6, 5, 5, 1, 'v'},
      {"lenet conv2", 16, 6, 12, 12, 16, 5, 5, 1, 'v'},
      // odd geometries
      {"stride 2", 4, 3, 9, 9, 5, 3, 3, 2, 'v'},
      {"stride 2 same even", 3, 2, 7, 8, 6, 2, 2, 2, 's'},
      {"stride 3 3x2 same", 2, 2, 10, 11, 3, 3, 2, 3, 's'},
      {"stride 2 full", 2, 3, 6, 5, 4, 3, 3, 2, 'f'},
      {"4x2 same (asymmetric pads)", 3, 2, 7, 6, 5, 4, 2, 1, 's'},
      {"2x2 same C=3", 5, 3, 9, 7, 7, 2, 2, 1, 's'},
      {"full 3x3", 4, 2, 5, 5, 3, 3, 3, 1, 'f'},
      {"1x1", 3, 3, 4, 4, 7, 1, 1, 1, 'v'},
      {"3x2 valid C=3", 4, 3, 8, 7, 5, 3, 2, 1, 'v'},
      {"N=1", 1, 2, 6, 6, 3, 3, 3, 1, 's'},
      {"OH=1 (kernel = input)", 6, 2, 5, 5, 9, 5, 5, 1, 'v'},
      {"F=70 C=33 (tile edges)", 3, 33, 9, 10, 70, 3, 3, 1, 's'},
      {"F=130 K'=19", 5, 2, 8, 8, 130, 3, 3, 1, 'v'},
      {"F=20 C=12 5x3 stride 2", 3, 12, 11, 13, 20, 5, 3, 2, 'v'},
      {"wide C=36 (full-width tiles)", 24, 36, 56, 56, 8, 3, 3, 1, 's'},
      {"wide stride 2 (full-width tiles)", 24, 3, 56, 56, 8, 3, 3, 2, 's'},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) runCase(pool, c, seed++);

  // forced split counts: 1 (one chunk, direct), 2 .. many, more than the steps (clamped)
  runSplits({"seed002 conv2 valid", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, 101, {1, 2, 3, 7, 50, 100, 399, 100000});
  runSplits({"keras conv2", 16, 32, 26, 26, 64, 3, 3, 1, 'v'}, 102, {1, 5, 37, 289});
  runSplits({"stride 2 same even", 3, 2, 7, 8, 6, 2, 2, 2, 's'}, 103, {1, 2, 5});
  runSplits({"F=130 K'=19", 5, 2, 8, 8, 130, 3, 3, 1, 'v'}, 104, {1, 3, 10});
  return nnstudio_test::summary();
}

#else
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
