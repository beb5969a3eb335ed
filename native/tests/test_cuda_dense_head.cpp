// The fused classifier head (cuda/dense_head.cu: a dense layer's forward, the loss and the layer's
// backward in one launch) against the unfused launches it replaces (dense_forward, loss_forward_backward,
// activation_backward, dense_backward_weights, dense_backward_input), which test_cuda_layers and
// test_cuda_dense check against the CPU: every loss, with and without an input gradient, with a ReLU
// gate and other head activations, odd sizes (N = 37, inputs not a multiple of 4, inputs > the block,
// one output, 32 outputs), outputs poisoned with NaN and guard zones that must stay poisoned, the
// StepState totals and the divergence rule (a NaN input flags the step; an already diverged run keeps
// its totals), bitwise determinism, one CUDA graph capture; then whole networks with the head fused
// against the same networks unfused (fusion forced on vs off), input gradient included.
// Tolerance: max |fused - unfused| <= 1e-4 * max(1e-3, max |unfused|).
// --bench: fused vs unfused time per training step's head (inside CUDA graphs) over head shapes.
#ifdef NNSTUDIO_WITH_CUDA
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/kernel_overrides.h"
#include "cuda/kernels.h"
#include "cuda/network.h"
#include "cuda_test_util.h"
#include "cuda_timing.h"
#include "nnstudio/engine.h"
#include "spec/model.h"
#include "test_util.h"

using namespace nnstudio;
using nnstudio::test::DeviceVector;
using nnstudio::test::randomVector;
using nnstudio::test::relError;
using nnstudio::test::sameBits;

namespace {

constexpr int kGuard = 16;  // poisoned floats after every output, which must stay poisoned

bool poisoned(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits == 0xFFFFFFFFu;
}

bool guardsIntact(const std::vector<float>& v, size_t used) {
  for (size_t i = used; i < v.size(); ++i)
    if (!poisoned(v[i])) return false;
  return true;
}

std::vector<float> head(const std::vector<float>& v, size_t n) { return std::vector<float>(v.begin(), v.begin() + n); }

struct HeadCase {
  int N, I, K;
  LossKind loss;
  ActivationFn act;    // the head's activation (Linear: logits)
  ActivationFn inAct;  // the previous layer's, applied by the input gradient
  bool inputGrad;
  int blocks = 0;  // the fused kernel's cluster (0: its own choice)
};

std::string caseName(const HeadCase& c) {
  return std::to_string(c.N) + "x" + std::to_string(c.I) + "->" + std::to_string(c.K) + " " + lossName(c.loss) +
         " act " + activationName(c.act) + (c.inputGrad ? std::string(" dIn gate ") + activationName(c.inAct) : " no dIn") +
         (c.blocks ? ", " + std::to_string(c.blocks) + " block(s)" : "");
}

// the layer's inputs: the previous activation's outputs (ReLU: non-negative with exact zeros)
std::vector<float> headInput(const HeadCase& c, uint64_t seed) {
  std::vector<float> x = randomVector(size_t(c.N) * c.I, seed);
  if (c.inAct == ActivationFn::ReLU)
    for (float& v : x) v = v > 0 ? v : 0.0f;
  return x;
}

std::vector<int32_t> headLabels(const HeadCase& c) {
  std::vector<int32_t> y(c.N);
  const int classes = c.K == 1 ? 2 : c.K;
  for (int n = 0; n < c.N; ++n) y[n] = (n * 7 + 3) % classes;
  return y;
}

cuda::StepState someState() {
  cuda::StepState s;
  s.globalStep = 41;
  s.epochStep = 5;
  s.sampleLossSum = 12.5;
  s.correct = 17;
  s.samples = 40;
  s.batchLossSum = 3.25;
  s.lossSteps = 4;
  return s;
}

struct HeadResult {
  std::vector<float> out, dW, dB, dIn;
  cuda::StepState state;
};

// one head step, fused or through the unfused launches; every output poisoned first, with guard zones
HeadResult runHead(const HeadCase& c, bool fused, const std::vector<float>& x, const std::vector<float>& w,
                   const std::vector<float>& b, const std::vector<int32_t>& labels, const cuda::StepState& start,
                   cudaStream_t stream) {
  const size_t NK = size_t(c.N) * c.K, KI = size_t(c.K) * c.I, NI = size_t(c.N) * c.I;
  DeviceVector<float> dX(x), dW(w), dB(b), out(NK + kGuard), gW(KI + kGuard), gB(c.K + kGuard), gIn(NI + kGuard),
      dOut(NK);
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{start});
  float* dIn = c.inputGrad ? gIn.ptr : nullptr;
  const float alpha = 0.1f, inAlpha = 0.2f;
  if (fused) {
    cuda::dense_head_fused(stream, c.loss, out.ptr, gW.ptr, gB.ptr, dIn, dX.ptr, dW.ptr, dB.ptr, dLabels.ptr, c.N, c.I,
                           c.K, c.act, alpha, c.inAct, inAlpha, dState.ptr, c.blocks);
  } else {
    cuda::dense_forward(stream, out.ptr, dX.ptr, dW.ptr, dB.ptr, c.N, c.I, c.K, c.act, alpha);
    cuda::loss_forward_backward(stream, c.loss, out.ptr, dLabels.ptr, c.N, c.K, dOut.ptr, dState.ptr);
    if (c.act != ActivationFn::Linear)
      cuda::activation_backward(stream, dOut.ptr, dOut.ptr, out.ptr, c.N, c.K, c.act, alpha);
    cuda::dense_backward_weights(stream, gW.ptr, gB.ptr, dOut.ptr, dX.ptr, c.N, c.I, c.K, nullptr);
    if (dIn) cuda::dense_backward_input(stream, dIn, dOut.ptr, dW.ptr, dX.ptr, c.N, c.I, c.K, c.inAct, inAlpha);
  }
  test::cudaOk(cudaStreamSynchronize(stream), "head");
  HeadResult r;
  r.out = out.download();
  r.dW = gW.download();
  r.dB = gB.download();
  r.dIn = gIn.download();
  r.state = dState.download()[0];
  return r;
}


