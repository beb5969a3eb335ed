// The op table's machinery (test_cuda_ops.cpp), after ggml's test-backend-ops: every layer kind x shape x
// kernel variant the chooser can return on this GPU, forward and backward, against the CPU backend
// (cpu/layers.h) with NaN-poisoned outputs.
// - A variant is a named edit of the overrides (cuda/kernel_overrides.h), run under a ScopedKernelOverride:
//   the engine's own launchers then run it. The chooser (cuda/kernel_choice.h) names the kernel each edit
//   gives for a shape; edits that give the same kernel run once (the line lists their names).
// - A Row is one (op, shape, variant): its comparisons and checks count in "N passed, N failed" (failures
//   print at once), and it prints one line with the largest normalised error of its comparisons.
#pragma once

#ifdef NNSTUDIO_WITH_CUDA

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cuda/device_caps.h"
#include "cuda/kernel_choice.h"
#include "cuda/kernel_overrides.h"
#include "cuda_test_util.h"
#include "test_util.h"

namespace nnstudio::test {

// ---- one row: (op, shape, variant), its checks and its line ----

class Row {
 public:
  Row(std::string op, std::string shape, std::string variant)
      : op_(std::move(op)), shape_(std::move(shape)), variant_(std::move(variant)) {}
  Row(const Row&) = delete;
  Row& operator=(const Row&) = delete;
  // the line: "ok    conv2d forward | keras conv2 [...] | tc 3xtf32 64x128 bk32 st3 (default) | max err 2e-07 (tanh)"
  ~Row() {
    const std::string where = worstWhat_.empty() ? "" : " (" + worstWhat_ + ")";
    std::printf("  %-5s %s | %s | %s | max err %s%s%s\n", failed_ ? "FAIL" : "ok", op_.c_str(), shape_.c_str(),
                variant_.c_str(), nnstudio_test::num(worst_).c_str(), where.c_str(), notes_.c_str());
  }

  // gpu against the reference within `tol` (one check); the row keeps the worst normalised error
  bool compare(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& ref,
               Tolerance tol = kParity) {
    const double e = normalisedError(gpu, ref, tol);
    if (!(e <= worst_)) {  // NaN or infinity too
      worst_ = e;
      worstWhat_ = what;
    }
    return check(e <= tol.limit, what,
                 "normalised error " + nnstudio_test::num(e) + " (limit " + nnstudio_test::num(tol.limit) + ")");
  }
  // a check that is not a comparison: bits, counts, flags
  bool check(bool ok, const std::string& what, const std::string& detail = "") {
    nnstudio_test::report(ok, op_ + " | " + shape_ + " | " + variant_ + ": " + what, __FILE__, __LINE__, detail);
    if (!ok) ++failed_;
    return ok;
  }
  // printed on the line, not checked (1xTF32's error, say)
  void note(const std::string& text) { notes_ += "; " + text; }

 private:
  std::string op_, shape_, variant_, worstWhat_, notes_;
  double worst_ = 0;
  int failed_ = 0;
};

// ---- variants ----

using Edit = std::function<void(cuda::KernelOverrides&)>;
struct Variant {
  std::string name;
  Edit edit;  // null: the overrides as they are
};

// the overrides in force with v's edit applied
inline cuda::KernelOverrides overridesOf(const Variant& v) {
  cuda::KernelOverrides o = cuda::kernelOverrides();
  if (v.edit) v.edit(o);
  return o;
}

// fn() with v's overrides in force
template <class Fn>
decltype(auto) under(const Variant& v, Fn&& fn) {
  const cuda::ScopedKernelOverride scope([&](cuda::KernelOverrides& o) {
    if (v.edit) v.edit(o);
  });
  return fn();
}

inline Variant variantNamed(const std::vector<Variant>& all, const std::string& name) {
  for (const Variant& v : all)
    if (v.name == name) return v;
  throw std::runtime_error("no variant named " + name);
}

// One kernel the candidates reach: the chooser's name for it, the first candidate that reaches it (it runs)
// and the names of all that do.
struct Reached {
  std::string choice;
  Variant variant;
  std::vector<std::string> names;
  std::string label() const {
    std::string text = choice + " (";
    for (size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
    return text + ")";
  }
};

// the distinct kernels `candidates` reach, in order; choiceOf(overrides) is the chooser's name of the kernel
inline std::vector<Reached> reached(const std::vector<Variant>& candidates,
                                    const std::function<std::string(const cuda::KernelOverrides&)>& choiceOf) {
  std::vector<Reached> out;
  for (const Variant& v : candidates) {
    const std::string choice = choiceOf(overridesOf(v));
    auto it = std::find_if(out.begin(), out.end(), [&](const Reached& r) { return r.choice == choice; });
    if (it == out.end()) out.push_back({choice, v, {v.name}});
    else it->names.push_back(v.name);
  }
  return out;
}

// ---- small helpers ----

inline const cuda::DeviceCaps& caps() { return cuda::currentDeviceCaps(); }

// the elementwise activations (Softmax is a row operation: never fused into a kernel's epilogue)
inline const std::vector<ActivationFn>& elementwiseActivations() {
  static const std::vector<ActivationFn> all = {ActivationFn::Linear,  ActivationFn::ReLU, ActivationFn::LeakyReLU,
                                                ActivationFn::Sigmoid, ActivationFn::Tanh, ActivationFn::Softplus};
  return all;
}

// the first n elements of v
inline std::vector<float> prefix(const std::vector<float>& v, size_t n) {
  return std::vector<float>(v.begin(), v.begin() + std::min(n, v.size()));
}

// every element outside [begin, begin + n) still holds the poison (0xFFFFFFFF)
inline bool guardsIntact(const std::vector<float>& v, size_t begin, size_t n) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (i >= begin && i < begin + n) continue;
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    if (bits != 0xFFFFFFFFu) return false;
  }
  return true;
}

}  // namespace nnstudio::test

#endif
