// Scalar fp32 <-> binary16 conversion by integer manipulation (IEEE 754 round to nearest
// even), and the reference batch loops. NaNs keep their top payload bits and are quieted,
// which is what x86 F16C produces, so the scalar and F16C paths agree bit for bit.
#include <bit>

#include "clbo/kernels/half.hpp"

namespace clbo::kernels {

uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u)  // NaN: quiet bit set, payload truncated to 10 bits
    return static_cast<uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  if (ax >= 0x477FF000u)  // >= 65520 = halfway from the largest half (65504) to 2^16: Inf
    return static_cast<uint16_t>(sign | 0x7C00u);
  if (ax >= 0x38800000u) {  // normal half (>= 2^-14): rebias, round the 13 dropped bits
    const uint32_t rounded = ax + 0xFFFu + ((ax >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
  }
  if (ax <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 rounds to zero (tie)
  // Subnormal half: count units of 2^-24, rounding the dropped bits to nearest even. A
  // result of 0x400 is the smallest normal, which the encoding already expresses.
  const uint32_t e = ax >> 23;
  const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t h = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  uint32_t m = h & 0x3FFu;
  if (e == 0x1Fu)  // Inf, or NaN (quieted, payload kept in the top bits)
    return std::bit_cast<float>(sign | 0x7F800000u | (m ? 0x400000u | (m << 13) : 0u));
  if (e != 0) return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
  if (m == 0) return std::bit_cast<float>(sign);
  uint32_t e32 = 113;  // subnormal half: normalize m·2^-24
  while (!(m & 0x400u)) {
    m <<= 1;
    --e32;
  }
  return std::bit_cast<float>(sign | (e32 << 23) | ((m & 0x3FFu) << 13));
}

namespace ref {

void f32_to_f16(const float* src, size_t n, uint16_t* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = kernels::f32_to_f16(src[i]);
}

void f16_to_f32(const uint16_t* src, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) dst[i] = kernels::f16_to_f32(src[i]);
}

}  // namespace ref
}  // namespace clbo::kernels