void checkHead(const HeadCase& c, cudaStream_t stream) {
  const std::string name = caseName(c);
  if (!cuda::dense_head_supported(c.N, c.I, c.K)) {
    CHECK_MSG(false, name + ": supported");
    return;
  }
  const auto x = headInput(c, 11 + c.N + c.I);
  const auto w = randomVector(size_t(c.K) * c.I, 12, 1.0f / std::sqrt(float(c.I)));
  const auto b = randomVector(size_t(c.K), 13, 0.1f);
  const auto labels = headLabels(c);
  const cuda::StepState start = someState();
  const HeadResult ref = runHead(c, false, x, w, b, labels, start, stream);
  const HeadResult got = runHead(c, true, x, w, b, labels, start, stream);
  const size_t NK = size_t(c.N) * c.K, KI = size_t(c.K) * c.I, NI = size_t(c.N) * c.I;
  const double eOut = relError(head(got.out, NK), head(ref.out, NK), 1e-3);
  const double eW = relError(head(got.dW, KI), head(ref.dW, KI), 1e-3);
  const double eB = relError(head(got.dB, c.K), head(ref.dB, c.K), 1e-3);
  const double eIn = c.inputGrad ? relError(head(got.dIn, NI), head(ref.dIn, NI), 1e-3) : 0.0;
  CHECK_MSG(eOut <= 1e-4 && eW <= 1e-4 && eB <= 1e-4 && eIn <= 1e-4,
            name + ": outputs, dW, dB" + (c.inputGrad ? ", dIn" : "") + " (rel errors " + nnstudio_test::num(eOut) +
                " " + nnstudio_test::num(eW) + " " + nnstudio_test::num(eB) + " " + nnstudio_test::num(eIn) + ")");
  const bool guards = guardsIntact(got.out, NK) && guardsIntact(got.dW, KI) && guardsIntact(got.dB, c.K) &&
                      guardsIntact(got.dIn, c.inputGrad ? NI : 0);
  CHECK_MSG(guards, name + ": nothing written past the outputs (nor dIn when not asked for)");
  const cuda::StepState &s = got.state, &r = ref.state;
  const bool totals = s.diverged == 0 && r.diverged == 0 && s.samples == r.samples && s.correct == r.correct &&
                      s.lossSteps == r.lossSteps &&
                      std::fabs(s.batchLossSum - r.batchLossSum) <= 1e-6 * (1 + std::fabs(r.batchLossSum)) &&
                      std::fabs(s.sampleLossSum - r.sampleLossSum) <= 1e-6 * (1 + std::fabs(r.sampleLossSum)) &&
                      s.globalStep == r.globalStep && s.epochStep == r.epochStep;
  CHECK_MSG(totals, name + ": StepState totals (loss " + nnstudio_test::num(s.batchLossSum) + " vs " +
                        nnstudio_test::num(r.batchLossSum) + ", correct " + std::to_string(s.correct) + " vs " +
                        std::to_string(r.correct) + ")");
  const HeadResult again = runHead(c, true, x, w, b, labels, start, stream);
  CHECK_MSG(sameBits(again.out, got.out) && sameBits(again.dW, got.dW) && sameBits(again.dB, got.dB) &&
                sameBits(again.dIn, got.dIn) && again.state.batchLossSum == s.batchLossSum,
            name + ": deterministic (bitwise, twice)");
}

