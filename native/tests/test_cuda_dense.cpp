// The CUDA GEMM (cuda/gemm.cu) and dense layer (cuda/dense.cu) against references: gemm() in its four
// transpose modes against a double-precision loop, dense passes against cpu::dense_* and the CPU
// activations. Random inputs (fixed seeds), outputs poisoned with NaN before each launch, guard zones
// around C that must stay poisoned, misaligned operands (scalar load paths), odd sizes, K = 1 and 0, the
// split-K (cluster) shapes run twice for bitwise determinism, and one CUDA graph capture.
// Tolerance: max |gpu - ref| <= 1e-4 * (1 + max |ref|).
// NNSTUDIO_QUICK=1 leaves out the large shapes (for compute-sanitizer runs).
// NNSTUDIO_TIMING=1 in the environment also prints the median time of each dense pass for the shapes
// that matter (200 launches after warm-up, cudaEvent), with the GEMM plan chosen; NNSTUDIO_TIMING=only
// prints just that.
#ifdef NNSTUDIO_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cuda/device_caps.h"
#include "cuda/kernel_choice.h"
#include "cuda/kernels.h"
#include "cuda_test_util.h"
#include "spec/model.h"
#include "test_util.h"

using namespace nnstudio;
using nnstudio::test::DeviceVector;
using nnstudio::test::sameBits;

namespace {

const ActivationFn kActs[] = {ActivationFn::Linear,  ActivationFn::ReLU,     ActivationFn::LeakyReLU,
                              ActivationFn::Sigmoid, ActivationFn::Tanh,     ActivationFn::Softplus,
                              ActivationFn::Softmax};
// "64x64/2": the GEMM plan the chooser gives a shape on this device
std::string planName(int M, int N, int K) {
  return cuda::chooseGemm(cuda::currentDeviceCaps(), cuda::kernelOverrides(), M, N, K).name();
}

// the engine's name; Softmax is run as Linear here (a row operation, never fused)
std::string actName(ActivationFn a) {
  return std::string(activationName(a)) + (a == ActivationFn::Softmax ? "(as linear)" : "");
}
// what the kernels apply for an activation: Softmax is a row operation, never fused (Linear)
ActivationFn fused(ActivationFn a) { return a == ActivationFn::Softmax ? ActivationFn::Linear : a; }

std::vector<float> randomVector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * u(rng);
  return v;
}

// max |gpu - ref| <= 1e-4 (1 + max |ref|), every element finite
void expectClose(const std::string& what, const std::vector<float>& gpu, size_t offset, const std::vector<float>& ref,
                 int line) {
  double maxErr = 0, maxRef = 0;
  bool finite = gpu.size() >= offset + ref.size();
  for (size_t i = 0; finite && i < ref.size(); ++i) {
    const double g = gpu[offset + i], r = ref[i];
    if (!std::isfinite(g)) {
      finite = false;
      break;
    }
    maxErr = std::max(maxErr, std::fabs(g - r));
    maxRef = std::max(maxRef, std::fabs(r));
  }
  const double tol = 1e-4 * (1.0 + maxRef);
  nnstudio_test::report(finite && maxErr <= tol, what, __FILE__, line,
                        finite ? "max err " + nnstudio_test::num(maxErr) + " (tol " + nnstudio_test::num(tol) + ")"
                               : std::string("non-finite or missing output"));
}
#define EXPECT_CLOSE(what, gpu, offset, ref) expectClose(what, gpu, offset, ref, __LINE__)

// the elements of v outside [begin, begin + n) still hold the poison (0xFFFFFFFF)
bool guardsIntact(const std::vector<float>& v, size_t begin, size_t n) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (i >= begin && i < begin + n) continue;
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    if (bits != 0xFFFFFFFFu) return false;
  }
  return true;
}

std::vector<float> withPad(const std::vector<float>& v, size_t pad) {
  std::vector<float> p(v.size() + pad, 0.0f);
  std::copy(v.begin(), v.end(), p.begin() + pad);
  return p;
}

// ---- gemm() directly ----

