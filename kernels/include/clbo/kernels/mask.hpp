// The shared random mask (docs/reference/algorithms.md §7b) and mask-driven compaction.
//
// Element i (a global index into the flat buffer) is kept at step t when word (i mod 4) of
// Philox4x32-10(counter = {lo32(i/4), hi32(i/4), t, 0}, key = {lo32(seed), hi32(seed)})
// is below floor(k·2^32); k = 1 keeps everything, k = 0 nothing. Every rank, the GPU and a
// NumPy reference draw the same mask with no communication.
//
// Masks are bitmaps in the bit order of onebit.hpp: local element j of a mask covering
// [begin, begin+n) is bit (7 − j%8) of byte j/8; a set bit means "kept".
#pragma once
#include <cstddef>
#include <cstdint>

#include "clbo/core/philox.hpp"

namespace clbo::kernels {

// Whether global element i is kept; `threshold` is clbo::mask_threshold(k).
CLBO_HD bool mask_keep(uint64_t seed, uint32_t t, uint64_t threshold, uint64_t i) {
  const uint64_t q = i >> 2;
  const Philox4x32 r =
      philox4x32_10(static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32), t, 0,
                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return r.v[i & 3] < threshold;
}

// Writes ceil(n/8) bytes: the mask over global elements [begin, begin+n). Trailing bits of
// the last byte are zero. Throws std::invalid_argument unless 0 <= k <= 1.
void random_mask(uint64_t seed, uint32_t t, double k, size_t begin, size_t n, uint8_t* bits);

// Sets the bits of local elements [lo, hi) (used to force whole tensors into a mask).
void mask_set_range(uint8_t* bits, size_t lo, size_t hi);

// Number of set bits among the first n.
size_t mask_count(const uint8_t* bits, size_t n);

// dst[j++] = src[i] for each kept i < n, in increasing i. Returns the count written.
// dst must hold mask_count(bits, n) elements and must not overlap src.
size_t compact(const float* src, const uint8_t* bits, size_t n, float* dst);

// The inverse: dst[i] = src[j++] for each kept i < n; dst[i] is untouched where not kept.
void scatter(const float* src, const uint8_t* bits, size_t n, float* dst);

namespace detail {
// Which code path random_mask (Philox) and compact/scatter use: kAuto (the default) picks the
// widest the CPU has; kScalar and kSse2 use the scalar compaction. Tests force each one; returns
// false when a path is unavailable on this CPU or build. Not thread-safe: tests only.
enum class MaskPath { kAuto, kScalar, kSse2, kAvx2 };
bool set_mask_path(MaskPath path);
}  // namespace detail

namespace ref {
void random_mask(uint64_t seed, uint32_t t, double k, size_t begin, size_t n, uint8_t* bits);
size_t compact(const float* src, const uint8_t* bits, size_t n, float* dst);
void scatter(const float* src, const uint8_t* bits, size_t n, float* dst);
}  // namespace ref

}  // namespace clbo::kernels
