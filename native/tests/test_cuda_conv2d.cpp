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
#include <string>
#include <vector>

#include "conv_test_case.h"  // the CPU layers, cuda_test_util.h, test_util.h, spec/model.h
#include "cuda/kernels.h"
#include "cuda_timing.h"

using namespace nnstudio;
using namespace nnstudio::test;
using Case = nnstudio::test::ConvCase;
using cpu::ConvGeometry;

namespace {

void runCase(cpu::ThreadPool& pool, const Case& c, uint64_t seed) {
  const ConvGeometry g = geometryOf(c);
  const std::string name = describe(c, g);
  std::printf("%s\n", name.c_str());
  const ConvTensors t(c, g, seed);
  const size_t inSize = t.inSize, outSize = t.outSize, wSize = t.wSize;

  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  DeviceVector<float> dIn(t.in), dWeight(t.weight), dBias(t.bias), dDOut(t.dOut);

  // forward, every elementwise activation
  std::vector<float> cpuOut(outSize);
  DeviceVector<float> gOut(outSize);
  const ActivationFn acts[] = {ActivationFn::Linear, ActivationFn::ReLU,  ActivationFn::LeakyReLU,
                               ActivationFn::Sigmoid, ActivationFn::Tanh, ActivationFn::Softplus};
  for (ActivationFn act : acts) {
    const float alpha = 0.1f;
    cpu::conv2d_forward(pool, scratch, cpuOut.data(), t.in.data(), t.weight.data(), t.bias.data(), c.N, g, act,
                        alpha);
    poison(gOut);
    cuda::conv2d_forward(nullptr, gOut.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, act, alpha);
    CHECK_PARITY(name + " forward " + activationName(act), gOut.download(), cpuOut);
  }

  const CpuConvGradients cpuGrad = cpuConvGradients(pool, scratch, c.N, g, t);

  // weight and bias gradients, twice: the same bits
  const size_t ws = cuda::conv2d_weights_workspace(c.N, g);
  DeviceVector<float> work(std::max<size_t>(ws, 1));
  poison(work);
  DeviceVector<float> gDW(wSize), gDB(size_t(g.F));
  poison(gDW);
  poison(gDB);
  cuda::conv2d_backward_weights(nullptr, gDW.ptr, gDB.ptr, dDOut.ptr, dIn.ptr, c.N, g, ws ? work.ptr : nullptr);
  const std::vector<float> dw1 = gDW.download(), db1 = gDB.download();
  CHECK_PARITY(name + " dWeight", dw1, cpuGrad.dWeight);
  CHECK_PARITY(name + " dBias", db1, cpuGrad.dBias);
  poison(gDW);
  poison(gDB);
  poison(work);
  cuda::conv2d_backward_weights(nullptr, gDW.ptr, gDB.ptr, dDOut.ptr, dIn.ptr, c.N, g, ws ? work.ptr : nullptr);
  CHECK_MSG(sameBits(gDW.download(), dw1) && sameBits(gDB.download(), db1),
            name + " backward_weights is bit-identical on a second run");

  // input gradient: ungated, then gated by the activation that produced `in`
  DeviceVector<float> gDIn(inSize);
  const ActivationFn gates[] = {ActivationFn::Linear, ActivationFn::ReLU, ActivationFn::Sigmoid};
  for (ActivationFn gate : gates) {
    std::vector<float> ref(inSize);
    cpu::activation_backward(ref.data(), cpuGrad.dIn.data(), t.in.data(), 1, int64_t(inSize), gate, 0.0f);
    poison(gDIn);
    cuda::conv2d_backward_input(nullptr, gDIn.ptr, dDOut.ptr, dWeight.ptr, dIn.ptr, c.N, g, gate, 0.0f);
    CHECK_PARITY(name + " dIn gate " + activationName(gate), gDIn.download(), ref);
  }
}

// The weight gradient with `splits` chunks: CPU parity, then 3 launches in a row and 5 replays of a CUDA
// graph of 2 launches give the same bits.
void runSplits(const Case& c, uint64_t seed, const std::vector<int>& splitCounts) {
  const ConvGeometry g = geometryOf(c);
  const std::string name = describe(c, g);
  const ConvTensors t(c, g, seed);
  cpu::ThreadPool pool(0);
  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  const CpuConvGradients cpuGrad = cpuConvGradients(pool, scratch, c.N, g, t);
  DeviceVector<float> dIn(t.in), dDOut(t.dOut), gDW(t.wSize), gDB(size_t(g.F));
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
    CHECK_PARITY(what + " dWeight", dw1, cpuGrad.dWeight);
    CHECK_PARITY(what + " dBias", db1, cpuGrad.dBias);
    CHECK_MSG(sameBitsWhenRepeated(stream, launch, {&gDW, &gDB}, {dw1, db1}, 5),
              what + ": 3 launches in a row and 5 graph replays give the same bits");
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
    ConvBenchTensors d(c, g);
    DeviceVector<float> dW(d.wSize), dB(size_t(g.F));
    cudaOk(cudaMemset(d.dOut.ptr, 0, d.outSize * sizeof(float)), "memset");
    const size_t ws = cuda::conv2d_weights_workspace(c.N, g);
    DeviceVector<float> work(std::max<size_t>(ws, 1));
    auto fwd = [&] {
      cuda::conv2d_forward(stream, d.out.ptr, d.in.ptr, d.weight.ptr, d.bias.ptr, c.N, g, ActivationFn::ReLU, 0);
    };
    auto dw = [&] { cuda::conv2d_backward_weights(stream, dW.ptr, dB.ptr, d.dOut.ptr, d.in.ptr, c.N, g, work.ptr); };
    auto di = [&] {
      cuda::conv2d_backward_input(stream, d.dIn.ptr, d.dOut.ptr, d.weight.ptr, d.in.ptr, c.N, g, ActivationFn::ReLU, 0);
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
  if (!haveCudaDevice()) {
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
