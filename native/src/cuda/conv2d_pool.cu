// Fused conv2d + bias + activation + max pool, and its weight gradient from the pool's output gradient.
//
// Forward (direct convolution): a block owns one sample, a run of pooled rows (TPR) and FL blocks of FB = GY *
// FPT filters, taken in turn; thread (x, y) owns one pooled position and FPT filters, i.e. the PS x PS conv
// outputs of its pool window for each of those filters, accumulated in registers. The input rows the block
// needs and the weights of CC channels at a time are staged in shared memory (weights as [channel][tap][filter],
// read as float4 broadcasts; with FL > 1 every channel at once, for all FL blocks, with their biases). The
// epilogue adds the bias, activates, and scans the window row-major with a strict '>' (the first maximum wins,
// a NaN wins), as pool.cu; only the pooled value and the argmax (index within the sample's (F, OH, OW) conv
// output) are written. A 3x3 or 5x5 kernel of stride 1 under a pool of 2 is compiled for its size (the window's
// inputs in registers), and ReLU inline (activateOutput).
//
// Weight gradient: the conv's pre-activation gradient has one nonzero per pool window, at its argmax:
// g = dPooled * act'(pooled). So dW[f][c][ky][kx] = sum over (n, window q) of g(n, f, q) * in(n, c, oy*s -
// padTop + ky, ox*s - padLeft + kx), (oy, ox) = argmax's position, and dBias[f] = sum of g. A block owns a
// chunk of samples, FT filters and CT channels; per sample it stages the zero-padded input region of its
// channels and the (g, offset) pair of each of its filters' windows in shared memory; a thread owns 4
// consecutive (c, ky, kx) columns of one filter (the bias is the column after the last tap) and a slice
// of the windows. The slices are added in slice order through shared memory, each chunk's sums go to
// slot `chunk` of the workspace [chunk][F][K + 1] (or straight to dW / dBias when there is one chunk),
// which one kernel then adds in chunk order: deterministic, no atomics. A thin conv (C * kh * kw <= 32, a first
// layer) takes convPoolWeightsThin instead: a warp per filter, every tap in registers, no staged windows.
// seed001 with 256 filters (H200, ncu): both kernels had been bound by instruction issue at 469 us each, the
// per-element activation switch and index arithmetic costing more than the FMAs. Launchers only enqueue
// kernels (CUDA-graph safe).
#include <algorithm>
#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/conv2d_pool.h"
#include "cuda/conv_gemm.cuh"
#include "cuda/kernel_choice.h"
#include "cuda/max_pool_order.cuh"

