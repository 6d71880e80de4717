// Private helpers shared by the optimized CPU kernels (not installed, not part of the API).
//
// We build for generic x86-64 (SSE2 only). Hot loops are written as plain blocked C++ that
// GCC/Clang vectorize, and marked CLBO_MULTIVERSION so the compiler also emits an AVX2
// clone picked at load time (ifunc). Clones run the same per-element fp32 operations in
// the same order (no -ffast-math, -ffp-contract=off), so every clone is bit-identical to
// the scalar reference.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(CLBO_NO_MULTIVERSION)
#define CLBO_MULTIVERSION __attribute__((target_clones("avx2", "default")))
#else
#define CLBO_MULTIVERSION
#endif

// Small helpers on vector-extension types must inline into each clone (an out-of-line call
// would pass 32-byte vectors with the default ABI).
#define CLBO_INLINE __attribute__((always_inline)) inline

#if defined(__SSE2__)
#include <emmintrin.h>
#define CLBO_HAVE_SSE2 1
#endif

namespace clbo::kernels::detail {

// Packs eight 0/1 flag bytes (flag of element j in byte j) into one byte, element 0 in the
// MSB. The multiply moves byte j's bit to bit 63−j with no carries between partial products.
inline uint8_t pack8_msb_first(const uint8_t* flags) {
  if constexpr (std::endian::native != std::endian::little) {
    unsigned b = 0;
    for (int j = 0; j < 8; ++j) b |= unsigned{flags[j]} << (7 - j);
    return static_cast<uint8_t>(b);
  }
  uint64_t x;
  std::memcpy(&x, flags, 8);
  return static_cast<uint8_t>((x * 0x8040201008040201ull) >> 56);
}

// Outputs at least this large are written with non-temporal stores where that helps: they
// cannot stay in cache anyway, and streaming avoids reading each destination line first.
constexpr size_t kStreamingBytes = size_t{16} << 20;

}  // namespace clbo::kernels::detail