// a NaN input flags divergence as lossKernel does; an already diverged run keeps its totals
void checkDivergence(cudaStream_t stream) {
  std::printf("divergence\n");
  for (LossKind loss : {LossKind::SoftmaxCrossEntropy, LossKind::BinaryCrossEntropy, LossKind::MSE, LossKind::MAE}) {
    const HeadCase c{37, 50, 10, loss, ActivationFn::Linear, ActivationFn::ReLU, true};
    auto x = headInput(c, 5);
    x[3 * c.I + 7] = NAN;
    const auto w = randomVector(size_t(c.K) * c.I, 6, 0.2f);
    const auto b = randomVector(size_t(c.K), 7, 0.1f);
    const auto labels = headLabels(c);
    const cuda::StepState start = someState();
    const HeadResult got = runHead(c, true, x, w, b, labels, start, stream);
    const cuda::StepState& s = got.state;
    CHECK_MSG(s.diverged == 1 && s.divergedNaN == 1 && s.divergedAt == start.globalStep + 1 &&
                  s.samples == start.samples && s.correct == start.correct && s.lossSteps == start.lossSteps &&
                  s.batchLossSum == start.batchLossSum && s.sampleLossSum == start.sampleLossSum,
              std::string(lossName(loss)) + ": a NaN input sets diverged (NaN, at step " +
                  std::to_string(s.divergedAt) + ") and leaves the totals");
    // logits that overflow to +inf in any summation order (x >= 0, every weight huge): a NaN or an
    // infinite loss, flagged as unfused
    const std::vector<float> big(w.size(), 3e38f);
    const auto xPos = headInput(HeadCase{c.N, c.I, c.K, loss, ActivationFn::Linear, ActivationFn::ReLU, true}, 8);
    const HeadResult inf = runHead(c, true, xPos, big, b, labels, start, stream);
    const HeadResult infRef = runHead(c, false, xPos, big, b, labels, start, stream);
    CHECK_MSG(inf.state.diverged == 1 && infRef.state.diverged == 1 &&
                  inf.state.divergedNaN == infRef.state.divergedNaN && inf.state.divergedAt == start.globalStep + 1,
              std::string(lossName(loss)) + ": overflowing logits diverge as unfused (NaN " +
                  std::to_string(inf.state.divergedNaN) + " vs " + std::to_string(infRef.state.divergedNaN) + ")");
    // a run that diverged earlier: nothing changes
    cuda::StepState done = start;
    done.diverged = 1;
    done.divergedAt = 3;
    const HeadResult later = runHead(c, true, headInput(c, 9), w, b, labels, done, stream);
    CHECK_MSG(later.state.diverged == 1 && later.state.divergedAt == 3 && later.state.samples == start.samples &&
                  later.state.batchLossSum == start.batchLossSum,
              std::string(lossName(loss)) + ": an already diverged run keeps its totals");
  }
}

