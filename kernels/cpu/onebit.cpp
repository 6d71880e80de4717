// Optimized onebit.hpp kernels. Same per-element fp32 arithmetic as onebit_ref.cpp, laid out
// as 64-element blocks the compiler vectorizes (plain loops, or GCC/Clang vector extensions
// where the auto-vectorizer does poorly); double sums use many independent accumulators so
// the adds pipeline (only their reduction order differs from the reference). Bits are
// decoded through a ±1.0f row per byte value and encoded with SSE2 movemask; large unpack
// outputs use non-temporal stores.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "clbo/kernels/onebit.hpp"
#include "simd.hpp"

namespace clbo::kernels {
namespace {

constexpr size_t kBlock = 64;  // elements per block = 8 packed bytes
constexpr int kAcc = 16;       // independent double accumulators

// ±1.0f for each bit of a byte, MSB first: sign_table[b][j] = bit (7−j) of b ? +1 : −1.
// Multiplying a scale by ±1.0f is an exact negation, so table·s equals (bit ? s : −s).
struct SignTable {
  alignas(64) float v[256][8];
};
constexpr SignTable make_sign_table() {
  SignTable t{};
  for (int b = 0; b < 256; ++b)
    for (int j = 0; j < 8; ++j) t.v[b][j] = ((b >> (7 - j)) & 1) ? 1.0f : -1.0f;
  return t;
}
constexpr SignTable kSigns = make_sign_table();

double reduce(const double* acc) {
  double s = 0.0;
  for (int j = 0; j < kAcc; ++j) s += acc[j];
  return s;
}

// Σ (x_i + e_i)² over count elements; x == nullptr means x_i = 0 (computed as 0.0f + e_i,
// exactly as the reference does past n).
template <bool kHasX>
CLBO_MULTIVERSION double sumsq_range(const float* __restrict x, const float* __restrict e,
                                     size_t count) {
  double acc[kAcc] = {};
  size_t i = 0;
  for (; i + kAcc <= count; i += kAcc)
    for (int j = 0; j < kAcc; ++j) {
      const float b = (kHasX ? x[i + j] : 0.0f) + e[i + j];
      acc[j] += static_cast<double>(b) * static_cast<double>(b);
    }
  for (; i < count; ++i) {
    const float b = (kHasX ? x[i] : 0.0f) + e[i];
    acc[i % kAcc] += static_cast<double>(b) * static_cast<double>(b);
  }
  return reduce(acc);
}

// Pass 2 over count elements (count % 8 == 0), writing count/8 bytes.
template <bool kHasX>
CLBO_MULTIVERSION void sign_pack_range(const float* __restrict x, float* __restrict e, size_t count,
                                       float s, uint8_t* __restrict packed) {
  alignas(64) uint8_t flags[kBlock];
  for (size_t i = 0; i < count; i += kBlock) {
    const size_t len = std::min(kBlock, count - i);
    if (len == kBlock) {
      for (size_t j = 0; j < kBlock; ++j) {
        const float b = (kHasX ? x[i + j] : 0.0f) + e[i + j];
        const bool bit = b >= 0.0f;
        e[i + j] = b - (bit ? s : -s);
        flags[j] = bit;
      }
    } else {
      for (size_t j = 0; j < len; ++j) {
        const float b = (kHasX ? x[i + j] : 0.0f) + e[i + j];
        const bool bit = b >= 0.0f;
        e[i + j] = b - (bit ? s : -s);
        flags[j] = bit;
      }
    }
    for (size_t k = 0; k < len / 8; ++k) packed[i / 8 + k] = detail::pack8_msb_first(flags + 8 * k);
  }
}

// The helpers below take and return 32-byte vectors but are always inlined in this file, so
// the ABI note GCC emits for them (-Wpsabi) does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

// GCC/Clang vector extensions: eight fp32 lanes, lowered to two SSE registers in the default
// build and one AVX register in the AVX2 clone. Lane arithmetic is plain IEEE fp32.
using v8f = float __attribute__((vector_size(32)));
using v8i = int32_t __attribute__((vector_size(32)));
using v4f = float __attribute__((vector_size(16)));
using v4d = double __attribute__((vector_size(32)));

CLBO_INLINE v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
CLBO_INLINE void store8(float* p, v8f v) {
  std::memcpy(p, &v, sizeof v);
}
CLBO_INLINE v8f splat(float x) {
  return v8f{x, x, x, x, x, x, x, x};
}

// kReverse[b] = b with its bit order reversed (movemask puts lane 0 in the LSB).
struct ByteTable {
  uint8_t v[256];
};
constexpr ByteTable make_reverse_table() {
  ByteTable t{};
  for (int b = 0; b < 256; ++b) {
    int r = 0;
    for (int i = 0; i < 8; ++i) r |= ((b >> i) & 1) << (7 - i);
    t.v[b] = static_cast<uint8_t>(r);
  }
  return t;
}
constexpr ByteTable kReverse = make_reverse_table();

// Packs a lane mask (lanes −1 or 0) into one byte, lane 0 in the MSB.
CLBO_INLINE uint8_t pack_mask8(v8i mask) {
#if defined(CLBO_HAVE_SSE2)
  // memcpy rather than std::bit_cast: GCC 12 miscompiles bit_cast of 32-byte vector types
  // at -O0 (a null load under the debug and sanitizer builds).
  v8f m;
  std::memcpy(&m, &mask, sizeof m);
  const int lo = _mm_movemask_ps(__builtin_shufflevector(m, m, 0, 1, 2, 3));
  const int hi = _mm_movemask_ps(__builtin_shufflevector(m, m, 4, 5, 6, 7));
  return kReverse.v[lo | (hi << 4)];
#else
  unsigned b = 0;
  for (int q = 0; q < 8; ++q) b |= (mask[q] ? 0x80u : 0u) >> q;
  return static_cast<uint8_t>(b);
#endif
}

// a for the kBytes·8 elements starting at byte `byte` of every piece:
// a_t = (Σ_j ±s_j)·(1/p) + e_t, the sum over j = 0..p−1 in order from 0.0f as the contract
// fixes. A kSigns row times s_j is exactly the contract's (bit ? s_j : −s_j).
template <size_t kBytes>
CLBO_INLINE void server_a(const uint8_t* const* pieces, const float* scales, int p, size_t byte,
                          v8f inv_p, const float* __restrict e, v8f* a) {
  v8f votes[kBytes];
  for (size_t k = 0; k < kBytes; ++k) votes[k] = splat(0.0f);
  for (int j = 0; j < p; ++j) {
    const uint8_t* piece = pieces[j] + byte;
    const v8f sj = splat(scales[j]);
    if constexpr (kBytes == 8 && std::endian::native == std::endian::little) {
      uint64_t word;  // one load for all eight bytes: the loop is load-port bound
      std::memcpy(&word, piece, 8);
      for (size_t k = 0; k < 8; ++k) votes[k] += load8(kSigns.v[(word >> (8 * k)) & 0xFFu]) * sj;
    } else {
      for (size_t k = 0; k < kBytes; ++k) votes[k] += load8(kSigns.v[piece[k]]) * sj;
    }
  }
  for (size_t k = 0; k < kBytes; ++k) a[k] = votes[k] * inv_p + load8(e + 8 * k);
}

// acc[j] += a_t² over t ≡ j (mod kAcc), products in double (exact). Written as a scalar
// lane loop, which the vectorizer turns into packed float→double conversions.
template <size_t kLen>
CLBO_INLINE void add_squares(const float* __restrict a, double* __restrict acc) {
  for (size_t t = 0; t < kLen; t += kAcc)
    for (int j = 0; j < kAcc; ++j)
      acc[j] += static_cast<double>(a[t + j]) * static_cast<double>(a[t + j]);
}

// Pass 2 on eight lanes: bit = a >= 0; e = a − (bit ? s : −s); returns the packed byte.
CLBO_INLINE uint8_t sign_update8(v8f a, v8f s, v8f neg_s, float* e) {
  const v8i bit = a >= splat(0.0f);
  store8(e, a - (bit ? s : neg_s));
  return pack_mask8(bit);
}

// Both passes over c elements (c % 8 == 0). Pass 1 stores a into err, pass 2 reads it back.
// (Recomputing a in pass 2 from the pieces would move 8 − p/8 fewer bytes per element, but
// measured slower on the development machine: decoding, not memory, is the bottleneck.)
CLBO_MULTIVERSION float server_passes(const uint8_t* const* pieces, const float* scales, int p,
                                      float* __restrict err, size_t c,
                                      uint8_t* __restrict packed_out) {
  const v8f inv_p = splat(1.0f / static_cast<float>(p));
  const size_t full = c / kBlock * kBlock;
  v8f a[8];
  alignas(32) float lanes[kBlock];
  double acc[kAcc] = {};
  for (size_t i = 0; i < full; i += kBlock) {
    server_a<8>(pieces, scales, p, i / 8, inv_p, err + i, a);
    std::memcpy(lanes, a, sizeof a);
    add_squares<kBlock>(lanes, acc);
    std::memcpy(err + i, lanes, sizeof lanes);
  }
  for (size_t i = full; i < c; i += 8) {  // the last < 64 elements, one byte at a time
    server_a<1>(pieces, scales, p, i / 8, inv_p, err + i, a);
    std::memcpy(lanes, a, 8 * sizeof(float));
    for (size_t t = 0; t < 8; ++t)
      acc[t] += static_cast<double>(lanes[t]) * static_cast<double>(lanes[t]);
    std::memcpy(err + i, lanes, 8 * sizeof(float));
  }
  const float s = rms_scale(reduce(acc), c);
  const v8f vs = splat(s), vneg = splat(-s);
  for (size_t i = 0; i < c; i += 8)
    packed_out[i / 8] = sign_update8(load8(err + i), vs, vneg, err + i);
  return s;
}

// unpack_scale over whole bytes: out = kSigns row · scale (an exact ±scale).
CLBO_MULTIVERSION void unpack_bytes(const uint8_t* __restrict packed, size_t nbytes, float scale,
                                    float* __restrict out) {
  const v8f s = splat(scale);
  for (size_t k = 0; k < nbytes; ++k) store8(out + 8 * k, load8(kSigns.v[packed[k]]) * s);
}

}  // namespace

float rms_scale(double sumsq, size_t len) {
  if (len == 0) return 0.0f;
  return static_cast<float>(std::sqrt(sumsq / static_cast<double>(len)));
}

double ef_sumsq(const float* x, size_t n, const float* err, size_t n_pad) {
  const size_t nx = std::min(n, n_pad);
  return sumsq_range<true>(x, err, nx) + sumsq_range<false>(nullptr, err + nx, n_pad - nx);
}

void ef_sign_pack(const float* x, size_t n, float* err, size_t n_pad, float scale,
                  uint8_t* packed) {
  const size_t nx = std::min(n, n_pad);
  const size_t full = nx / 8 * 8;  // bytes made of real x only
  sign_pack_range<true>(x, err, full, scale, packed);
  size_t done = full;
  if (full < nx) {  // the byte straddling n: x padded with zeros, as the reference reads it
    alignas(16) float xb[8] = {};
    std::copy(x + full, x + nx, xb);
    sign_pack_range<true>(xb, err + full, 8, scale, packed + full / 8);
    done += 8;
  }
  sign_pack_range<false>(nullptr, err + done, n_pad - done, scale, packed + done / 8);
}

void unpack_scale(const uint8_t* packed, size_t n, float scale, float* out) {
  const size_t full = n / 8;
#if defined(CLBO_HAVE_SSE2)
  // Large aligned outputs are streamed past the cache (see detail::kStreamingBytes): the
  // lines would be evicted before use anyway, and streaming saves reading them first.
  if (n * sizeof(float) >= detail::kStreamingBytes && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    const __m128 s = _mm_set1_ps(scale);
    for (size_t k = 0; k < full; ++k) {
      const float* sg = kSigns.v[packed[k]];
      _mm_stream_ps(out + 8 * k, _mm_mul_ps(_mm_load_ps(sg), s));
      _mm_stream_ps(out + 8 * k + 4, _mm_mul_ps(_mm_load_ps(sg + 4), s));
    }
    _mm_sfence();
  } else
#endif
  {
    unpack_bytes(packed, full, scale, out);
  }
  for (size_t i = full * 8; i < n; ++i)
    out[i] = ((packed[i / 8] >> (7 - i % 8)) & 1u) ? scale : -scale;
}

float server_step(const uint8_t* const* pieces, const float* scales, int p, float* err, size_t c,
                  uint8_t* packed_out) {
  return server_passes(pieces, scales, p, err, c, packed_out);
}

}  // namespace clbo::kernels
