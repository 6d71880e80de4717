// Optimized mask.hpp kernels. random_mask runs one Philox4x32-10 call per 4 elements, 4 or 8
// counters per SIMD vector (SSE2 always; AVX2 when the CPU has it, chosen at run time),
// and writes whole bytes.
#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

#include "clbo/kernels/mask.hpp"
#include "simd.hpp"

#if defined(CLBO_HAVE_SSE2) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace clbo::kernels {
namespace {

// Every path fills keep flags (0/1 bytes) for global elements [4·q0, 4·q0 + 4·kGroups): one
// Philox4x32-10 call per group of 4, counter {lo32(q), hi32(q), t, 0}, key {k0, k1}.
constexpr size_t kGroups = 16;          // Philox calls per block
constexpr size_t kBlock = 4 * kGroups;  // mask elements per block (8 bytes)
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

struct BlockArgs {
  uint32_t t, k0, k1, threshold;
};

void keep_flags_scalar(uint64_t q0, const BlockArgs& a, uint8_t* flags) {
  for (size_t g = 0; g < kGroups; ++g) {
    const uint64_t q = q0 + g;
    const Philox4x32 r =
        philox4x32_10(static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32), a.t, 0, a.k0, a.k1);
    for (size_t w = 0; w < 4; ++w) flags[4 * g + w] = r.v[w] < a.threshold;
  }
}

#if defined(CLBO_HAVE_SSE2)
// Lane-parallel Philox on SSE2 (in every x86-64): four counters per vector. mul_epu32
// multiplies the even 32-bit lanes, so odd lanes are shifted down and the halves re-paired.
inline void mulhilo_sse2(__m128i a, __m128i mul, __m128i& hi, __m128i& lo) {
  const __m128i even = _mm_shuffle_epi32(_mm_mul_epu32(a, mul), _MM_SHUFFLE(3, 1, 2, 0));
  const __m128i odd =
      _mm_shuffle_epi32(_mm_mul_epu32(_mm_srli_epi64(a, 32), mul), _MM_SHUFFLE(3, 1, 2, 0));
  lo = _mm_unpacklo_epi32(even, odd);
  hi = _mm_unpackhi_epi32(even, odd);
}

// x < threshold for unsigned 32-bit lanes (SSE2 compares signed: flip the sign bits).
inline __m128i less_u32_sse2(__m128i x, __m128i threshold_flipped) {
  return _mm_cmpgt_epi32(threshold_flipped, _mm_xor_si128(x, _mm_set1_epi32(INT32_MIN)));
}

// Flags for 4 groups from the 4 word vectors (lane g = group g): transpose to group order,
// narrow to bytes, keep 0/1.
inline __m128i flags_sse2(__m128i m0, __m128i m1, __m128i m2, __m128i m3) {
  const __m128i t0 = _mm_unpacklo_epi32(m0, m1), t1 = _mm_unpacklo_epi32(m2, m3);
  const __m128i t2 = _mm_unpackhi_epi32(m0, m1), t3 = _mm_unpackhi_epi32(m2, m3);
  const __m128i g01 = _mm_packs_epi32(_mm_unpacklo_epi64(t0, t1), _mm_unpackhi_epi64(t0, t1));
  const __m128i g23 = _mm_packs_epi32(_mm_unpacklo_epi64(t2, t3), _mm_unpackhi_epi64(t2, t3));
  return _mm_and_si128(_mm_packs_epi16(g01, g23), _mm_set1_epi8(1));
}

