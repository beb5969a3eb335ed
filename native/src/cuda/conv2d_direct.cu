// Direct 2-D convolution for layers with few channels (stride 1), NCHW, weight (F, C, kh, kw).
// On small layers (seed000's 1/4 -> 4 channels 2x2, seed002's 8 -> 8 5x5, LeNet's 6 -> 16 5x5) the
// implicit GEMM (conv2d.cu) spends its time on index arithmetic and latency, not on FMAs. Here a block
// takes `rows` output rows of one sample: it stages the input rows they need (every channel, halo and
// padding as zeros) and ALL weights in shared memory, then each thread accumulates FT output channels x
// PX consecutive pixels of one row in registers, sliding its PX + k - 1 input values over a row's k taps.
// Square kernels 2x2, 3x3, 5x5 (compile-time k); other shapes stay on the implicit GEMM.
//   forward  out[n][f][oy][ox] = act(bias[f] + sum_{c,ky,kx} in[n][c][oy-padTop+ky][ox-padLeft+kx] w[f][c][ky][kx])
//   dIn      dIn[n][c][iy][ix] = inAct'(in) * sum_{f,ky,kx} dOut[n][f][iy+padTop-ky][ix+padLeft-kx] w[f][c][ky][kx]
//            = the same correlation over dOut with the weights turned 180 degrees and transposed
//              (F <-> C), leading pads kh-1-padTop, kw-1-padLeft.
// Every output is one thread's fixed-order sum: deterministic, no atomics. Launchers only enqueue.
#include <algorithm>
#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/conv2d_direct.h"
#include "cuda/launch.cuh"

namespace nnstudio::cuda {

namespace {

enum DirectMode : int { kForward = 0, kInput = 1 };

constexpr int kMaxThreads = kConvDirectMaxThreads;

struct DirectArgs {
  const float* src;     // (N, S, SH, SW): forward the input, input gradient dOut
  const float* weight;  // (F, C, kh, kw)
  const float* bias;    // forward (M)
  const float* gate;    // input gradient: `in` for inAct', or null
  float* dst;           // (N, M, OH, OW)
  int S, SH, SW;        // the correlation's source channels and plane
  int M, OH, OW;        // its output channels and plane
  int F, C;             // the weight's shape (kh = kw = the template's K)
  int padTop, padLeft;  // the correlation's leading pads
  int groups, colGroups, rows, rowTiles, stagedRows, stagedW, Mpad;
  int splits;           // KS: threads that share an output, each summing every KS-th source channel
  ActivationFn act;     // forward: the activation; input gradient: the gate's activation
  float alpha;
  bool vec;             // OW % PX == 0 and dst/gate aligned: vector stores
};

// PX consecutive floats from / to global memory in one access (the address is 4*PX-byte aligned)
template <int PX>
__device__ __forceinline__ void loadVec(float (&y)[PX], const float* p) {
  if constexpr (PX == 4) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    y[0] = v.x, y[1] = v.y, y[2] = v.z, y[3] = v.w;
  } else if constexpr (PX == 2) {
    const float2 v = __ldg(reinterpret_cast<const float2*>(p));
    y[0] = v.x, y[1] = v.y;
  } else {
    y[0] = __ldg(p);
  }
}
template <int PX>
__device__ __forceinline__ void storeVec(float* p, const float (&v)[PX]) {
  if constexpr (PX == 4) *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else if constexpr (PX == 2) *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  else *p = v[0];
}

// n consecutive floats from shared memory in V-wide loads (the address is V-aligned by construction)
template <int V, int N>
__device__ __forceinline__ void loadRow(float (&x)[N], const float* p) {
  static_assert(N % V == 0, "segment");
#pragma unroll
  for (int i = 0; i < N; i += V) {
    if constexpr (V == 4) {
      const float4 v = *reinterpret_cast<const float4*>(p + i);
      x[i] = v.x;
      x[i + 1] = v.y;
      x[i + 2] = v.z;
      x[i + 3] = v.w;
    } else if constexpr (V == 2) {
      const float2 v = *reinterpret_cast<const float2*>(p + i);
      x[i] = v.x;
      x[i + 1] = v.y;
    } else {
      x[i] = p[i];
    }
  }
}

// the activation / its gate over a few values: one switch, then straight-line code (a switch per
// value inlines the transcendental paths dozens of times and makes ptxas spill the accumulators)
template <int P>
__device__ __forceinline__ void activateAll(float (&v)[P], ActivationFn fn, float alpha) {
  switch (fn) {
    case ActivationFn::Linear: break;
    case ActivationFn::ReLU:
#pragma unroll
      for (int p = 0; p < P; ++p) v[p] = activate(v[p], ActivationFn::ReLU, alpha);
      break;
    case ActivationFn::LeakyReLU:
#pragma unroll
      for (int p = 0; p < P; ++p) v[p] = activate(v[p], ActivationFn::LeakyReLU, alpha);
      break;
    default:
#pragma unroll
      for (int p = 0; p < P; ++p) v[p] = activate(v[p], fn, alpha);
      break;
  }
}
template <int P>
__device__ __forceinline__ void gateAll(float (&v)[P], const float (&y)[P], ActivationFn fn, float alpha) {
  switch (fn) {
    case ActivationFn::Linear: break;
    case ActivationFn::ReLU:
#pragma unroll
      for (int p = 0; p < P; ++p) v[p] = gateGradient(v[p], y[p], ActivationFn::ReLU, alpha);
      break;
    case ActivationFn::LeakyReLU:
#pragma unroll
      for (int p = 0; p < P; ++p) v[p] = gateGradient(v[p], y[p], ActivationFn::LeakyReLU, alpha);
      break;
    default:
#pragma unroll
      for (int p = 0; p < P; ++p) v[p] = gateGradient(v[p], y[p], fn, alpha);
      break;
  }
}

// 4 bytes global -> shared without a register round trip (sm_80+): every thread issues all its copies
// back to back, so staging costs one memory latency, not one per loop iteration. src-size 0 writes a zero.
// Older GPUs (sm_75) copy through a register.
__device__ __forceinline__ void copyAsync(float* dst, const float* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 4 : 0) : "memory");
#else
  *dst = valid ? *src : 0.0f;
