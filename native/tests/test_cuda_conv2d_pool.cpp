// The fused conv2d + activation + max pool kernels (cuda/conv2d_pool.cu) against the CPU reference:
// cpu::conv2d_forward (with the activation) then cpu::maxpool_forward; for the weight gradient
// cpu::maxpool_backward, cpu::activation_backward (from the conv's output) and cpu::conv2d_backward
// (Linear). Pooled values within 1e-4 * (1 + max |ref|), argmax exactly equal, dW / dB within 1e-4 relative
// to the largest magnitude, and the same bits on a second run. Inputs and weights are dyadic (multiples of
// 1/16 and 1/256), so every conv sum is exact in any order and the argmax is well defined.
// Outputs are poisoned before every launch. `--bench` prints the launchers' times on the presets' shapes.
#include <cstdio>

#ifdef NNSTUDIO_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conv_test_case.h"  // the CPU layers, cuda_test_util.h, test_util.h, spec/model.h
#include "cuda/conv2d_pool.h"
#include "cuda/kernel_choice.h"
#include "cuda/kernels.h"
#include "cuda_timing.h"

using namespace nnstudio;
using namespace nnstudio::test;
using cpu::ConvGeometry;
using cpu::PoolGeometry;

namespace {

// a conv case followed by a max pool, with the conv's activation
struct Case : ConvCase {
  int poolSize, poolStride;
  ActivationFn act;
};

PoolGeometry poolOf(const Case& c, const ConvGeometry& g) {
  PoolGeometry p;
  p.C = g.F;
  p.H = g.OH;
  p.W = g.OW;
  p.size = c.poolSize;
  p.stride = c.poolStride;
  p.OH = (g.OH - p.size) / p.stride + 1;
  p.OW = (g.OW - p.size) / p.stride + 1;
  return p;
}

std::string describe(const Case& c, const ConvGeometry& g, const PoolGeometry& p) {
  char buf[100];
  std::snprintf(buf, sizeof buf, "; pool %d/%d -> %dx%d; %s", p.size, p.stride, p.OH, p.OW, activationName(c.act));
  return nnstudio::test::describe(c, g, buf);
}

void runCase(cpu::ThreadPool& pool, const Case& c, uint64_t seed) {
  const ConvGeometry g = geometryOf(c);
  const PoolGeometry p = poolOf(c, g);
  const std::string name = describe(c, g, p);
  std::printf("%s\n", name.c_str());
  if (!cuda::convPoolSupported(g, p)) {
    CHECK_MSG(false, name + " is supported");
    return;
  }
  const float alpha = 0.1f;
  const size_t inSize = size_t(c.N) * g.C * g.H * g.W, outSize = size_t(c.N) * g.F * g.OH * g.OW;
  const size_t pooledSize = size_t(c.N) * g.F * p.OH * p.OW;
  const size_t wSize = size_t(g.F) * size_t(g.colRows());
  const float wScale = 0.5f / std::sqrt(float(g.colRows()));
  const std::vector<float> in = randomNonZero(inSize, seed * 16 + 1, 1.0f, 1.0f / 16);
  const std::vector<float> weight = randomNonZero(wSize, seed * 16 + 2, wScale, 1.0f / 256);
  const std::vector<float> bias = randomNonZero(size_t(g.F), seed * 16 + 3, 0.25f, 1.0f / 256);
  const std::vector<float> dPooled = randomNonZero(pooledSize, seed * 16 + 4, 1.0f);

  // CPU reference
  cpu::ConvScratch scratch;
  scratch.reserve(g, pool.size(), true);
  std::vector<float> y(outSize), cpuPooled(pooledSize);
  std::vector<int32_t> cpuArgmax(pooledSize);
  cpu::conv2d_forward(pool, scratch, y.data(), in.data(), weight.data(), bias.data(), c.N, g, c.act, alpha);
  cpu::maxpool_forward(pool, cpuPooled.data(), cpuArgmax.data(), y.data(), c.N, p);
  std::vector<float> dY(outSize), cpuDW(wSize), cpuDB(size_t(g.F));
  cpu::maxpool_backward(pool, dY.data(), dPooled.data(), cpuArgmax.data(), c.N, p);
  cpu::activation_backward(dY.data(), dY.data(), y.data(), 1, int64_t(outSize), c.act, alpha);
  cpu::conv2d_backward(pool, scratch, nullptr, cpuDW.data(), cpuDB.data(), dY.data(), y.data(), in.data(),
                       weight.data(), c.N, g, ActivationFn::Linear, 0.0f);

  // forward
  DeviceVector<float> dIn(in), dWeight(weight), dBias(bias), dDPooled(dPooled);
  DeviceVector<float> gPooled(pooledSize);
  DeviceVector<int32_t> gArgmax(pooledSize);
  poison(gPooled);
  poison(gArgmax);
  cuda::conv2d_maxpool_forward(nullptr, gPooled.ptr, gArgmax.ptr, dIn.ptr, dWeight.ptr, dBias.ptr, c.N, g, p, c.act,
                               alpha);
  CHECK_PARITY(name + " pooled", gPooled.download(), cpuPooled);
  const std::vector<int32_t> am = gArgmax.download();
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < pooledSize; ++i)
    if (am[i] != cpuArgmax[i] && mismatches++ == 0) first = i;
  CHECK_MSG(mismatches == 0, name + " argmax exact" +
                                 (mismatches ? " (" + std::to_string(mismatches) + " differ, first at " +
                                                   std::to_string(first) + ": " + std::to_string(am[first]) + " vs " +
                                                   std::to_string(cpuArgmax[first]) + ")"
                                             : std::string()));

