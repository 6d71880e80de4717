// Philox4x32-10 (Salmon et al., SC'11; the Random123 generator), the counter-based RNG
// behind clbo's shared random masks (docs/reference/algorithms.md §7b). Header-only and usable from
// CUDA, so the CPU, the GPU and a NumPy reference draw identical streams.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define CLBO_HD __host__ __device__ __forceinline__
#else
#define CLBO_HD inline
#endif

namespace clbo {

struct Philox4x32 {
  uint32_t v[4];
};

CLBO_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Ten rounds with the Random123 multipliers and Weyl key increments.
CLBO_HD Philox4x32 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                 uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c0, hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return Philox4x32{{c0, c1, c2, c3}};
}

// floor(k · 2^32), the keep threshold of §7b; k = 1 keeps everything (see mask_keep).
CLBO_HD uint64_t mask_threshold(double k) {
  return k >= 1.0 ? (uint64_t{1} << 32) : static_cast<uint64_t>(k * 4294967296.0);
}

}  // namespace clbo