#endif
}
__device__ __forceinline__ void waitCopies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// K x K taps (square kernels), FT output channels x PX pixels per thread
template <int MODE, int K, int FT, int PX>
__global__ void __launch_bounds__(kMaxThreads, 2) convDirectKernel(const DirectArgs a) {
  startAfterPreviousKernel();
  constexpr int V = PX % 4 == 0 ? 4 : PX % 2 == 0 ? 2 : 1;     // shared-memory load width
  constexpr int SEG = (PX + K - 1 + V - 1) / V * V;            // input values per (channel, tap row)
  constexpr int KK = K * K;
  extern __shared__ __align__(16) float smem[];
  const int T = a.S * KK;                                      // taps of the correlation
  float* smW = smem;                                           // (T, Mpad): a tap's output channels side by side
  float* smIn = smem + T * a.Mpad;                             // (S, stagedRows, stagedW)

  const int tid = threadIdx.x, nthreads = blockDim.x;
  const int n = blockIdx.x / a.rowTiles, tile = blockIdx.x - n * a.rowTiles;
  const int oy0 = tile * a.rows;

  // ---- stage the weights: (T, Mpad), the padding channels zero. The weight tensor as R rows of L
  // (forward: F rows of C*K*K; input gradient: F rows of C*K*K, transposed and turned) ----
  {
    const int L = a.C * KK;
    for (int f = 0; f < a.F; ++f)
      for (int j = tid; j < L; j += nthreads) {
        int m, t;
        if (MODE == kForward) {
          m = f;
          t = j;
        } else {
          const int c = j / KK, tap = j - c * KK;
          m = c;
          t = f * KK + (KK - 1 - tap);  // both axes turned: (K-1-ky)*K + (K-1-kx)
        }
        copyAsync(smW + t * a.Mpad + m, a.weight + f * L + j, true);
      }
  }
  const int padM = a.Mpad - a.M;
  if (padM > 0)
    for (int e = tid; e < T * padM; e += nthreads) {
      const int t = e / padM;
      smW[t * a.Mpad + a.M + (e - t * padM)] = 0.0f;
    }

  // ---- stage the input rows: a warp per (channel, row), zeros outside the source ----
  {
    const int warp = tid >> 5, lane = tid & 31, warps = nthreads >> 5;
    const float* srcN = a.src + int64_t(n) * a.S * a.SH * a.SW;
    const int rowsAll = a.S * a.stagedRows;
    for (int row = warp; row < rowsAll; row += warps) {
      const int s = row / a.stagedRows, r = row - s * a.stagedRows;
      const int y = oy0 - a.padTop + r;
      const bool rowOk = unsigned(y) < unsigned(a.SH);
      const float* srow = srcN + (int64_t(s) * a.SH + (rowOk ? y : 0)) * a.SW;
      float* drow = smIn + row * a.stagedW;
      for (int x = lane; x < a.stagedW; x += 32) {
        const int gx = x - a.padLeft;
        const bool ok = rowOk && unsigned(gx) < unsigned(a.SW);
        copyAsync(drow + x, ok ? srow + gx : srcN, ok);
      }
    }
  }
  waitCopies();
  __syncthreads();

  // ---- this thread: split ks, output channels g*FT.., row oy, pixels cg*PX.. ----
  const int perGroup = a.rows * a.colGroups;
  const int items = a.groups * perGroup;
  const int ks = tid / items, item = tid - ks * items;
  const int g = item / perGroup, rem = item - g * perGroup;
  const int r = rem / a.colGroups, cg = rem - r * a.colGroups;
  const int oy = oy0 + r;
  const bool active = ks < a.splits && oy < a.OH;

  float acc[FT][PX];
#pragma unroll
  for (int f = 0; f < FT; ++f)
#pragma unroll
    for (int p = 0; p < PX; ++p) acc[f][p] = 0.0f;

  if (active) {
    const int chanStride = a.stagedRows * a.stagedW;
    const float* in = smIn + (ks * a.stagedRows + r) * a.stagedW + cg * PX;
    const float* wT = smW + ks * KK * a.Mpad + g * FT;
    for (int s = ks; s < a.S; s += a.splits, in += a.splits * chanStride, wT += a.splits * KK * a.Mpad) {
#pragma unroll
      for (int ky = 0; ky < K; ++ky) {
        float x[SEG];
        loadRow<V>(x, in + ky * a.stagedW);
#pragma unroll
        for (int kx = 0; kx < K; ++kx) {
          float w[FT];
#pragma unroll
          for (int f = 0; f < FT; f += 4) {
            const float4 v = *reinterpret_cast<const float4*>(wT + (ky * K + kx) * a.Mpad + f);
            w[f] = v.x;
            w[f + 1] = v.y;
            w[f + 2] = v.z;
            w[f + 3] = v.w;
          }
#pragma unroll
          for (int f = 0; f < FT; ++f)
#pragma unroll
            for (int p = 0; p < PX; ++p) acc[f][p] = fmaf(w[f], x[p + kx], acc[f][p]);
        }
      }
    }
  }

  if (a.splits > 1) {
    // ---- split: partial sums to shared memory, then each output adds its KS partials in split order ----
    constexpr int TILE = FT * PX;
    float* smRed = smIn + (a.S * a.stagedRows * a.stagedW + 3) / 4 * 4;  // (KS, items, FT, PX)
    if (ks < a.splits) {
#pragma unroll
      for (int f = 0; f < FT; ++f)
#pragma unroll
        for (int p = 0; p < PX; ++p) smRed[tid * TILE + f * PX + p] = acc[f][p];
    }
    __syncthreads();
    const int rowsHere = min(a.rows, a.OH - oy0);
    const int plane = rowsHere * a.OW;
    const int stride = items * TILE;
    for (int e = tid; e < a.M * plane; e += nthreads) {  // consecutive threads: consecutive pixels
      const int m = e / plane, pix = e - m * plane;
      const int rr = pix / a.OW, ox = pix - rr * a.OW;
      const int gg = m / FT, f = m - gg * FT, c = ox / PX, p = ox - c * PX;
      const float* q = smRed + ((gg * a.rows + rr) * a.colGroups + c) * TILE + f * PX + p;
      float v = q[0];
      for (int k = 1; k < a.splits; ++k) v += q[k * stride];
      const int64_t idx = ((int64_t(n) * a.M + m) * a.OH + oy0 + rr) * a.OW + ox;
      if (MODE == kForward) v = activate(v + __ldg(a.bias + m), a.act, a.alpha);
      else if (a.gate) v = gateGradient(v, __ldg(a.gate + idx), a.act, a.alpha);
      a.dst[idx] = v;
    }
    return;
  }
  if (!active) return;

  // ---- epilogue: bias + activation, or the gate; PX consecutive floats per channel ----
  const int ox0 = cg * PX;
  const bool full = a.vec || ox0 + PX <= a.OW;
#pragma unroll
  for (int f = 0; f < FT; ++f) {
    const int m = g * FT + f;
    if (m >= a.M) break;
    const int64_t idx = ((int64_t(n) * a.M + m) * a.OH + oy) * a.OW + ox0;
    float v[PX];
    if (MODE == kForward) {
      const float b = __ldg(a.bias + m);
#pragma unroll
      for (int p = 0; p < PX; ++p) v[p] = acc[f][p] + b;
      activateAll(v, a.act, a.alpha);
    } else {
#pragma unroll
      for (int p = 0; p < PX; ++p) v[p] = acc[f][p];
      if (a.gate) {
        float y[PX];
        if (a.vec) {
          loadVec<PX>(y, a.gate + idx);
        } else {
#pragma unroll
          for (int p = 0; p < PX; ++p) y[p] = full || ox0 + p < a.OW ? __ldg(a.gate + idx + p) : 0.0f;
        }
        gateAll(v, y, a.act, a.alpha);
      }
    }
    if (a.vec) {
      storeVec<PX>(a.dst + idx, v);
    } else {
#pragma unroll
      for (int p = 0; p < PX; ++p)
        if (full || ox0 + p < a.OW) a.dst[idx + p] = v[p];
    }
  }
}

