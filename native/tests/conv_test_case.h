// The conv2d shapes of the CUDA conv tests (test_cuda_conv2d*.cpp): a named case, its geometry by the
// engine's own padding rule (spec/model.h), the label the tests print, the case's random tensors with
// the CPU reference's gradients, and the device tensors of the --bench modes.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cpu/layers.h"
#include "cpu/thread_pool.h"
#include "cuda_test_util.h"
#include "spec/model.h"

namespace nnstudio::test {

struct ConvCase {
  std::string name;
  int N, C, H, W, F, kh, kw, stride;
  char pad;  // 'v'alid, 's'ame, 'f'ull
};

inline cpu::ConvGeometry geometryOf(const ConvCase& c) {
  const Padding padding = c.pad == 's' ? Padding::Same : c.pad == 'f' ? Padding::Full : Padding::Valid;
  cpu::ConvGeometry g;
  g.C = c.C;
  g.H = c.H;
  g.W = c.W;
  g.F = c.F;
  g.kh = c.kh;
  g.kw = c.kw;
  g.stride = c.stride;
  convAxis(c.H, c.kh, c.stride, padding, g.OH, g.padTop);
  convAxis(c.W, c.kw, c.stride, padding, g.OW, g.padLeft);
  return g;
}

// "name [N32 1x28x28 -> 4x28x28 k2x2 s1 pad 0,0<more>]"
inline std::string describe(const ConvCase& c, const cpu::ConvGeometry& g, const std::string& more = "") {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s [N%d %dx%dx%d -> %dx%dx%d k%dx%d s%d pad %d,%d", c.name.c_str(), c.N, g.C, g.H,
                g.W, g.F, g.OH, g.OW, g.kh, g.kw, g.stride, g.padTop, g.padLeft);
  return buf + more + "]";
}

// A case's tensors, random and never zero: the input, weights scaled by 1/sqrt(fan-in), bias, and the
// gradient arriving at the output. `seed` picks them (seed*16 + 1 .. 4).
struct ConvTensors {
  size_t inSize, outSize, wSize;
  std::vector<float> in, weight, bias, dOut;
  ConvTensors(const ConvCase& c, const cpu::ConvGeometry& g, uint64_t seed)
      : inSize(size_t(c.N) * g.C * g.H * g.W),
        outSize(size_t(c.N) * g.F * g.OH * g.OW),
        wSize(size_t(g.F) * size_t(g.colRows())),
        in(randomNonZero(inSize, seed * 16 + 1, 1.0f)),
        weight(randomNonZero(wSize, seed * 16 + 2, 1.0f / std::sqrt(float(g.colRows())))),
        bias(randomNonZero(size_t(g.F), seed * 16 + 3, 0.5f)),
        dOut(randomNonZero(outSize, seed * 16 + 4, 1.0f)) {}
};

// The CPU's gradients of the case with Linear (dOut taken as dLoss/d(pre-activation)); `out` is left
// holding the Linear forward.
struct CpuConvGradients {
  std::vector<float> out, dIn, dWeight, dBias;
};

inline CpuConvGradients cpuConvGradients(cpu::ThreadPool& pool, cpu::ConvScratch& scratch, int N,
                                         const cpu::ConvGeometry& g, const ConvTensors& t) {
  CpuConvGradients r{std::vector<float>(t.outSize), std::vector<float>(t.inSize), std::vector<float>(t.wSize),
                     std::vector<float>(size_t(g.F))};
  std::vector<float> dOutCopy = t.dOut;  // the CPU backward may gate it in place
  cpu::conv2d_forward(pool, scratch, r.out.data(), t.in.data(), t.weight.data(), t.bias.data(), N, g,
                      ActivationFn::Linear, 0.0f);
  cpu::conv2d_backward(pool, scratch, r.dIn.data(), r.dWeight.data(), r.dBias.data(), dOutCopy.data(), r.out.data(),
                       t.in.data(), t.weight.data(), N, g, ActivationFn::Linear, 0.0f);
  return r;
}

// Device tensors for the --bench modes: random input, weights, bias and output gradient (seeds 1 .. 4),
// and room for the output and the input gradient.
struct ConvBenchTensors {
  size_t inSize, outSize, wSize;
  DeviceVector<float> in, weight, bias, dOut, out, dIn;
  ConvBenchTensors(const ConvCase& c, const cpu::ConvGeometry& g)
      : inSize(size_t(c.N) * g.C * g.H * g.W),
        outSize(size_t(c.N) * g.F * g.OH * g.OW),
        wSize(size_t(g.F) * size_t(g.colRows())),
        in(randomNonZero(inSize, 1, 1.0f)),
        weight(randomNonZero(wSize, 2, 0.3f)),
        bias(randomNonZero(size_t(g.F), 3, 0.1f)),
        dOut(randomNonZero(outSize, 4, 1.0f)),
        out(outSize),
        dIn(inSize) {}
};

}  // namespace nnstudio::test