void checkGraph(cudaStream_t stream) {
  std::printf("graph capture\n");
  const HeadCase c{64, 128, 10, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, true};
  const auto x = headInput(c, 21);
  const auto w = randomVector(size_t(c.K) * c.I, 22, 0.1f);
  const auto b = randomVector(size_t(c.K), 23, 0.1f);
  const auto labels = headLabels(c);
  const HeadResult direct = runHead(c, true, x, w, b, labels, someState(), stream);
  DeviceVector<float> dX(x), dW(w), dB(b), out(size_t(c.N) * c.K), gW(size_t(c.K) * c.I), gB(c.K),
      gIn(size_t(c.N) * c.I);
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{someState()});
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  test::cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "capture");
  cuda::dense_head_fused(stream, c.loss, out.ptr, gW.ptr, gB.ptr, gIn.ptr, dX.ptr, dW.ptr, dB.ptr, dLabels.ptr, c.N,
                         c.I, c.K, c.act, 0.1f, c.inAct, 0.2f, dState.ptr);
  test::cudaOk(cudaStreamEndCapture(stream, &graph), "capture");
  test::cudaOk(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  test::cudaOk(cudaGraphLaunch(exec, stream), "launch");
  test::cudaOk(cudaGraphLaunch(exec, stream), "launch");
  test::cudaOk(cudaStreamSynchronize(stream), "graph");
  const cuda::StepState s = dState.download()[0];
  CHECK_MSG(sameBits(out.download(), head(direct.out, size_t(c.N) * c.K)) &&
                sameBits(gW.download(), head(direct.dW, size_t(c.K) * c.I)) &&
                sameBits(gIn.download(), head(direct.dIn, size_t(c.N) * c.I)) && s.lossSteps == someState().lossSteps + 2 &&
                s.samples == someState().samples + 2 * c.N,
            "replayed from a graph twice: the same bits, the totals counted twice");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// ---- whole networks: the head fused (fusion forced on) against unfused (off) ----

struct NetCase {
  const char* name;
  const char* spec;
  bool inputGradient;
};

const NetCase kNetworks[] = {
    {"mlp relu -> dense 10, softmax cross-entropy (ReLU gate)",
     R"({"input":[20],"layers":[{"kind":"dense","units":16,"activation":"relu"},{"kind":"dense","units":10}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":3})", false},
    {"the same with the network's input gradient",
     R"({"input":[20],"layers":[{"kind":"dense","units":16,"activation":"relu"},{"kind":"dense","units":10}],
        "loss":"softmax_cross_entropy","optimizer":{"kind":"adam","lr":0.001},"seed":3})", true},
    {"one dense layer (the head is the first layer), input gradient, binary cross-entropy on a folded sigmoid",
     R"({"input":[13],"layers":[{"kind":"dense","units":1,"activation":"sigmoid"}],
        "loss":"binary_cross_entropy","optimizer":{"kind":"sgd","lr":0.1},"seed":4})", true},
    {"conv tanh -> flatten -> dropout -> dense tanh head, mae",
     R"({"input":[1,6,6],"layers":[{"kind":"conv2d","filters":3,"kernel":[3,3],"activation":"tanh"},{"kind":"flatten"},
        {"kind":"dropout","rate":0.25},{"kind":"dense","units":4,"activation":"tanh"}],"loss":"mae",
        "optimizer":{"kind":"adam","lr":0.001},"seed":5})", false},
    {"dense leaky_relu -> dense sigmoid head, mse",
     R"({"input":[9],"layers":[{"kind":"dense","units":7,"activation":"leaky_relu","alpha":0.2},
        {"kind":"dense","units":3,"activation":"sigmoid"}],"loss":"mse","optimizer":{"kind":"adam","lr":0.001},"seed":6})", true},
};

