// Scalar references for mask.hpp: one Philox call per element, one bit at a time.
#include <stdexcept>
#include <string>

#include "clbo/kernels/mask.hpp"

namespace clbo::kernels::ref {

void random_mask(uint64_t seed, uint32_t t, double k, size_t begin, size_t n, uint8_t* bits) {
  if (!(k >= 0.0 && k <= 1.0))
    throw std::invalid_argument("random_mask: keep fraction k must be in [0, 1], got " +
                                std::to_string(k));
  const uint64_t threshold = mask_threshold(k);
  for (size_t j = 0; j < (n + 7) / 8; ++j) bits[j] = 0;
  for (size_t j = 0; j < n; ++j)
    if (mask_keep(seed, t, threshold, begin + j))
      bits[j / 8] |= static_cast<uint8_t>(0x80u >> (j % 8));
}

size_t compact(const float* src, const uint8_t* bits, size_t n, float* dst) {
  size_t w = 0;
  for (size_t i = 0; i < n; ++i)
    if ((bits[i / 8] >> (7 - i % 8)) & 1u) dst[w++] = src[i];
  return w;
}

void scatter(const float* src, const uint8_t* bits, size_t n, float* dst) {
  size_t r = 0;
  for (size_t i = 0; i < n; ++i)
    if ((bits[i / 8] >> (7 - i % 8)) & 1u) dst[i] = src[r++];
}

}  // namespace clbo::kernels::ref