void keep_flags_sse2(uint64_t q0, const BlockArgs& a, uint8_t* flags) {
  const __m128i mul0 = _mm_set1_epi32(static_cast<int>(kMul0));
  const __m128i mul1 = _mm_set1_epi32(static_cast<int>(kMul1));
  const __m128i thr = _mm_set1_epi32(static_cast<int>(a.threshold ^ 0x80000000u));
  for (size_t g0 = 0; g0 < kGroups; g0 += 8) {  // two vectors of four counters in flight
    alignas(16) uint32_t lo[8], hi[8];
    for (size_t g = 0; g < 8; ++g) {
      lo[g] = static_cast<uint32_t>(q0 + g0 + g);
      hi[g] = static_cast<uint32_t>((q0 + g0 + g) >> 32);
    }
    __m128i c0[2], c1[2], c2[2], c3[2];
    for (int v = 0; v < 2; ++v) {
      c0[v] = _mm_load_si128(reinterpret_cast<const __m128i*>(lo + 4 * v));
      c1[v] = _mm_load_si128(reinterpret_cast<const __m128i*>(hi + 4 * v));
      c2[v] = _mm_set1_epi32(static_cast<int>(a.t));
      c3[v] = _mm_setzero_si128();
    }
    uint32_t k0 = a.k0, k1 = a.k1;
    for (int round = 0; round < 10; ++round) {
      const __m128i key0 = _mm_set1_epi32(static_cast<int>(k0));
      const __m128i key1 = _mm_set1_epi32(static_cast<int>(k1));
      for (int v = 0; v < 2; ++v) {
        __m128i hi0, lo0, hi1, lo1;
        mulhilo_sse2(c0[v], mul0, hi0, lo0);
        mulhilo_sse2(c2[v], mul1, hi1, lo1);
        c0[v] = _mm_xor_si128(_mm_xor_si128(hi1, c1[v]), key0);
        c1[v] = lo1;
        c2[v] = _mm_xor_si128(_mm_xor_si128(hi0, c3[v]), key1);
        c3[v] = lo0;
      }
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    for (int v = 0; v < 2; ++v)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(flags + 4 * g0 + 16 * static_cast<size_t>(v)),
                       flags_sse2(less_u32_sse2(c0[v], thr), less_u32_sse2(c1[v], thr),
                                  less_u32_sse2(c2[v], thr), less_u32_sse2(c3[v], thr)));
  }
}
#endif

#if defined(CLBO_HAVE_SSE2) && (defined(__GNUC__) || defined(__clang__))
#define CLBO_HAVE_AVX2_MASK 1
__attribute__((target("avx2"))) inline void mulhilo_avx2(__m256i x, __m256i mul, __m256i& hi,
                                                         __m256i& lo) {
  const __m256i even = _mm256_shuffle_epi32(_mm256_mul_epu32(x, mul), _MM_SHUFFLE(3, 1, 2, 0));
  const __m256i odd = _mm256_shuffle_epi32(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), mul),
                                           _MM_SHUFFLE(3, 1, 2, 0));
  lo = _mm256_unpacklo_epi32(even, odd);
  hi = _mm256_unpackhi_epi32(even, odd);
}