std::vector<float> refGemm(bool tA, bool tB, int M, int N, int K, const std::vector<float>& A,
                           const std::vector<float>& B, const cuda::GemmEpilogue& e, const std::vector<float>* bias,
                           const std::vector<float>* gate) {
  // op(A) as (M, K) and op(B)^T as (N, K), so every dot product runs along contiguous rows
  std::vector<double> a(size_t(M) * K), bt(size_t(N) * K);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) a[size_t(m) * K + k] = tA ? A[size_t(k) * M + m] : A[size_t(m) * K + k];
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) bt[size_t(n) * K + k] = tB ? B[size_t(n) * K + k] : B[size_t(k) * N + n];
  std::vector<float> C(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      const double* x = a.data() + size_t(m) * K;
      const double* y = bt.data() + size_t(n) * K;
      double s = 0;
      for (int k = 0; k < K; ++k) s += x[k] * y[k];
      float v = float(s);
      if (bias) v += (*bias)[n];
      C[size_t(m) * N + n] = v;
    }
  cpu::activation_forward(C.data(), C.data(), M, N, fused(e.act), e.alpha);
  if (gate) cpu::activation_backward(C.data(), C.data(), gate->data(), M, N, fused(e.gateAct), e.gateAlpha);
  return C;
}

struct GemmCase {
  int M, N, K;
};

// pad: operands start `pad` floats into their buffers (pad 1: only 4-byte aligned)
void checkGemm(cudaStream_t stream, bool tA, bool tB, GemmCase c, size_t pad = 0, ActivationFn act = ActivationFn::Linear,
               bool useBias = false, ActivationFn gateAct = ActivationFn::Linear, uint32_t seed = 1) {
  const auto A = randomVector(size_t(c.M) * c.K, seed * 7 + 1);
  const auto B = randomVector(size_t(c.K) * c.N, seed * 7 + 2);
  const auto bias = randomVector(size_t(c.N), seed * 7 + 3);
  std::vector<float> gate = randomVector(size_t(c.M) * c.N, seed * 7 + 4, 2.0f);
  cpu::activation_forward(gate.data(), gate.data(), c.M, c.N, fused(gateAct), 0.05f);  // a real activation output
  const bool useGate = gateAct != ActivationFn::Linear;

  DeviceVector<float> dA(withPad(A, pad)), dB(withPad(B, pad)), dBias(bias), dGate(gate);
  const size_t guard = 37;  // poisoned floats on each side of C
  DeviceVector<float> dC(guard + size_t(c.M) * c.N + guard + pad);
  cuda::GemmEpilogue e;
  e.act = act;
  e.alpha = 0.1f;
  if (useBias) e.bias = dBias.ptr;
  if (useGate) {
    e.gate = dGate.ptr;
    e.gateAct = gateAct;
    e.gateAlpha = 0.05f;
  }
  cuda::gemm(stream, tA, tB, c.M, c.N, c.K, dA.ptr + pad, dB.ptr + pad, dC.ptr + guard + pad, e);
  const auto got = dC.download();
  const auto ref = refGemm(tA, tB, c.M, c.N, c.K, A, B, e, useBias ? &bias : nullptr, useGate ? &gate : nullptr);
  char what[256];
  std::snprintf(what, sizeof what, "gemm %s%s M=%d N=%d K=%d%s%s%s%s%s [%s]", tA ? "T" : "N", tB ? "T" : "N", c.M, c.N,
                c.K, pad ? " misaligned" : "", useBias ? " +bias" : "",
                act != ActivationFn::Linear ? (std::string(" act ") + actName(act)).c_str() : "",
                useGate ? " gate " : "", useGate ? actName(gateAct).c_str() : "",
                planName(c.M, c.N, c.K).c_str());
  EXPECT_CLOSE(what, got, guard + pad, ref);
  CHECK_MSG(guardsIntact(got, guard + pad, size_t(c.M) * c.N), std::string("  nothing written outside C: ") + what);
}

// ---- dense ----

struct DenseCase {
  int N, inputs, units;
};