  // weight gradient, twice: the same bits
  const size_t ws = cuda::conv2d_maxpool_weights_workspace(c.N, g, p);
  DeviceVector<float> work(std::max<size_t>(ws, 1));
  poison(work);
  DeviceVector<float> gDW(wSize), gDB(size_t(g.F));
  poison(gDW);
  poison(gDB);
  cuda::conv2d_maxpool_backward_weights(nullptr, gDW.ptr, gDB.ptr, dDPooled.ptr, gPooled.ptr, gArgmax.ptr, dIn.ptr,
                                        c.N, g, p, c.act, alpha, work.ptr);
  const std::vector<float> dw1 = gDW.download(), db1 = gDB.download();
  // the conv sums are exact in any order: relative to the largest magnitude, no absolute slack
  reportComparison(name + " dWeight", compareToCpu(dw1, cpuDW, true), __FILE__, __LINE__);
  reportComparison(name + " dBias", compareToCpu(db1, cpuDB, true), __FILE__, __LINE__);
  poison(gDW);
  poison(gDB);
  poison(work);
  cuda::conv2d_maxpool_backward_weights(nullptr, gDW.ptr, gDB.ptr, dDPooled.ptr, gPooled.ptr, gArgmax.ptr, dIn.ptr,
                                        c.N, g, p, c.act, alpha, work.ptr);
  CHECK_MSG(sameBits(gDW.download(), dw1) && sameBits(gDB.download(), db1),
            name + " backward_weights is bit-identical on a second run");
  // three launches in a row, then replays of a captured graph: the same bits
  cudaStream_t stream;
  cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  auto launch = [&] {
    cuda::conv2d_maxpool_backward_weights(stream, gDW.ptr, gDB.ptr, dDPooled.ptr, gPooled.ptr, gArgmax.ptr, dIn.ptr,
                                          c.N, g, p, c.act, alpha, work.ptr);
  };
  CHECK_MSG(sameBitsWhenRepeated(stream, launch, {&gDW, &gDB}, {dw1, db1}, 4),
            name + " backward_weights: 3 launches in a row and 4 graph replays give the same bits");
  cudaOk(cudaStreamDestroy(stream), "stream");
}