namespace nnstudio::cuda {

namespace {

constexpr int kFwdMaxThreads = kConvPoolForwardMaxThreads;

// A pool window's argmax in one byte (conv2d_pool.h, `windows`): its row and column in the window, 2 bits each
// (pools of up to 4 x 4), and in the top bit whether the pooled value is positive, ReLU's gate.
constexpr int kWindowPositive = 0x80;
__device__ __forceinline__ uint8_t poolWindowByte(int row, int col, bool positive) {
  return uint8_t(col | row << 2 | (positive ? kWindowPositive : 0));
}

// ---------------------------------------------------------------- forward

struct FwdArgs {
  float* pooled;
  int32_t* argmax;   // or null
  uint8_t* windows;  // or null: the argmax as its place in the window, and the pooled value's sign (poolWindowByte)
  const float* in;
  const float* weight;
  const float* bias;
  int C, H, W, F, OH, OW, kh, kw, cs, padTop, padLeft;
  int PH, PW, ps;           // pooled size, pool stride
  int TPR, TH, TW, CC, FB;  // rows per block, input tile, channels per stage, filters per block
  int FL;                   // filter blocks of FB a block takes in turn (> 1 only with every channel in one stage)
  ActivationFn act;
  float alpha;
};

// A conv output's activation and the pool's order: ReLU inline (the presets' case; its outputs are never NaN,
// so the pool's NaN test drops out), any other activation through the generic switch. Per element, the switch
// and the index arithmetic had cost more instructions than the window's 36 FMAs (ncu, seed001 with 256 filters).
template <bool RELU>
__device__ __forceinline__ float activateOutput(float x, ActivationFn act, float alpha) {
  return activate(x, RELU ? ActivationFn::ReLU : act, alpha);  // a constant: the switch folds away
}
template <bool RELU>
__device__ __forceinline__ bool replacesPooled(float v, float best) {
  if constexpr (RELU) return v > best;
  else return replacesMax(v, best);
}

// The taps of CC staged channels into the window's PS x PS outputs for FPT filters. KH, KW > 0 (stride 1): the
// window's (PS - 1 + KH) x (PS - 1 + KW) inputs are loaded once into registers; else every tap loads its PS x PS
// inputs (any size and stride). Either way each output sums its taps in (channel, ky, kx) order: the same bits.
template <int PS, int FPT, int KH, int KW>
__device__ __forceinline__ void accumulateWindow(float (&acc)[FPT][PS * PS], const float* tile, const float* wts,
                                                 int cc, const FwdArgs& a, int myBase) {
  const int khkw = a.kh * a.kw, tileSize = a.TH * a.TW;
  for (int cl = 0; cl < cc; ++cl) {
    const float* tc = tile + cl * tileSize + myBase;
    const float* wc = wts + cl * khkw * a.FB + threadIdx.y * FPT;
    auto tap = [&](int t, auto&& input) {  // input(wy, wx): the window output (wy, wx)'s input at this tap
      const float4* wp = reinterpret_cast<const float4*>(wc + t * a.FB);
#pragma unroll
      for (int j4 = 0; j4 < FPT / 4; ++j4) {
        const float4 w = wp[j4];
#pragma unroll
        for (int wy = 0; wy < PS; ++wy)
#pragma unroll
          for (int wx = 0; wx < PS; ++wx) {
            const float v = input(wy, wx);
            const int e = wy * PS + wx;
            acc[4 * j4 + 0][e] = fmaf(w.x, v, acc[4 * j4 + 0][e]);
            acc[4 * j4 + 1][e] = fmaf(w.y, v, acc[4 * j4 + 1][e]);
            acc[4 * j4 + 2][e] = fmaf(w.z, v, acc[4 * j4 + 2][e]);
            acc[4 * j4 + 3][e] = fmaf(w.w, v, acc[4 * j4 + 3][e]);
          }
      }
    };
    if constexpr (KH > 0) {
      constexpr int RH = PS - 1 + KH, RW = PS - 1 + KW;
      float patch[RH][RW];
#pragma unroll
      for (int y = 0; y < RH; ++y)
#pragma unroll
        for (int x = 0; x < RW; ++x) patch[y][x] = tc[y * a.TW + x];
#pragma unroll
      for (int ky = 0; ky < KH; ++ky)
#pragma unroll
        for (int kx = 0; kx < KW; ++kx)
          tap(ky * KW + kx, [&](int wy, int wx) { return patch[wy + ky][wx + kx]; });
    } else {
      for (int ky = 0; ky < a.kh; ++ky)
        for (int kx = 0; kx < a.kw; ++kx) {
          const float* ip = tc + ky * a.TW + kx;
          tap(ky * a.kw + kx, [&](int wy, int wx) { return ip[wy * a.cs * a.TW + wx * a.cs]; });
        }
    }
  }
}

// The staged weights of filter blocks fbFirst .. fbFirst + loops - 1, channels c0 .. c0 + cc - 1, as
// [block][channel][tap][filter], the input rows of those channels as [channel][TH][TW] (zero outside), and with
// the first channels the blocks' biases (read by the epilogue: a global load there had stalled every loop)
__device__ __forceinline__ void stageForward(float* wts, float* tile, float* biases, const FwdArgs& a,
                                             const float* inSample, int c0, int cc, int fbFirst, int loops, int iy0,
                                             int ix0) {
  const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
  const int khkw = a.kh * a.kw, tileSize = a.TH * a.TW;
  if (c0 == 0)
    for (int i = tid; i < loops * a.FB; i += nthreads) {
      const int f = fbFirst * a.FB + i;
      biases[i] = f < a.F ? a.bias[f] : 0.0f;
    }
  for (int i = tid; i < loops * cc * khkw * a.FB; i += nthreads) {
    const int fl = i % a.FB, rest = i / a.FB;
    const int tap = rest % khkw, rest2 = rest / khkw;
    const int cl = rest2 % cc, lb = rest2 / cc;
    const int f = (fbFirst + lb) * a.FB + fl;
    wts[i] = f < a.F ? a.weight[(int64_t(f) * a.C + c0 + cl) * khkw + tap] : 0.0f;
  }
  for (int i = tid; i < cc * tileSize; i += nthreads) {
    const int x = i % a.TW, rest = i / a.TW;
    const int y = rest % a.TH, cl = rest / a.TH;
    const int iy = iy0 + y, ix = ix0 + x;
    tile[i] = (iy >= 0 && iy < a.H && ix >= 0 && ix < a.W) ? inSample[(int64_t(c0 + cl) * a.H + iy) * a.W + ix] : 0.0f;
  }
}

// This thread's pooled position (x, y) in the sample and whether it has one (the block's last row tile may be
// partial, and its x threads round up to whole warps)
struct PooledPosition {
  int px, py, lpy;
  bool valid;
};
__device__ __forceinline__ PooledPosition pooledPosition(const FwdArgs& a) {
  const int local = threadIdx.x;
  const int lpy = local / a.PW, px = local - lpy * a.PW;
  const int py = blockIdx.x * a.TPR + lpy;
  return {px, py, lpy, local < a.TPR * a.PW && py < a.PH};
}

// The window's bias, activation and max for FPT filters from fFirst on: the pooled values and their argmax (the
// index within the sample's (F, OH, OW) conv output; the first maximum in row-major order wins)
template <int PS, int FPT, bool RELU>
__device__ __forceinline__ void writePooled(const float (&acc)[FPT][PS * PS], const FwdArgs& a, PooledPosition pos,
                                            int n, int fFirst, const float* bias) {
  const int plane = a.PH * a.PW, convPlane = a.OH * a.OW;
  const int winOrigin = pos.py * a.ps * a.OW + pos.px * a.ps;
  const int64_t out0 = (int64_t(n) * a.F + fFirst) * plane + pos.py * a.PW + pos.px;
#pragma unroll
  for (int j = 0; j < FPT; ++j) {
    const int f = fFirst + j;
    if (f >= a.F) break;
    const float b = bias[j];
    float best = activateOutput<RELU>(acc[j][0] + b, a.act, a.alpha);
    int bestAt = 0;
#pragma unroll
    for (int e = 1; e < PS * PS; ++e) {
      const float v = activateOutput<RELU>(acc[j][e] + b, a.act, a.alpha);
      if (replacesPooled<RELU>(v, best)) {
        best = v;
        bestAt = e;
      }
    }
    const int64_t out = out0 + int64_t(j) * plane;
    a.pooled[out] = best;
    if (a.argmax) a.argmax[out] = f * convPlane + winOrigin + (bestAt / PS) * a.OW + bestAt % PS;
    if (a.windows) a.windows[out] = poolWindowByte(bestAt / PS, bestAt % PS, best > 0.0f);
  }
}

// A block takes a.FL filter blocks in turn: with every channel in one stage, the input and all their weights are
// staged once, and the loops run without a barrier (seed001 with 256 filters had spent its blocks' time on the
// stage's latency: one sample's 784 inputs and 144 weights, then 288 FMAs a thread).
template <int PS, int FPT, int KH, int KW, bool RELU>
__global__ void __launch_bounds__(kFwdMaxThreads) convPoolForward(const FwdArgs a) {
  startAfterPreviousKernel();
  extern __shared__ __align__(16) float smem[];
  const int khkw = a.kh * a.kw;
  const int fbFirst = blockIdx.y * a.FL;
  const int loops = min(a.FL, (a.F + a.FB - 1) / a.FB - fbFirst);
  float* wts = smem;                                // [FL][CC][khkw][FB]
  float* tile = smem + a.FL * a.CC * khkw * a.FB;  // [CC][TH][TW]
  float* biases = tile + a.CC * a.TH * a.TW;        // [FL][FB]
  const int n = blockIdx.z;
  for (int l = 0; l < loops; ++l) {
    float acc[FPT][PS * PS];
#pragma unroll
    for (int j = 0; j < FPT; ++j)
#pragma unroll
      for (int w = 0; w < PS * PS; ++w) acc[j][w] = 0.0f;
    for (int c0 = 0; c0 < a.C; c0 += a.CC) {
      const int cc = min(a.CC, a.C - c0);
      const int step = a.ps * a.cs;  // input distance between neighbouring pool windows
      if (l == 0) {  // with FL > 1 the plan has one stage (CC = C): staged once for every loop
        __syncthreads();
        stageForward(wts, tile, biases, a, a.in + int64_t(n) * a.C * a.H * a.W, c0, cc, fbFirst, loops,
                     blockIdx.x * a.TPR * step - a.padTop, -a.padLeft);
        __syncthreads();
      }
      const PooledPosition pos = pooledPosition(a);
      const int myBase = pos.valid ? pos.lpy * step * a.TW + pos.px * step : 0;
      accumulateWindow<PS, FPT, KH, KW>(acc, tile, wts + l * cc * khkw * a.FB, cc, a, myBase);
    }
    const PooledPosition pos = pooledPosition(a);
    const int inBlock = l * a.FB + threadIdx.y * FPT;  // this thread's first filter among the staged blocks'
    if (pos.valid) writePooled<PS, FPT, RELU>(acc, a, pos, n, fbFirst * a.FB + inBlock, biases + inBlock);
  }
}

// ---------------------------------------------------------------- weight gradient

constexpr int kWgThreads = kConvPoolWgThreads;
constexpr int kWgCols = kConvPoolWgCols;    // columns per thread unit
constexpr int kWgUnits = kConvPoolWgUnits;  // units per thread

struct WgArgs {
  float* ws;  // (chunks, F, K + 1) partial sums
  float* dWeight;
  float* dBias;
  const float* dPooled;
  const float* pooled;
  const int32_t* argmax;
  const float* in;
  int N, C, H, W, F, OH, OW, kh, kw, cs, padTop, padLeft, PQ;
  int PW, ps;  // the pooled width and the pool's stride
  int Hp, Wp, CT, FT, QS, per;
  ActivationFn act;
  float alpha;
};

// `channels` channels of one sample's input into shared memory as [channel][Hp][Wp], zero where the conv's
// padding is (the block's threads in turn)
__device__ __forceinline__ void stagePaddedInput(float* ins, const float* inSample, int channels, const WgArgs& a) {
  for (int i = threadIdx.x; i < channels * a.Hp * a.Wp; i += kWgThreads) {
    const int x = i % a.Wp, rest = i / a.Wp;
    const int y = rest % a.Hp, c = rest / a.Hp;
    const int iy = y - a.padTop, ix = x - a.padLeft;
    ins[i] = (iy >= 0 && iy < a.H && ix >= 0 && ix < a.W) ? inSample[(int64_t(c) * a.H + iy) * a.W + ix] : 0.0f;
  }
}

__global__ void __launch_bounds__(kWgThreads) convPoolWeights(const WgArgs a) {
  startAfterPreviousKernel();
  extern __shared__ __align__(16) float smem[];
  float2* win = reinterpret_cast<float2*>(smem);  // [FT][PQ] (g, base offset as int bits)
  float* ins = smem + 2 * a.FT * a.PQ;            // [CT][Hp][Wp]
  const int tid = threadIdx.x;
  const int chunk = blockIdx.x;
  const int f0 = blockIdx.y * a.FT, fc = min(a.FT, a.F - f0);
  const int c0 = blockIdx.z * a.CT, ccount = min(a.CT, a.C - c0);
  const int khkw = a.kh * a.kw, K = a.C * khkw;
  const bool hasBias = blockIdx.z == 0;
  const int cols = ccount * khkw + (hasBias ? 1 : 0);
  const int colGroups = (cols + kWgCols - 1) / kWgCols;
  const int units = fc * colGroups * a.QS;
  const int HpWp = a.Hp * a.Wp;

  // this thread's units: (filter, 4 columns, window slice)
  int uf[kWgUnits], uq[kWgUnits], off[kWgUnits][kWgCols], ucol[kWgUnits];
  bool uon[kWgUnits];
#pragma unroll
  for (int u = 0; u < kWgUnits; ++u) {
    const int id = tid + u * kWgThreads;
    uon[u] = id < units;
    const int idc = uon[u] ? id : 0;
    uq[u] = idc % a.QS;
    const int rest = idc / a.QS;
    const int cg = rest % colGroups;
    uf[u] = rest / colGroups;
    ucol[u] = cg * kWgCols;
#pragma unroll
    for (int e = 0; e < kWgCols; ++e) {
      const int col = ucol[u] + e;
      if (col < ccount * khkw) {
        const int cl = col / khkw, r = col - cl * khkw;
        const int ky = r / a.kw, kx = r - ky * a.kw;
        off[u][e] = cl * HpWp + ky * a.Wp + kx;
      } else {
        off[u][e] = -1;  // the bias column (or past the end: never written)
      }
    }
  }
  float acc[kWgUnits][kWgCols];
#pragma unroll
  for (int u = 0; u < kWgUnits; ++u)
#pragma unroll
    for (int e = 0; e < kWgCols; ++e) acc[u][e] = 0.0f;

  const int nBegin = chunk * a.per, nEnd = min(a.N, nBegin + a.per);
  for (int n = nBegin; n < nEnd; ++n) {
    __syncthreads();
    stagePaddedInput(ins, a.in + (int64_t(n) * a.C + c0) * a.H * a.W, ccount, a);
    const int64_t wBase = (int64_t(n) * a.F + f0) * a.PQ;
    const int OHW = a.OH * a.OW;
    for (int i = tid; i < fc * a.PQ; i += kWgThreads) {
      const int64_t o = wBase + i;
      const int32_t am = a.argmax[o];
      const int pix = am % OHW;
      const int oy = pix / a.OW, ox = pix - oy * a.OW;
      const float gv = gateGradient(a.dPooled[o], a.pooled[o], a.act, a.alpha);
      win[i] = make_float2(gv, __int_as_float((oy * a.Wp + ox) * a.cs));
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kWgUnits; ++u) {
      if (!uon[u]) continue;
      const float2* wf = win + uf[u] * a.PQ;
      for (int q = uq[u]; q < a.PQ; q += a.QS) {
        const float2 w = wf[q];
        const float* ib = ins + __float_as_int(w.y);
#pragma unroll
        for (int e = 0; e < kWgCols; ++e) acc[u][e] = fmaf(w.x, off[u][e] >= 0 ? ib[off[u][e]] : 1.0f, acc[u][e]);
      }
    }
  }

  // add the window slices of each (filter, 4 columns) in slice order (unit ids rest * QS + q), through
  // the shared memory the last sample used
  __syncthreads();
  float4* sliceSums = reinterpret_cast<float4*>(smem);  // [kWgThreads * kWgUnits]
#pragma unroll
  for (int u = 0; u < kWgUnits; ++u)
    if (uon[u]) sliceSums[tid + u * kWgThreads] = make_float4(acc[u][0], acc[u][1], acc[u][2], acc[u][3]);
  __syncthreads();
  const int K1 = K + 1;
  const bool direct = gridDim.x == 1;
  float* slot = a.ws + int64_t(chunk) * a.F * K1;
#pragma unroll
  for (int u = 0; u < kWgUnits; ++u) {
    if (!uon[u] || uq[u] != 0) continue;
    const int id = tid + u * kWgThreads;
    float4 s = sliceSums[id];
    for (int q = 1; q < a.QS; ++q) {
      const float4 v = sliceSums[id + q];
      s.x += v.x;
      s.y += v.y;
      s.z += v.z;
      s.w += v.w;
    }
    const float sum[kWgCols] = {s.x, s.y, s.z, s.w};
    const int f = f0 + uf[u];
#pragma unroll
    for (int e = 0; e < kWgCols; ++e) {
      const int col = ucol[u] + e;
      int k = -1;
      if (col < ccount * khkw) k = c0 * khkw + col;
      else if (hasBias && col == ccount * khkw) k = K;
      if (k < 0) continue;
      if (!direct) slot[int64_t(f) * K1 + k] = sum[e];
      else if (k < K) a.dWeight[int64_t(f) * K + k] = sum[e];
      else a.dBias[f] = sum[e];
    }
  }
}
constexpr int kThinWindows = 4;  // windows a lane loads at once

struct ThinArgs {
  WgArgs w;
  FastDiv divOW;
  bool prefetch;  // the input is staged whole (no padding), one float4 a thread: the next sample's is loaded early
  const uint8_t* windows;        // BYTES: the forward's window bytes instead of the argmax (and, with ReLU, pooled)
  FastDiv divPW;
};

// One sample's windows of filter f into acc (taps, then the bias): lane's windows q = lane, lane + 32, ...;
// `input` is the sample's staged input, `off` (KS = 0) each tap's offset from a window's first input.
template <bool RELU, int KS, int MAXT, bool BYTES>
__device__ __forceinline__ void accumulateSample(float (&acc)[MAXT + 1], const ThinArgs& t, const float* input,
                                                 const int (&off)[KS > 0 ? 1 : MAXT], int n, int f, int lane) {
  const WgArgs& a = t.w;
  const int taps = KS > 0 ? MAXT : a.C * a.kh * a.kw;
  const int64_t base = (int64_t(n) * a.F + f) * a.PQ;
  const int firstOfFilter = f * a.OH * a.OW;
  for (int q0 = lane; q0 < a.PQ; q0 += 32 * kThinWindows) {
    // the loads of kThinWindows windows first, so that they are in flight together (one window's chain of
    // dependent loads at a time had left the kernel latency-bound)
    float y[kThinWindows], dy[kThinWindows];
    int am[kThinWindows];  // the argmax, or with BYTES the window byte
#pragma unroll
    for (int b = 0; b < kThinWindows; ++b) {
      const int q = min(q0 + 32 * b, a.PQ - 1);
      if constexpr (!(RELU && BYTES)) y[b] = a.pooled[base + q];
      dy[b] = a.dPooled[base + q];
      if constexpr (BYTES) am[b] = t.windows[base + q];
      else am[b] = a.argmax[base + q];
    }
#pragma unroll
    for (int b = 0; b < kThinWindows; ++b) {
      const int q = q0 + 32 * b;
      if (q >= a.PQ) break;
      float g;
      if constexpr (RELU) {
        const bool positive = BYTES ? (am[b] & kWindowPositive) != 0 : y[b] > 0.0f;
        if (!positive) continue;  // g = 0
      }
      if constexpr (RELU) g = dy[b];
      else g = gateGradient(dy[b], y[b], a.act, a.alpha);
      int oy, ox;  // the argmax's conv output
      if constexpr (BYTES) {
        const int py = t.divPW.div(q);
        oy = py * a.ps + ((am[b] >> 2) & 3);
        ox = (q - py * a.PW) * a.ps + (am[b] & 3);
      } else {
        const int pix = am[b] - firstOfFilter;
        oy = t.divOW.div(pix);
        ox = pix - oy * a.OW;
      }
      const float* window = input + (oy * a.Wp + ox) * a.cs;
      if constexpr (KS > 0) {
#pragma unroll
        for (int ky = 0; ky < KS; ++ky) {
          const float* row = window + ky * a.Wp;
#pragma unroll
          for (int kx = 0; kx < KS; ++kx) acc[ky * KS + kx] = fmaf(g, row[kx], acc[ky * KS + kx]);
        }
      } else {
#pragma unroll
        for (int k = 0; k < MAXT; ++k)
          if (k < taps) acc[k] = fmaf(g, window[off[k]], acc[k]);
      }
      acc[MAXT] += g;
    }
  }
}

// The thin conv's weight gradient (C * kh * kw <= kConvPoolThinTaps: a first layer): a warp per filter, each
// lane a slice of its windows, all the filter's taps and its bias in registers (accumulateSample). Per sample
// the block stages the zero-padded input once; with t.prefetch it is double-buffered: each thread loads its
// float4 of the next sample before this sample's windows and stores it after them, one barrier a sample. With
// ReLU a window whose pooled value is not positive has g = 0 and is skipped. The 32 lanes' sums are added in a
// fixed tree, so the result is deterministic; slots and the reduce kernel are convPoolWeights's. KS > 0: one
// channel and a KS x KS kernel, compiled for it (3, 5); else KS = 0, up to kConvPoolThinTaps taps of any
// shape, guarded.
// BYTES: each window's argmax from its byte (poolWindowByte), with ReLU its gate too: pooled is not read.
template <bool RELU, int KS, bool BYTES>
__global__ void __launch_bounds__(kWgThreads) convPoolWeightsThin(const ThinArgs t) {
  startAfterPreviousKernel();
  constexpr int MAXT = KS > 0 ? KS * KS : kConvPoolThinTaps;
  const WgArgs& a = t.w;
  extern __shared__ __align__(16) float ins[];  // [C][Hp][Wp], twice with t.prefetch
  const int lane = threadIdx.x & 31;
  const int f = blockIdx.y * a.FT + (threadIdx.x >> 5);
  const int khkw = a.kh * a.kw, taps = KS > 0 ? MAXT : a.C * khkw;
  const int HpWp = a.Hp * a.Wp;
  int off[KS > 0 ? 1 : MAXT] = {};  // KS = 0: each tap's offset from a window's first input in the staged region
  if constexpr (KS == 0) {
#pragma unroll
    for (int k = 0; k < MAXT; ++k) {
      const int c = k / khkw, r = k - c * khkw, ky = r / a.kw;
      off[k] = k < taps ? c * HpWp + ky * a.Wp + r - ky * a.kw : 0;
    }
  }
  float acc[MAXT + 1];  // the taps, then the bias
#pragma unroll
  for (int k = 0; k <= MAXT; ++k) acc[k] = 0.0f;

  const int nBegin = blockIdx.x * a.per, nEnd = min(a.N, nBegin + a.per);
  const int stage4 = a.C * HpWp / 4;  // float4s a sample (t.prefetch)
  const float4* in4 = reinterpret_cast<const float4*>(a.in);
  const bool mine = t.prefetch && int(threadIdx.x) < stage4;
  if (t.prefetch && nBegin < nEnd) {
    if (mine) reinterpret_cast<float4*>(ins)[threadIdx.x] = __ldg(in4 + int64_t(nBegin) * stage4 + threadIdx.x);
    __syncthreads();
  }
  for (int n = nBegin; n < nEnd; ++n) {
    const float* input = ins;
    float4 next = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const bool more = n + 1 < nEnd;
    if (t.prefetch) {
      input = ins + ((n - nBegin) & 1) * 4 * stage4;
      if (mine && more) next = __ldg(in4 + int64_t(n + 1) * stage4 + threadIdx.x);
    } else {
      __syncthreads();
      stagePaddedInput(ins, a.in + int64_t(n) * a.C * a.H * a.W, a.C, a);
      __syncthreads();
    }
    if (f < a.F) accumulateSample<RELU, KS, MAXT, BYTES>(acc, t, input, off, n, f, lane);
    if (t.prefetch && more) {
      if (mine) reinterpret_cast<float4*>(ins + ((n + 1 - nBegin) & 1) * 4 * stage4)[threadIdx.x] = next;
      __syncthreads();
    }
  }
  if (f >= a.F) return;
#pragma unroll
  for (int k = 0; k <= MAXT; ++k)
#pragma unroll
    for (int m = 16; m >= 1; m /= 2) acc[k] += __shfl_xor_sync(0xffffffffu, acc[k], m);
  if (lane != 0) return;
  const int K = a.C * khkw;
  const bool direct = gridDim.x == 1;
  float* slot = a.ws + int64_t(blockIdx.x) * a.F * (K + 1) + int64_t(f) * (K + 1);
#pragma unroll
  for (int k = 0; k < MAXT; ++k) {
    if (k >= K) break;
    if (direct) a.dWeight[int64_t(f) * K + k] = acc[k];
    else slot[k] = acc[k];
  }
  if (direct) a.dBias[f] = acc[MAXT];
  else slot[K] = acc[MAXT];
}

// dWeight / dBias = the slices' partial sums, in a fixed order (deterministic). A block of 32 x 32
// threads takes 32 outputs: thread (x, y) adds slices y, y+32, ... of output x (loads coalesced along
// x), then the 32 partials of each output are added in y order. One thread per output over hundreds of
// slices was latency-bound (51 µs for seed001's 640 outputs x 400 slices on an H100).
constexpr int kReduceLanes = 32;
__global__ void __launch_bounds__(kReduceLanes * kReduceLanes)
    convPoolWeightsReduce(float* dWeight, float* dBias, const float* ws, int slices, int F, int K) {
  startAfterPreviousKernel();
  __shared__ float partial[kReduceLanes][kReduceLanes + 1];
  const int K1 = K + 1;
  const int outputs = F * K1;
  const int i = blockIdx.x * kReduceLanes + threadIdx.x;
  float s = 0.0f;
  if (i < outputs)
    for (int k = threadIdx.y; k < slices; k += kReduceLanes) s += ws[int64_t(k) * outputs + i];
  partial[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || i >= outputs) return;
  float total = 0.0f;
  for (int y = 0; y < kReduceLanes; ++y) total += partial[y][threadIdx.x];
  const int f = i / K1, k = i - f * K1;
  if (k == K) dBias[f] = total;
  else dWeight[int64_t(f) * K + k] = total;
}


// the forward's instance: taps 3 or 5 (stride 1, square, PS 2 only) have their windows' inputs in registers
template <int PS, int FPT>
void launchForward(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, const FwdArgs& a, int taps, bool relu) {
  auto go = [&](auto kernel) { launchKernel("convPoolForward", kernel, grid, block, smem, stream, a); };
  if constexpr (PS == 2 && FPT <= 8) {  // the chooser takes 16 filters a thread only without them
    if (taps == 3) return relu ? go(convPoolForward<PS, FPT, 3, 3, true>) : go(convPoolForward<PS, FPT, 3, 3, false>);
    if (taps == 5) return relu ? go(convPoolForward<PS, FPT, 5, 5, true>) : go(convPoolForward<PS, FPT, 5, 5, false>);
  }
  relu ? go(convPoolForward<PS, FPT, 0, 0, true>) : go(convPoolForward<PS, FPT, 0, 0, false>);
}

// the conv's geometry, which FwdArgs and WgArgs both carry under these names
template <class Args>
void setConvGeometry(Args& a, const ConvGeometry& g) {
  a.C = g.C;
  a.H = g.H;
  a.W = g.W;
  a.F = g.F;
  a.OH = g.OH;
  a.OW = g.OW;
  a.kh = g.kh;
  a.kw = g.kw;
  a.cs = g.stride;
  a.padTop = g.padTop;
  a.padLeft = g.padLeft;
}

// the thin weight gradient compiled for its kernel size (3, 5 or any: ks = 0), ReLU and what its windows read
template <bool RELU, bool BYTES>
void launchThinFor(cudaStream_t stream, dim3 grid, size_t smem, const ThinArgs& t, int ks) {
  auto go = [&](auto kernel) { launchKernel("convPoolWeightsThin", kernel, grid, kWgThreads, smem, stream, t); };
  if (ks == 3) go(convPoolWeightsThin<RELU, 3, BYTES>);
  else if (ks == 5) go(convPoolWeightsThin<RELU, 5, BYTES>);
  else go(convPoolWeightsThin<RELU, 0, BYTES>);
}

void launchThin(cudaStream_t stream, dim3 grid, size_t smem, const ThinArgs& t, int ks, bool relu) {
  using Launcher = void (*)(cudaStream_t, dim3, size_t, const ThinArgs&, int);
  const bool bytes = t.windows != nullptr;
  const Launcher go = relu ? (bytes ? launchThinFor<true, true> : launchThinFor<true, false>)
                           : (bytes ? launchThinFor<false, true> : launchThinFor<false, false>);
  go(stream, grid, smem, t, ks);
}

}  // namespace

void conv2d_maxpool_forward(cudaStream_t stream, float* pooled, int32_t* argmax, const float* in,
                            const float* weight, const float* bias, int N, const ConvGeometry& g,
                            const PoolGeometry& p, ActivationFn act, float alpha, uint8_t* windows) {
  if (N <= 0) return;
  const ConvPoolForwardPlan c = planConvPoolForward(currentDeviceCaps(), N, g, p, kernelOverrides().convPoolLoops);
  if (!c.ok) throw EngineError("conv2d_maxpool_forward: unsupported geometry");
  FwdArgs a;
  a.pooled = pooled;
  a.argmax = argmax;
  a.windows = windows;
  a.in = in;
  a.weight = weight;
  a.bias = bias;
  setConvGeometry(a, g);
  a.PH = p.OH;
  a.PW = p.OW;
  a.ps = p.stride;
  a.TPR = c.TPR;
  a.TH = c.TH;
  a.TW = c.TW;
  a.CC = c.CC;
  a.FB = c.FPT * c.GY;
  a.FL = c.FL;
  a.act = act;
  a.alpha = alpha;
  const dim3 grid(c.grid[0], c.grid[1], c.grid[2]), block(c.block[0], c.block[1]);
  const bool relu = act == ActivationFn::ReLU;
  if (c.PS == 2) {
    if (c.FPT == 16) launchForward<2, 16>(grid, block, c.smem, stream, a, c.taps, relu);
    else if (c.FPT == 8) launchForward<2, 8>(grid, block, c.smem, stream, a, c.taps, relu);
    else launchForward<2, 4>(grid, block, c.smem, stream, a, c.taps, relu);
  } else if (c.PS == 3) {
    if (c.FPT == 8) launchForward<3, 8>(grid, block, c.smem, stream, a, 0, relu);
    else launchForward<3, 4>(grid, block, c.smem, stream, a, 0, relu);
  } else {
    launchForward<4, 4>(grid, block, c.smem, stream, a, 0, relu);
  }
  checkLaunch("convPoolForward");
}

size_t conv2d_maxpool_weights_workspace(int N, const ConvGeometry& g, const PoolGeometry& p) {
  const ConvPoolWeightsPlan c = planConvPoolWeights(N, g, p, kernelOverrides().convPoolThinBlocks);
  if (!c.ok || c.mostChunks <= 1) return 0;
  return size_t(c.mostChunks) * g.F * (size_t(g.colRows()) + 1);  // any batch up to N (network.cu sizes once)
}

void conv2d_maxpool_backward_weights(cudaStream_t stream, float* dWeight, float* dBias, const float* dPooled,
                                     const float* pooled, const int32_t* argmax, const float* in, int N,
                                     const ConvGeometry& g, const PoolGeometry& p, ActivationFn act, float alpha,
                                     float* workspace, const uint8_t* windows) {
  const int K = int(g.colRows());
  if (N <= 0) {
    check(cudaMemsetAsync(dWeight, 0, sizeof(float) * size_t(g.F) * K, stream), "conv2d_maxpool dW");
    check(cudaMemsetAsync(dBias, 0, sizeof(float) * size_t(g.F), stream), "conv2d_maxpool dB");
    return;
  }
  const ConvPoolWeightsPlan c = planConvPoolWeights(N, g, p, kernelOverrides().convPoolThinBlocks);
  if (!c.ok) throw EngineError("conv2d_maxpool_backward_weights: unsupported geometry");
  if (windows && (!c.thin || p.size > 4))
    throw EngineError("conv2d_maxpool_backward_weights: window bytes need the thin kernel and a pool of at most 4 x 4 (internal error)");
  WgArgs a;
  a.ws = workspace;
  a.dWeight = dWeight;
  a.dBias = dBias;
  a.dPooled = dPooled;
  a.pooled = pooled;
  a.argmax = argmax;
  a.in = in;
  a.N = N;
  setConvGeometry(a, g);
  a.PQ = p.OH * p.OW;
  a.PW = p.OW;
  a.ps = p.stride;
  a.Hp = c.Hp;
  a.Wp = c.Wp;
  a.CT = c.CT;
  a.FT = c.FT;
  a.QS = c.QS;
  a.per = c.per;
  a.act = act;
  a.alpha = alpha;
  const dim3 grid(c.grid[0], c.grid[1], c.grid[2]);
  if (c.thin) {
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0;
    launchThin(stream, grid, c.smem, ThinArgs{a, FastDiv(g.OW), c.prefetch && aligned, windows, FastDiv(p.OW)},
               g.C == 1 && g.kh == g.kw ? g.kh : 0, act == ActivationFn::ReLU);
  } else {
    launchKernel("convPoolWeights", convPoolWeights, grid, kWgThreads, c.smem, stream, a);
  }
  checkLaunch("convPoolWeights");
  if (c.chunks == 1) return;
  const int outputs = g.F * (K + 1);
  launchKernel("convPoolWeightsReduce", convPoolWeightsReduce, blocksFor(outputs, kReduceLanes),
               dim3(kReduceLanes, kReduceLanes), 0, stream, dWeight, dBias, workspace, c.chunks, g.F, K);
  checkLaunch("convPoolWeightsReduce");
}

}  // namespace nnstudio::cuda