void checkDense(cpu::ThreadPool& pool, cudaStream_t stream, DenseCase c, ActivationFn act, ActivationFn inAct,
                uint32_t seed) {
  const float alpha = 0.02f, inAlpha = 0.03f;
  std::vector<float> in = randomVector(size_t(c.N) * c.inputs, seed * 11 + 1, 2.0f);
  cpu::activation_forward(in.data(), in.data(), c.N, c.inputs, fused(inAct), inAlpha);  // the previous layer's output
  const auto weight = randomVector(size_t(c.units) * c.inputs, seed * 11 + 2, 1.0f / std::sqrt(float(c.inputs)));
  const auto bias = randomVector(size_t(c.units), seed * 11 + 3, 0.5f);
  const auto dOut = randomVector(size_t(c.N) * c.units, seed * 11 + 4);
  DeviceVector<float> dIn_(in), dW_(weight), dB_(bias), dDOut(dOut);
  char tag[160];
  std::snprintf(tag, sizeof tag, "N=%d %d->%d", c.N, c.inputs, c.units);

  // forward
  {
    DeviceVector<float> out(size_t(c.N) * c.units);
    cuda::dense_forward(stream, out.ptr, dIn_.ptr, dW_.ptr, dB_.ptr, c.N, c.inputs, c.units, act, alpha);
    const auto got = out.download();
    std::vector<float> ref(size_t(c.N) * c.units);
    cpu::dense_forward(pool, ref.data(), in.data(), weight.data(), bias.data(), c.N, c.inputs, c.units);
    cpu::activation_forward(ref.data(), ref.data(), c.N, c.units, fused(act), alpha);
    EXPECT_CLOSE(std::string("dense forward ") + tag + " " + actName(act) + " [" +
                     planName(c.N, c.units, c.inputs) + "]",
                 got, 0, ref);
  }
  // weight and bias gradients
  {
    const size_t ws = cuda::dense_weights_workspace(c.N, c.units);
    DeviceVector<float> dW(size_t(c.units) * c.inputs), dB(size_t(c.units)), work(ws);
    cuda::dense_backward_weights(stream, dW.ptr, dB.ptr, dDOut.ptr, dIn_.ptr, c.N, c.inputs, c.units,
                                 ws ? work.ptr : nullptr);
    const auto gotW = dW.download(), gotB = dB.download();
    std::vector<float> refW(size_t(c.units) * c.inputs), refB(size_t(c.units));
    cpu::dense_backward_weights(pool, refW.data(), refB.data(), dOut.data(), in.data(), c.N, c.inputs, c.units);
    EXPECT_CLOSE(std::string("dense dWeight ") + tag + " [" + planName(c.units, c.inputs, c.N) + "]",
                 gotW, 0, refW);
    EXPECT_CLOSE(std::string("dense dBias ") + tag, gotB, 0, refB);
  }
  // input gradient, gated by the activation that produced `in`
  {
    DeviceVector<float> dIn(size_t(c.N) * c.inputs);
    cuda::dense_backward_input(stream, dIn.ptr, dDOut.ptr, dW_.ptr, dIn_.ptr, c.N, c.inputs, c.units, inAct, inAlpha);
    const auto got = dIn.download();
    std::vector<float> ref(size_t(c.N) * c.inputs);
    cpu::dense_backward_input(pool, ref.data(), dOut.data(), weight.data(), c.N, c.inputs, c.units);
    cpu::activation_backward(ref.data(), ref.data(), in.data(), c.N, c.inputs, fused(inAct), inAlpha);
    EXPECT_CLOSE(std::string("dense dInput ") + tag + " gate " + actName(inAct) + " [" +
                     planName(c.N, c.inputs, c.units) + "]",
                 got, 0, ref);
  }
}