struct NetResult {
  std::vector<float> out, grads, inputGrad;
  cuda::StepState state;
  bool fused = false;
};

NetResult runNetwork(const NetCase& c, int N) {
  const ModelSpec spec = parseModelSpec(c.spec);
  const NetworkPlan plan = planNetwork(spec);
  const int classes = plan.outputWidth == 1 ? 2 : int(plan.outputWidth);
  const auto params = initialParameters(spec, spec.seed);
  const auto x = randomVector(size_t(N) * plan.inputSize, 100);
  std::vector<int32_t> labels(N);
  for (int i = 0; i < N; ++i) labels[i] = (i * 5 + 1) % classes;
  cuda::Network net(spec, N, c.inputGradient);
  DeviceVector<float> dParams(params), dX(x), dGrad(plan.parameterCount);
  DeviceVector<int32_t> dLabels(labels);
  DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{someState()});
  net.forward(nullptr, dParams.ptr, dX.ptr, N, true, 9, dState.ptr);
  net.loss(nullptr, dLabels.ptr, N, dState.ptr);
  net.backward(nullptr, dParams.ptr, dGrad.ptr, N);
  test::cudaOk(cudaDeviceSynchronize(), "network");
  NetResult r;
  r.fused = net.headFused();
  r.out.resize(size_t(N) * plan.outputWidth);
  test::cudaOk(cudaMemcpy(r.out.data(), net.outputs(), sizeof(float) * r.out.size(), cudaMemcpyDeviceToHost), "outputs");
  r.grads = dGrad.download();
  if (c.inputGradient) {
    r.inputGrad.resize(size_t(N) * plan.inputSize);
    test::cudaOk(cudaMemcpy(r.inputGrad.data(), net.inputGradient(), sizeof(float) * r.inputGrad.size(),
                            cudaMemcpyDeviceToHost),
                 "input gradient");
  }
  r.state = dState.download()[0];
  // evaluation still produces the outputs through the normal path
  std::vector<float> evalOut(r.out.size());
  net.forward(nullptr, dParams.ptr, dX.ptr, N, false, 9, dState.ptr);
  test::cudaOk(cudaMemcpy(evalOut.data(), net.outputs(), sizeof(float) * evalOut.size(), cudaMemcpyDeviceToHost),
               "evaluation outputs");
  const bool dropout = std::string(c.spec).find("dropout") != std::string::npos;
  if (!dropout)
    CHECK_MSG(relError(evalOut, r.out, 1e-3) <= 1e-4, std::string(c.name) + ": evaluation outputs = training outputs");
  return r;
}

// run() with NNSTUDIO_CUDA_FUSION forced to `fusion` (the chooser's scoped override)
template <class Run>
NetResult withFusion(cuda::Switch fusion, Run&& run) {
  cuda::ScopedKernelOverride force([&](cuda::KernelOverrides& o) { o.fusion = fusion; });
  return run();
}

