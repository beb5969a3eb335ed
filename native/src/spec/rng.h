// A portable, seeded RNG (splitmix64 to seed, xoshiro256** to draw) so that initial weights, data
// order and dropout masks are the same on every platform and compiler (std::*_distribution is not).
#pragma once

#include <cstdint>

// The same functions run in CUDA kernels (dropout masks on the device match the CPU's bit for bit).
#if defined(__CUDACC__)
#define NNSTUDIO_HOST_DEVICE __host__ __device__
#else
#define NNSTUDIO_HOST_DEVICE
#endif

namespace nnstudio {

NNSTUDIO_HOST_DEVICE inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Mixes several values into one seed (e.g. run seed, epoch, layer).
NNSTUDIO_HOST_DEVICE inline uint64_t mixSeed(uint64_t a, uint64_t b, uint64_t c = 0) {
  uint64_t s = a;
  uint64_t h = splitmix64(s);
  s = h ^ (b * 0xD1B54A32D192ED03ull);
  h = splitmix64(s);
  s = h ^ (c * 0x8CB92BA72F3D8DD7ull);
  return splitmix64(s);
}

struct Rng {
  uint64_t s[4];

  NNSTUDIO_HOST_DEVICE explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s) w = splitmix64(x);
  }

  NNSTUDIO_HOST_DEVICE static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  NNSTUDIO_HOST_DEVICE uint64_t next() {
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 24 random bits: exact in float.
  NNSTUDIO_HOST_DEVICE float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }

  // Uniform integer in [0, n), n < 2^32 (Lemire's multiply-shift; the bias is below 2^-32).
  NNSTUDIO_HOST_DEVICE uint32_t below(uint32_t n) { return uint32_t(((next() >> 32) * uint64_t(n)) >> 32); }
};

}  // namespace nnstudio