// ---- launches: the chooser's plan (kernel_choice.h) ----

template <int MODE, int K, int FT, int PX>
void launchOne(cudaStream_t stream, const ConvDirectPlan& p, const DirectArgs& a, int N) {
  launchKernel("convDirectKernel", convDirectKernel<MODE, K, FT, PX>, dim3(unsigned(N * p.rowTiles)),
               dim3(unsigned(p.threads)), p.shared, stream, a);
  checkLaunch("conv2d direct");
}

template <int MODE, int K>
void launchK(cudaStream_t stream, const ConvDirectPlan& p, const DirectArgs& a, int N) {
  switch (p.ft * 10 + p.px) {
    case 41: launchOne<MODE, K, 4, 1>(stream, p, a, N); break;
    case 42: launchOne<MODE, K, 4, 2>(stream, p, a, N); break;
    case 44: launchOne<MODE, K, 4, 4>(stream, p, a, N); break;
    case 81: launchOne<MODE, K, 8, 1>(stream, p, a, N); break;
    default: launchOne<MODE, K, 8, 2>(stream, p, a, N); break;
  }
}

template <int MODE>
void launchDirect(cudaStream_t stream, const ConvDirectPlan& p, const DirectArgs& a, int N) {
  switch (p.kw) {
    case 2: launchK<MODE, 2>(stream, p, a, N); break;
    case 3: launchK<MODE, 3>(stream, p, a, N); break;
    default: launchK<MODE, 5>(stream, p, a, N); break;
  }
}