void checkNetworks() {
  std::printf("whole networks, head fused vs unfused\n");
  for (const NetCase& c : kNetworks) {
    const int N = 37;
    const NetResult f = withFusion(cuda::Switch::On, [&] { return runNetwork(c, N); });
    const NetResult u = withFusion(cuda::Switch::Off, [&] { return runNetwork(c, N); });
    CHECK_MSG(f.fused && !u.fused, std::string(c.name) + ": fused with =1, not with =0");
    const double eOut = relError(f.out, u.out, 1e-3), eGrad = relError(f.grads, u.grads, 1e-3),
                 eIn = c.inputGradient ? relError(f.inputGrad, u.inputGrad, 1e-3) : 0.0;
    CHECK_MSG(eOut <= 1e-4 && eGrad <= 1e-4 && eIn <= 1e-4,
              std::string(c.name) + ": outputs, every parameter gradient" + (c.inputGradient ? ", input gradient" : "") +
                  " (rel errors " + nnstudio_test::num(eOut) + " " + nnstudio_test::num(eGrad) + " " +
                  nnstudio_test::num(eIn) + ")");
    CHECK_MSG(std::fabs(f.state.batchLossSum - u.state.batchLossSum) <= 1e-6 * (1 + std::fabs(u.state.batchLossSum)) &&
                  f.state.samples == u.state.samples && f.state.correct == u.state.correct &&
                  f.state.lossSteps == u.state.lossSteps && f.state.diverged == 0,
              std::string(c.name) + ": StepState totals");
  }
}

// ---- --bench: µs per head step inside a CUDA graph ----