// ---- --bench ----

int bench() {
  const ActivationFn R = ActivationFn::ReLU;
  const Case cases[] = {
      {{"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'}, 4, 4, R},
      {{"seed001 F64", 100, 1, 28, 28, 64, 3, 3, 1, 'v'}, 2, 2, R},
      {{"seed001 F256", 1000, 1, 28, 28, 256, 3, 3, 1, 'v'}, 2, 2, R},
      {{"seed002 conv2 v", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, 2, 2, R},
      {{"seed002 conv2 s", 32, 8, 28, 28, 8, 5, 5, 1, 's'}, 2, 2, R},
      {{"keras conv2", 128, 32, 26, 26, 64, 3, 3, 1, 'v'}, 2, 2, R},
      {{"lenet conv2 max", 128, 6, 14, 14, 16, 5, 5, 1, 'v'}, 2, 2, R},
      {{"fast conv1", 256, 1, 28, 28, 24, 5, 5, 1, 'v'}, 2, 2, R},
      {{"fast conv1 128", 128, 1, 28, 28, 24, 5, 5, 1, 'v'}, 2, 2, R},
      {{"fast conv2", 256, 24, 12, 12, 32, 5, 5, 1, 'v'}, 2, 2, R},
  };
  cudaStream_t stream;
  cudaOk(cudaStreamCreate(&stream), "stream");
  std::printf("microseconds per launch in a CUDA graph of 20 (median of 50)\n");
  std::printf("%-16s %9s %9s | %11s %11s %10s\n", "shape", "fused fwd", "fused dW", "unfused fwd", "unfused bwd",
              "ws floats");
  for (const Case& c : cases) {
    const ConvGeometry g = geometryOf(c);
    const PoolGeometry p = poolOf(c, g);
    if (!cuda::convPoolSupported(g, p)) {
      std::printf("%-16s unsupported\n", c.name.c_str());
      continue;
    }
    const size_t inSize = size_t(c.N) * g.C * g.H * g.W, outSize = size_t(c.N) * g.F * g.OH * g.OW;
    const size_t pooledSize = size_t(c.N) * g.F * p.OH * p.OW;
    const size_t wSize = size_t(g.F) * size_t(g.colRows());
    DeviceVector<float> in(randomNonZero(inSize, 1, 1.0f)), weight(randomNonZero(wSize, 2, 0.3f)),
        bias(randomNonZero(size_t(g.F), 3, 0.1f)), dPooled(randomNonZero(pooledSize, 4, 1.0f));
    DeviceVector<float> pooled(pooledSize), dW(wSize), dB(size_t(g.F)), out(outSize), dOut(outSize);
    DeviceVector<int32_t> argmax(pooledSize);
    const size_t ws = cuda::conv2d_maxpool_weights_workspace(c.N, g, p);
    DeviceVector<float> work(std::max<size_t>(ws, 1));
    const size_t ws2 = cuda::conv2d_weights_workspace(c.N, g);
    DeviceVector<float> work2(std::max<size_t>(ws2, 1));
    auto fwd = [&] {
      cuda::conv2d_maxpool_forward(stream, pooled.ptr, argmax.ptr, in.ptr, weight.ptr, bias.ptr, c.N, g, p, R, 0);
    };
    auto dw = [&] {
      cuda::conv2d_maxpool_backward_weights(stream, dW.ptr, dB.ptr, dPooled.ptr, pooled.ptr, argmax.ptr, in.ptr, c.N,
                                            g, p, R, 0, work.ptr);
    };
    auto ufwd = [&] {
      cuda::conv2d_forward(stream, out.ptr, in.ptr, weight.ptr, bias.ptr, c.N, g, R, 0);
      cuda::maxpool_forward(stream, pooled.ptr, argmax.ptr, out.ptr, c.N, p);
    };
    auto ubwd = [&] {
      cuda::maxpool_backward_from_output(stream, dOut.ptr, dPooled.ptr, argmax.ptr, pooled.ptr, c.N, p, R, 0);
      cuda::conv2d_backward_weights(stream, dW.ptr, dB.ptr, dOut.ptr, in.ptr, c.N, g, work2.ptr);
    };
    fwd();
    cudaOk(cudaStreamSynchronize(stream), "fwd");
    const float tf = timeLaunches(fwd, stream, true), tw = timeLaunches(dw, stream, true);
    const float uf = timeLaunches(ufwd, stream, true), uw = timeLaunches(ubwd, stream, true);
    std::printf("%-16s %9.1f %9.1f | %11.1f %11.1f %10zu\n", c.name.c_str(), tf, tw, uf, uw, ws);
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
  const ActivationFn R = ActivationFn::ReLU, L = ActivationFn::Linear, T = ActivationFn::Tanh,
                     S = ActivationFn::Sigmoid, LR = ActivationFn::LeakyReLU, SP = ActivationFn::Softplus;
  const Case cases[] = {
      // the presets' shapes (smaller batches where the CPU reference would be slow)
      {{"seed000 conv2", 32, 4, 28, 28, 4, 2, 2, 1, 's'}, 4, 4, R},
      {{"seed001 F64", 100, 1, 28, 28, 64, 3, 3, 1, 'v'}, 2, 2, R},
      {{"seed001 F256", 16, 1, 28, 28, 256, 3, 3, 1, 'v'}, 2, 2, R},
      {{"seed002 conv2 valid", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, 2, 2, R},
      {{"seed002 conv2 valid linear", 32, 8, 24, 24, 8, 5, 5, 1, 'v'}, 2, 2, L},
      {{"seed002 conv2 same", 32, 8, 28, 28, 8, 5, 5, 1, 's'}, 2, 2, L},
      {{"keras conv2", 32, 32, 26, 26, 64, 3, 3, 1, 'v'}, 2, 2, R},
      {{"lenet conv2 (max)", 16, 6, 14, 14, 16, 5, 5, 1, 'v'}, 2, 2, T},
      {{"fast_mnist conv1", 16, 1, 28, 28, 24, 5, 5, 1, 'v'}, 2, 2, R},
      {{"fast_mnist conv2", 8, 24, 12, 12, 32, 5, 5, 1, 'v'}, 2, 2, R},
      // odd geometries
      {{"pool 3/2 overlap C=3", 4, 3, 11, 11, 5, 3, 3, 1, 'v'}, 3, 2, S},
      {{"pool 2/1 overlap", 3, 2, 8, 8, 6, 3, 3, 1, 's'}, 2, 1, LR},
      {{"pool 4/2 overlap", 2, 2, 12, 12, 4, 3, 3, 1, 's'}, 4, 2, R},
      {{"floor mode 7 -> 3", 2, 3, 9, 9, 7, 3, 3, 1, 'v'}, 2, 2, T},
      {{"N=1 pool 3/3 floor", 1, 3, 10, 10, 12, 3, 3, 1, 's'}, 3, 3, R},
      {{"conv stride 2", 3, 2, 13, 13, 9, 3, 3, 2, 'v'}, 2, 2, L},
      {{"F=70 (filter tails)", 4, 5, 12, 12, 70, 3, 3, 1, 'v'}, 2, 2, R},
      {{"F=70 pool 3", 3, 5, 12, 12, 70, 3, 3, 1, 's'}, 3, 3, LR},
      {{"2x2 same even pads C=3", 5, 3, 9, 7, 7, 2, 2, 1, 's'}, 2, 2, SP},
      {{"wide 56x56 C=36 (row tiles)", 4, 36, 56, 56, 20, 3, 3, 1, 's'}, 2, 2, R},
      {{"N=1 C=1 relu F=1", 1, 1, 6, 6, 1, 3, 3, 1, 'v'}, 2, 2, R},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) runCase(pool, c, seed++);
  return nnstudio_test::summary();
}

#else
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