bool aligned(const void* ptr, int bytes) { return (reinterpret_cast<uintptr_t>(ptr) % uintptr_t(bytes)) == 0; }

void fillPlan(DirectArgs& a, const ConvDirectPlan& p) {
  a.groups = p.groups;
  a.colGroups = p.colGroups;
  a.rows = p.rows;
  a.rowTiles = p.rowTiles;
  a.stagedRows = p.stagedRows;
  a.stagedW = p.stagedW;
  a.Mpad = p.Mpad;
  a.splits = p.splits;
}

}  // namespace

void conv2d_direct_forward(cudaStream_t stream, const ConvDirectPlan& p, float* out, const float* in,
                           const float* weight, const float* bias, int N, const ConvGeometry& g, ActivationFn act,
                           float alpha) {
  DirectArgs a{};
  a.src = in;
  a.weight = weight;
  a.bias = bias;
  a.gate = nullptr;
  a.dst = out;
  a.S = g.C;
  a.SH = g.H;
  a.SW = g.W;
  a.M = g.F;
  a.OH = g.OH;
  a.OW = g.OW;
  a.F = g.F;
  a.C = g.C;
  a.padTop = g.padTop;
  a.padLeft = g.padLeft;
  a.act = act;
  a.alpha = alpha;
  a.vec = g.OW % p.px == 0 && aligned(out, 4 * p.px);
  fillPlan(a, p);
  launchDirect<kForward>(stream, p, a, N);
}

void conv2d_direct_backward_input(cudaStream_t stream, const ConvDirectPlan& p, float* dIn, const float* dOut,
                                  const float* weight, const float* in, int N, const ConvGeometry& g,
                                  ActivationFn inAct, float inAlpha) {
  DirectArgs a{};
  a.src = dOut;
  a.weight = weight;
  a.bias = nullptr;
  a.gate = inAct == ActivationFn::Linear ? nullptr : in;
  a.dst = dIn;
  a.S = g.F;
  a.SH = g.OH;
  a.SW = g.OW;
  a.M = g.C;
  a.OH = g.H;
  a.OW = g.W;
  a.F = g.F;
  a.C = g.C;
  a.padTop = g.kh - 1 - g.padTop;
  a.padLeft = g.kw - 1 - g.padLeft;
  a.act = inAct;
  a.alpha = inAlpha;
  a.vec = g.W % p.px == 0 && aligned(dIn, 4 * p.px) && (!a.gate || aligned(a.gate, 4 * p.px));
  fillPlan(a, p);
  launchDirect<kInput>(stream, p, a, N);
}

}  // namespace nnstudio::cuda