// the same launch twice gives the same bits (split-K reduces in a fixed order, no atomics)
void checkDeterminism(cudaStream_t stream, DenseCase c) {
  const auto in = randomVector(size_t(c.N) * c.inputs, 91);
  const auto weight = randomVector(size_t(c.units) * c.inputs, 92, 0.05f);
  const auto dOut = randomVector(size_t(c.N) * c.units, 93);
  DeviceVector<float> dInp(in), dWt(weight), dBias(std::vector<float>(size_t(c.units), 0.1f)), dDOut(dOut);
  DeviceVector<float> o1(size_t(c.N) * c.units), o2(size_t(c.N) * c.units);
  DeviceVector<float> w1(size_t(c.units) * c.inputs), w2(size_t(c.units) * c.inputs), b1(size_t(c.units)),
      b2(size_t(c.units));
  cuda::dense_forward(stream, o1.ptr, dInp.ptr, dWt.ptr, dBias.ptr, c.N, c.inputs, c.units, ActivationFn::Tanh, 0.0f);
  cuda::dense_forward(stream, o2.ptr, dInp.ptr, dWt.ptr, dBias.ptr, c.N, c.inputs, c.units, ActivationFn::Tanh, 0.0f);
  cuda::dense_backward_weights(stream, w1.ptr, b1.ptr, dDOut.ptr, dInp.ptr, c.N, c.inputs, c.units, nullptr);
  cuda::dense_backward_weights(stream, w2.ptr, b2.ptr, dDOut.ptr, dInp.ptr, c.N, c.inputs, c.units, nullptr);
  char tag[128];
  std::snprintf(tag, sizeof tag, "N=%d %d->%d", c.N, c.inputs, c.units);
  CHECK_MSG(sameBits(o1.download(), o2.download()), std::string("deterministic forward ") + tag + " [" +
                                                    planName(c.N, c.units, c.inputs) + "]");
  CHECK_MSG(sameBits(w1.download(), w2.download()) && sameBits(b1.download(), b2.download()),
            std::string("deterministic dWeight/dBias ") + tag + " [" +
                planName(c.units, c.inputs, c.N) + "]");
}