// The same with eight counters per AVX2 vector, two vectors (all 16 groups) in flight so
// the multiply latency of one hides behind the other. Unpack and pack work within 128-bit
// halves, so each half holds four consecutive groups, exactly as in the SSE2 version.
__attribute__((target("avx2"))) void keep_flags_avx2(uint64_t q0, const BlockArgs& a,
                                                     uint8_t* flags) {
  static_assert(kGroups == 16, "two AVX2 vectors of eight counters");
  const __m256i mul0 = _mm256_set1_epi32(static_cast<int>(kMul0));
  const __m256i mul1 = _mm256_set1_epi32(static_cast<int>(kMul1));
  alignas(32) uint32_t lo[kGroups], hi[kGroups];
  for (size_t g = 0; g < kGroups; ++g) {
    lo[g] = static_cast<uint32_t>(q0 + g);
    hi[g] = static_cast<uint32_t>((q0 + g) >> 32);
  }
  __m256i c0[2], c1[2], c2[2], c3[2];
  for (int v = 0; v < 2; ++v) {
    c0[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo + 8 * v));
    c1[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi + 8 * v));
    c2[v] = _mm256_set1_epi32(static_cast<int>(a.t));
    c3[v] = _mm256_setzero_si256();
  }
  uint32_t k0 = a.k0, k1 = a.k1;
  for (int round = 0; round < 10; ++round) {
    const __m256i key0 = _mm256_set1_epi32(static_cast<int>(k0));
    const __m256i key1 = _mm256_set1_epi32(static_cast<int>(k1));
    for (int v = 0; v < 2; ++v) {
      __m256i hi0, lo0, hi1, lo1;
      mulhilo_avx2(c0[v], mul0, hi0, lo0);
      mulhilo_avx2(c2[v], mul1, hi1, lo1);
      c0[v] = _mm256_xor_si256(_mm256_xor_si256(hi1, c1[v]), key0);
      c1[v] = lo1;
      c2[v] = _mm256_xor_si256(_mm256_xor_si256(hi0, c3[v]), key1);
      c3[v] = lo0;
    }
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  const __m256i sign = _mm256_set1_epi32(INT32_MIN);
  const __m256i thr = _mm256_set1_epi32(static_cast<int>(a.threshold ^ 0x80000000u));
  for (int v = 0; v < 2; ++v) {
    const __m256i m0 = _mm256_cmpgt_epi32(thr, _mm256_xor_si256(c0[v], sign));
    const __m256i m1 = _mm256_cmpgt_epi32(thr, _mm256_xor_si256(c1[v], sign));
    const __m256i m2 = _mm256_cmpgt_epi32(thr, _mm256_xor_si256(c2[v], sign));
    const __m256i m3 = _mm256_cmpgt_epi32(thr, _mm256_xor_si256(c3[v], sign));
    const __m256i t0 = _mm256_unpacklo_epi32(m0, m1), t1 = _mm256_unpacklo_epi32(m2, m3);
    const __m256i t2 = _mm256_unpackhi_epi32(m0, m1), t3 = _mm256_unpackhi_epi32(m2, m3);
    const __m256i g01 =
        _mm256_packs_epi32(_mm256_unpacklo_epi64(t0, t1), _mm256_unpackhi_epi64(t0, t1));
    const __m256i g23 =
        _mm256_packs_epi32(_mm256_unpacklo_epi64(t2, t3), _mm256_unpackhi_epi64(t2, t3));
    const __m256i bytes = _mm256_and_si256(_mm256_packs_epi16(g01, g23), _mm256_set1_epi8(1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(flags + 32 * v), bytes);
  }
}
#endif

using KeepFlagsFn = void (*)(uint64_t, const BlockArgs&, uint8_t*);

KeepFlagsFn best_keep_flags() {
#if defined(CLBO_HAVE_AVX2_MASK)
  if (__builtin_cpu_supports("avx2")) return keep_flags_avx2;
#endif
#if defined(CLBO_HAVE_SSE2)
  return keep_flags_sse2;
#else
  return keep_flags_scalar;
#endif
}

KeepFlagsFn g_keep_flags = nullptr;  // null: best_keep_flags(); set by detail::set_mask_path

void clear_tail_bits(uint8_t* bits, size_t n) {
  if (n % 8) bits[n / 8] &= static_cast<uint8_t>(0xFFu << (8 - n % 8));
}

}  // namespace

void random_mask(uint64_t seed, uint32_t t, double k, size_t begin, size_t n, uint8_t* bits) {
  if (!(k >= 0.0 && k <= 1.0))
    throw std::invalid_argument("random_mask: keep fraction k must be in [0, 1], got " +
                                std::to_string(k));
  const size_t nbytes = (n + 7) / 8;
  const uint64_t threshold = mask_threshold(k);
  if (threshold == 0 || threshold > 0xFFFFFFFFu) {  // nothing kept / everything kept
    if (nbytes) std::memset(bits, threshold == 0 ? 0 : 0xFF, nbytes);
    clear_tail_bits(bits, n);
    return;
  }
  const KeepFlagsFn keep_flags = g_keep_flags ? g_keep_flags : best_keep_flags();
  const BlockArgs args{t, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                       static_cast<uint32_t>(threshold)};
  // Blocks are aligned to Philox groups; local element j is flag off + j of the window that
  // starts at group begin/4. Two consecutive blocks cover any 64 local elements.
  const uint64_t q = begin / 4;
  const size_t off = begin % 4;
  alignas(64) uint8_t flags[2 * kBlock];
  keep_flags(q, args, flags);
  for (size_t b = 0; b * kBlock < n; ++b) {
    keep_flags(q + (b + 1) * kGroups, args, flags + kBlock);
    const size_t out = std::min<size_t>(8, nbytes - 8 * b);
    for (size_t j = 0; j < out; ++j) bits[8 * b + j] = detail::pack8_msb_first(flags + off + 8 * j);
    std::memcpy(flags, flags + kBlock, kBlock);
  }
  clear_tail_bits(bits, n);
}