void bench(cudaStream_t stream) {
  std::printf("bench: head step (forward + loss + backward), us in a CUDA graph: unfused, fused with 1-16 blocks\n");
  std::printf("%5s %6s %4s %8s %4s %9s %7s %7s %7s %7s %7s %7s\n", "N", "inputs", "K", "MACs", "dIn", "unfused",
              "auto", "1", "2", "4", "8", "16");
  const int shapes[][3] = {{32, 128, 10},  {64, 84, 10},   {64, 128, 10},  {100, 128, 10}, {128, 128, 10},
                           {128, 256, 10}, {64, 512, 10},  {128, 320, 10}, {32, 1024, 10}, {256, 128, 10},
                           {128, 128, 32}, {256, 512, 10}, {128, 784, 10}, {32, 2048, 10}, {100, 10816, 10}};
  for (const auto& s : shapes) {
    const int N = s[0], I = s[1], K = s[2];
    if (!cuda::dense_head_supported(N, I, K)) {
      std::printf("%5d %6d %4d   (not supported)\n", N, I, K);
      continue;
    }
    for (bool withIn : {true, false}) {
      const HeadCase c{N, I, K, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, withIn};
      DeviceVector<float> dX(headInput(c, 1)), dW(randomVector(size_t(K) * I, 2, 0.05f)), dB(randomVector(K, 3)),
          out(size_t(N) * K), gW(size_t(K) * I), gB(K), gIn(size_t(N) * I), dOut(size_t(N) * K);
      DeviceVector<int32_t> dLabels(headLabels(c));
      DeviceVector<cuda::StepState> dState(std::vector<cuda::StepState>{cuda::StepState{}});
      float* dIn = withIn ? gIn.ptr : nullptr;
      auto unfused = [&] {
        cuda::dense_forward(stream, out.ptr, dX.ptr, dW.ptr, dB.ptr, N, I, K, ActivationFn::Linear, 0.0f);
        cuda::loss_forward_backward(stream, c.loss, out.ptr, dLabels.ptr, N, K, dOut.ptr, dState.ptr);
        cuda::dense_backward_weights(stream, gW.ptr, gB.ptr, dOut.ptr, dX.ptr, N, I, K, nullptr);
        if (dIn) cuda::dense_backward_input(stream, dIn, dOut.ptr, dW.ptr, dX.ptr, N, I, K, c.inAct, 0.0f);
      };
      std::printf("%5d %6d %4d %8lld %4s %9.2f", N, I, K, (long long)N * I * K, withIn ? "yes" : "no",
                  test::timeLaunches(unfused, stream, true));
      for (int blocks : {0, 1, 2, 4, 8, 16}) {
        float t = -1;
        try {
          auto fused = [&] {
            cuda::dense_head_fused(stream, c.loss, out.ptr, gW.ptr, gB.ptr, dIn, dX.ptr, dW.ptr, dB.ptr, dLabels.ptr, N,
                                   I, K, ActivationFn::Linear, 0.0f, c.inAct, 0.0f, dState.ptr, blocks);
          };
          t = test::timeLaunches(fused, stream, true);
        } catch (const std::exception&) {  // too large for this many blocks: thrown inside the capture
          cudaGraph_t partial = nullptr;
          if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial) cudaGraphDestroy(partial);
          cudaGetLastError();
        }
        std::printf(" %7.2f", t);
      }
      std::printf("\n");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!test::haveCudaDevice()) {
    std::puts("skipped: no CUDA device");
    return 0;
  }
  cudaStream_t stream;
  test::cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  try {
    if (argc > 1 && std::strcmp(argv[1], "--bench") == 0) {
      bench(stream);
      cudaStreamDestroy(stream);
      return 0;
    }
    std::printf("fused head vs the unfused launches\n");
    const LossKind losses[] = {LossKind::SoftmaxCrossEntropy, LossKind::BinaryCrossEntropy, LossKind::MSE,
                               LossKind::MAE};
    for (LossKind loss : losses) {
      checkHead({37, 50, 10, loss, ActivationFn::Linear, ActivationFn::ReLU, true}, stream);
      checkHead({37, 50, 10, loss, ActivationFn::Linear, ActivationFn::Linear, false}, stream);
      checkHead({128, 128, 10, loss, ActivationFn::Linear, ActivationFn::ReLU, true}, stream);
      checkHead({32, 84, 10, loss, ActivationFn::Linear, ActivationFn::Tanh, true}, stream);
      checkHead({5, 13, 3, loss, ActivationFn::Linear, ActivationFn::LeakyReLU, true}, stream);  // scalar staging
      checkHead({9, 700, 32, loss, ActivationFn::Linear, ActivationFn::ReLU, true}, stream);     // inputs > block
      checkHead({200, 37, 6, loss, ActivationFn::Linear, ActivationFn::Sigmoid, true}, stream);
    }
    std::printf("clusters (the rows split over blocks)\n");
    for (LossKind loss : losses)
      for (int blocks : {1, 2, 4, 8}) {
        checkHead({37, 50, 10, loss, ActivationFn::Linear, ActivationFn::ReLU, true, blocks}, stream);
        checkHead({128, 128, 10, loss, ActivationFn::Linear, ActivationFn::ReLU, true, blocks}, stream);
      }
    checkHead({128, 128, 10, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, true, 16}, stream);
    checkHead({9, 700, 32, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, true, 4}, stream);
    checkHead({5, 13, 3, LossKind::MSE, ActivationFn::Sigmoid, ActivationFn::LeakyReLU, false, 8}, stream);
    checkHead({256, 512, 10, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, true}, stream);
    checkHead({37, 50, 1, LossKind::BinaryCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, true}, stream);
    checkHead({37, 50, 1, LossKind::MSE, ActivationFn::Linear, ActivationFn::ReLU, true}, stream);
    checkHead({37, 50, 1, LossKind::MAE, ActivationFn::Tanh, ActivationFn::ReLU, true}, stream);
    checkHead({37, 50, 4, LossKind::MSE, ActivationFn::Sigmoid, ActivationFn::ReLU, true}, stream);
    checkHead({37, 50, 4, LossKind::MAE, ActivationFn::Tanh, ActivationFn::Linear, false}, stream);
    checkHead({37, 50, 17, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, true}, stream);
    checkHead({1, 8, 2, LossKind::SoftmaxCrossEntropy, ActivationFn::Linear, ActivationFn::ReLU, true}, stream);
    CHECK_MSG(!cuda::dense_head_supported(100, 10816, 10) && !cuda::dense_head_supported(32, 128, 33),
              "too large heads are not supported (seed001's 10816 inputs x 100, 33 units)");
    checkDivergence(stream);
    checkGraph(stream);
    checkNetworks();
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