// the three passes captured in a CUDA graph and replayed give the bits of direct launches
void checkGraphCapture(cudaStream_t stream, DenseCase c) {
  using nnstudio::test::cudaOk;
  std::vector<float> in = randomVector(size_t(c.N) * c.inputs, 71);
  cpu::activation_forward(in.data(), in.data(), c.N, c.inputs, ActivationFn::ReLU, 0.0f);
  const auto weight = randomVector(size_t(c.units) * c.inputs, 72, 0.05f);
  const auto dOut = randomVector(size_t(c.N) * c.units, 73);
  DeviceVector<float> dInp(in), dWt(weight), dBias(randomVector(size_t(c.units), 74)), dDOut(dOut);
  struct Outs {
    DeviceVector<float> out, dW, dB, dIn;
    Outs(DenseCase c)
        : out(size_t(c.N) * c.units), dW(size_t(c.units) * c.inputs), dB(size_t(c.units)), dIn(size_t(c.N) * c.inputs) {}
  } direct(c), graphed(c);
  auto enqueue = [&](Outs& o) {
    cuda::dense_forward(stream, o.out.ptr, dInp.ptr, dWt.ptr, dBias.ptr, c.N, c.inputs, c.units, ActivationFn::ReLU, 0.f);
    cuda::dense_backward_weights(stream, o.dW.ptr, o.dB.ptr, dDOut.ptr, dInp.ptr, c.N, c.inputs, c.units, nullptr);
    cuda::dense_backward_input(stream, o.dIn.ptr, dDOut.ptr, dWt.ptr, dInp.ptr, c.N, c.inputs, c.units,
                               ActivationFn::ReLU, 0.f);
  };
  enqueue(direct);
  cudaOk(cudaStreamSynchronize(stream), "sync");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
  enqueue(graphed);
  cudaOk(cudaStreamEndCapture(stream, &graph), "end capture");
  cudaOk(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cudaOk(cudaGraphLaunch(exec, stream), "graph launch");
  cudaOk(cudaStreamSynchronize(stream), "sync");
  auto same = [](const DeviceVector<float>& a, const DeviceVector<float>& b) {
    return sameBits(a.download(), b.download());
  };
  CHECK_MSG(same(direct.out, graphed.out) && same(direct.dW, graphed.dW) && same(direct.dB, graphed.dB) &&
                same(direct.dIn, graphed.dIn),
            "dense passes captured in a CUDA graph replay to the same bits");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// ---- timing (NNSTUDIO_TIMING=1) ----

template <class F>
double medianMicros(cudaStream_t stream, F&& launch) {
  using nnstudio::test::cudaOk;
  cudaEvent_t a, b;
  cudaOk(cudaEventCreate(&a), "event");
  cudaOk(cudaEventCreate(&b), "event");
  for (int i = 0; i < 20; ++i) launch();
  std::vector<float> times;
  for (int i = 0; i < 200; ++i) {
    cudaOk(cudaEventRecord(a, stream), "record");
    launch();
    cudaOk(cudaEventRecord(b, stream), "record");
    cudaOk(cudaEventSynchronize(b), "sync");
    float ms = 0;
    cudaOk(cudaEventElapsedTime(&ms, a, b), "elapsed");
    times.push_back(ms * 1000.0f);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void timeDense(cudaStream_t stream) {
  const int batches[] = {32, 64, 100, 128, 1000};
  const int layers[][2] = {{784, 128},   {128, 10},    {196, 128},  {392, 128},
                           {10816, 10}, {43264, 10}, {9216, 128}, {1152, 128}};
  cudaDeviceProp prop{};
  int device = 0;
  cudaGetDevice(&device);
  cudaGetDeviceProperties(&prop, device);
  std::printf("timing on %s, %d SMs: median of 200 launches in us (relu forward, relu-gated input gradient);"
              " plans tile/splits\n",
              prop.name, prop.multiProcessorCount);
  for (const auto& l : layers)
    for (int N : batches) {
      const int inputs = l[0], units = l[1];
      DeviceVector<float> in(randomVector(size_t(N) * inputs, 5)), w(randomVector(size_t(units) * inputs, 6, 0.02f)),
          bias(randomVector(size_t(units), 7)), dOut(randomVector(size_t(N) * units, 8));
      DeviceVector<float> out(size_t(N) * units), dW(size_t(units) * inputs), dB(static_cast<size_t>(units)),
          dIn(size_t(N) * inputs);
      const double f = medianMicros(stream, [&] {
        cuda::dense_forward(stream, out.ptr, in.ptr, w.ptr, bias.ptr, N, inputs, units, ActivationFn::ReLU, 0.f);
      });
      const double bw = medianMicros(stream, [&] {
        cuda::dense_backward_weights(stream, dW.ptr, dB.ptr, dOut.ptr, in.ptr, N, inputs, units, nullptr);
      });
      const double bi = medianMicros(stream, [&] {
        cuda::dense_backward_input(stream, dIn.ptr, dOut.ptr, w.ptr, in.ptr, N, inputs, units, ActivationFn::ReLU, 0.f);
      });
      std::printf("timing N=%-4d %5d->%-3d fwd %6.1f dW+dB %6.1f dIn %6.1f | %s %s %s\n", N, inputs, units, f, bw, bi,
                  planName(N, units, inputs).c_str(),
                  planName(units, inputs, N).c_str(),
                  planName(N, inputs, units).c_str());
    }
}

void runChecks(cpu::ThreadPool& pool, cudaStream_t stream) {
  const char* timing = std::getenv("NNSTUDIO_TIMING");
  if (timing && std::strcmp(timing, "only") == 0) {
    timeDense(stream);
    return;
  }
  std::printf("gemm: four transpose modes\n");
  const GemmCase shapes[] = {{33, 17, 5},    {1, 1, 1},     {7, 5, 1},       {3, 40, 2},     {64, 64, 64},
                             {65, 130, 47},  {10, 300, 128}, {100, 10, 2000}, {257, 129, 300}, {128, 128, 784},
                             {32, 128, 784}, {16, 16, 4096},
                             // on 132 SMs: 64x64, 64x64 split 4, 32x32, 32x32 split 8, 16x64, 16x64 split 4
                             {1024, 1024, 32}, {512, 512, 512}, {640, 640, 64}, {256, 256, 1024}, {10, 43264, 32},
                             {10, 10816, 1000}};
  uint32_t seed = 1;
  for (const auto& c : shapes)
    for (int mode = 0; mode < 4; ++mode)
      checkGemm(stream, mode & 2, mode & 1, c, 0, ActivationFn::Linear, false, ActivationFn::Linear, seed++);
  std::printf("gemm: misaligned operands (scalar loads)\n");
  for (const GemmCase c : {GemmCase{64, 64, 64}, GemmCase{128, 128, 784}, GemmCase{12, 200, 64}, GemmCase{33, 17, 5},
                           GemmCase{512, 512, 512}, GemmCase{640, 640, 64}, GemmCase{256, 256, 1024},
                           GemmCase{10, 10816, 1000}})
    for (int mode = 0; mode < 4; ++mode)
      checkGemm(stream, mode & 2, mode & 1, c, 1, ActivationFn::Linear, false, ActivationFn::Linear, seed++);
  std::printf("gemm: K = 0 (epilogue of zeros)\n");
  checkGemm(stream, false, true, {9, 11, 0}, 0, ActivationFn::Sigmoid, true, ActivationFn::Linear, seed++);
  std::printf("gemm: epilogues\n");
  for (ActivationFn a : kActs) {
    checkGemm(stream, false, true, {37, 45, 29}, 0, a, true, ActivationFn::Linear, seed++);
    checkGemm(stream, false, true, {128, 128, 784}, 0, a, true, ActivationFn::Linear, seed++);  // split-K epilogue
    checkGemm(stream, false, false, {37, 45, 29}, 0, ActivationFn::Linear, false, a, seed++);
    checkGemm(stream, false, false, {20, 96, 16}, 0, ActivationFn::Linear, false, a, seed++);
    checkGemm(stream, true, true, {40, 12, 700}, 0, a, true, a, seed++);  // both, split-K
  }

  std::printf("dense: every activation\n");
  for (int i = 0; i < 7; ++i) checkDense(pool, stream, {33, 50, 17}, kActs[i], kActs[(i + 3) % 7], 100 + i);
  std::printf("dense: odd shapes\n");
  checkDense(pool, stream, {1, 1, 1}, ActivationFn::ReLU, ActivationFn::Sigmoid, 200);
  checkDense(pool, stream, {7, 5, 3}, ActivationFn::Tanh, ActivationFn::ReLU, 201);
  checkDense(pool, stream, {33, 5, 17}, ActivationFn::Softplus, ActivationFn::LeakyReLU, 202);
  checkDense(pool, stream, {3, 1000, 1}, ActivationFn::Sigmoid, ActivationFn::Tanh, 203);
  // NNSTUDIO_QUICK=1 (e.g. under compute-sanitizer) leaves out the large shapes
  const char* quickEnv = std::getenv("NNSTUDIO_QUICK");
  const bool quick = quickEnv && *quickEnv && std::strcmp(quickEnv, "0") != 0;
  if (!quick) std::printf("dense: the shapes that matter\n");
  const int batches[] = {32, 64, 100, 128, 1000};
  const int layers[][2] = {{784, 128},   {128, 10},    {196, 128},  {392, 128},
                           {10816, 10}, {43264, 10}, {9216, 128}, {1152, 128}};
  int k = 0;
  for (const auto& l : layers)
    for (int N : batches) {
      if (quick) break;
      checkDense(pool, stream, {N, l[0], l[1]}, kActs[k % 6], kActs[(k + 2) % 6], 300 + k);
      ++k;
    }
  std::printf("determinism and graph capture\n");
  checkDeterminism(stream, {128, 784, 128});
  checkGraphCapture(stream, {128, 784, 128});
  if (!quick) {
    checkDeterminism(stream, {128, 9216, 128});
    checkDeterminism(stream, {128, 43264, 10});
    checkDeterminism(stream, {1000, 784, 128});
    checkGraphCapture(stream, {64, 10816, 10});
  }

  if (timing && *timing && std::strcmp(timing, "0") != 0) timeDense(stream);
}

}  // namespace

int main() {
  if (!nnstudio::test::haveCudaDevice()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  cudaStream_t stream;
  nnstudio::test::cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cpu::ThreadPool pool(4);
  try {
    runChecks(pool, stream);
  } catch (const std::exception& e) {
    CHECK_MSG(false, std::string("no exception: ") + e.what());
  }
  cudaStreamDestroy(stream);
  return nnstudio_test::summary();
}

#else
#include <cstdio>
int main() {
  std::puts("skipped: no CUDA device (built without CUDA)");
  return 0;
}
#endif