void mask_set_range(uint8_t* bits, size_t lo, size_t hi) {
  size_t i = lo;
  for (; i < hi && i % 8 != 0; ++i) bits[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
  const size_t whole = i < hi ? (hi - i) / 8 : 0;
  if (whole) std::memset(bits + i / 8, 0xFF, whole);
  for (i += 8 * whole; i < hi; ++i) bits[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
}

size_t mask_count(const uint8_t* bits, size_t n) {
  size_t count = 0, k = 0;
  const size_t full = n / 8;
  for (; k + 8 <= full; k += 8) {
    uint64_t w;
    std::memcpy(&w, bits + k, 8);
    count += static_cast<size_t>(std::popcount(w));
  }
  for (; k < full; ++k) count += static_cast<size_t>(std::popcount(unsigned{bits[k]}));
  if (n % 8)
    count +=
        static_cast<size_t>(std::popcount(unsigned{bits[full]} & (0xFFu << (8 - n % 8)) & 0xFFu));
  return count;
}

namespace {

// Lane tables for the AVX2 compaction, indexed by a mask byte (lane q = element q = bit 7−q):
// pack[b] lists the kept lanes in order (vpermps gathers them to the front); unpack[b][q] is
// the position of lane q among the kept ones (vpermps spreads them back); lanes[b][q] is −1
// for a kept lane (the maskstore mask).
struct LaneTables {
  alignas(32) int32_t pack[256][8];
  alignas(32) int32_t unpack[256][8];
  alignas(32) int32_t lanes[256][8];
};
constexpr LaneTables make_lane_tables() {
  LaneTables t{};
  for (int b = 0; b < 256; ++b) {
    int kept = 0;
    for (int q = 0; q < 8; ++q) {
      const bool on = (b >> (7 - q)) & 1;
      t.lanes[b][q] = on ? -1 : 0;
      t.unpack[b][q] = on ? kept : 0;
      if (on) t.pack[b][kept++] = q;
    }
  }
  return t;
}
constexpr LaneTables kLanes = make_lane_tables();

// Kept-count-aware byte loops: the vector bodies move 8 floats per mask byte, so they run only
// while 8 more values fit in dst (compact) or exist in src (scatter); `kept` is the total.
using MoveBytesFn = size_t (*)(const float*, const uint8_t*, size_t, float*, size_t);

size_t compact_bytes_scalar(const float* __restrict src, const uint8_t* bits, size_t nbytes,
                            float* __restrict dst, size_t /*kept*/) {
  size_t w = 0;
  for (size_t k = 0; k < nbytes; ++k) {
    unsigned b = bits[k];
    if (b == 0) continue;
    if (b == 0xFF) {
      std::memcpy(dst + w, src + 8 * k, 8 * sizeof(float));
      w += 8;
      continue;
    }
    while (b) {  // highest set bit = lowest element
      const int j = std::countl_zero(static_cast<uint8_t>(b));
      dst[w++] = src[8 * k + static_cast<size_t>(j)];
      b &= ~(0x80u >> j);
    }
  }
  return w;
}

size_t scatter_bytes_scalar(const float* __restrict src, const uint8_t* bits, size_t nbytes,
                            float* __restrict dst, size_t /*kept*/) {
  size_t r = 0;
  for (size_t k = 0; k < nbytes; ++k) {
    unsigned b = bits[k];
    if (b == 0) continue;
    if (b == 0xFF) {
      std::memcpy(dst + 8 * k, src + r, 8 * sizeof(float));
      r += 8;
      continue;
    }
    while (b) {
      const int j = std::countl_zero(static_cast<uint8_t>(b));
      dst[8 * k + static_cast<size_t>(j)] = src[r++];
      b &= ~(0x80u >> j);
    }
  }
  return r;
}

#if defined(CLBO_HAVE_AVX2_MASK)
__attribute__((target("avx2,popcnt"))) size_t compact_bytes_avx2(const float* __restrict src,
                                                                 const uint8_t* bits, size_t nbytes,
                                                                 float* __restrict dst,
                                                                 size_t kept) {
  size_t w = 0, k = 0;
  for (; k < nbytes && w + 8 <= kept; ++k) {  // may store up to 8 lanes past w: keep in bounds
    const unsigned b = bits[k];
    const __m256i perm = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes.pack[b]));
    _mm256_storeu_ps(dst + w, _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + 8 * k), perm));
    w += static_cast<size_t>(__builtin_popcount(b));
  }
  return w + compact_bytes_scalar(src + 8 * k, bits + k, nbytes - k, dst + w, kept - w);
}

__attribute__((target("avx2,popcnt"))) size_t scatter_bytes_avx2(const float* __restrict src,
                                                                 const uint8_t* bits, size_t nbytes,
                                                                 float* __restrict dst,
                                                                 size_t kept) {
  size_t r = 0, k = 0;
  for (; k < nbytes && r + 8 <= kept; ++k) {  // reads 8 floats at r: keep in bounds
    const unsigned b = bits[k];
    if (b == 0) continue;
    const __m256i perm = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes.unpack[b]));
    const __m256i lanes = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes.lanes[b]));
    _mm256_maskstore_ps(dst + 8 * k, lanes,
                        _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + r), perm));
    r += static_cast<size_t>(__builtin_popcount(b));
  }
  return r + scatter_bytes_scalar(src + r, bits + k, nbytes - k, dst + 8 * k, kept - r);
}
#endif

// null: the best available; set by detail::set_mask_path.
MoveBytesFn g_compact_bytes = nullptr, g_scatter_bytes = nullptr;

MoveBytesFn best_compact_bytes() {
#if defined(CLBO_HAVE_AVX2_MASK)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")) return compact_bytes_avx2;
#endif
  return compact_bytes_scalar;
}

MoveBytesFn best_scatter_bytes() {
#if defined(CLBO_HAVE_AVX2_MASK)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")) return scatter_bytes_avx2;
#endif
  return scatter_bytes_scalar;
}

}  // namespace

size_t compact(const float* __restrict src, const uint8_t* bits, size_t n, float* __restrict dst) {
  const size_t full = n / 8;
  const MoveBytesFn move = g_compact_bytes ? g_compact_bytes : best_compact_bytes();
  size_t w = move(src, bits, full, dst, mask_count(bits, 8 * full));
  for (size_t i = full * 8; i < n; ++i)
    if ((bits[i / 8] >> (7 - i % 8)) & 1u) dst[w++] = src[i];
  return w;
}

void scatter(const float* __restrict src, const uint8_t* bits, size_t n, float* __restrict dst) {
  const size_t full = n / 8;
  const MoveBytesFn move = g_scatter_bytes ? g_scatter_bytes : best_scatter_bytes();
  size_t r = move(src, bits, full, dst, mask_count(bits, 8 * full));
  for (size_t i = full * 8; i < n; ++i)
    if ((bits[i / 8] >> (7 - i % 8)) & 1u) dst[i] = src[r++];
}

bool detail::set_mask_path(MaskPath path) {
  KeepFlagsFn keep = nullptr;
  MoveBytesFn compact_fn = compact_bytes_scalar, scatter_fn = scatter_bytes_scalar;
  switch (path) {
    case MaskPath::kAuto:
      g_keep_flags = nullptr;
      g_compact_bytes = g_scatter_bytes = nullptr;
      return true;
    case MaskPath::kScalar:
      keep = keep_flags_scalar;
      break;
    case MaskPath::kSse2:
#if defined(CLBO_HAVE_SSE2)
      keep = keep_flags_sse2;
#endif
      break;
    case MaskPath::kAvx2:
#if defined(CLBO_HAVE_AVX2_MASK)
      if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")) {
        keep = keep_flags_avx2;
        compact_fn = compact_bytes_avx2;
        scatter_fn = scatter_bytes_avx2;
      }
#endif
      break;
  }
  if (!keep) return false;
  g_keep_flags = keep;
  g_compact_bytes = compact_fn;
  g_scatter_bytes = scatter_fn;
  return true;
}

}  // namespace clbo::kernels
