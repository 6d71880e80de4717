#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "clbo/kernels/half.hpp"
#include "kernel_test_util.hpp"

namespace clbo::kernels {
namespace {

bool is_nan_code(uint16_t h) {
  return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
}

// The value of a non-NaN half code, computed independently in double.
double half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (e == 31) return sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

TEST(Half, ExhaustiveDecodeAndRoundTrip) {
  for (uint32_t c = 0; c < 65536; ++c) {
    const auto h = static_cast<uint16_t>(c);
    const float f = f16_to_f32(h);
    if (is_nan_code(h)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << c;
      const uint16_t back = f32_to_f16(f);
      EXPECT_TRUE(is_nan_code(back)) << std::hex << c;
      EXPECT_EQ(back, h | 0x0200u) << std::hex << c;  // quieted, payload and sign kept
      continue;
    }
    EXPECT_EQ(static_cast<double>(f), half_value(h)) << std::hex << c;
    EXPECT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << c;
    EXPECT_EQ(f32_to_f16(f), h) << std::hex << c;
  }
}

TEST(Half, BatchRefVsOptimizedAllCodes) {
  std::vector<uint16_t> codes(65536 + 5);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i * 40503u);
  std::vector<float> r(codes.size()), o(codes.size());
  ref::f16_to_f32(codes.data(), codes.size(), r.data());
  f16_to_f32(codes.data(), codes.size(), o.data());
  EXPECT_TRUE(testing::bitwise_equal(r, o));
}

TEST(Half, KnownValuesAndRoundNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);  // largest finite half
  // Ties between two halves go to the even mantissa.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // 1 + ½ulp -> 1
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // 1 + 1½ulp -> 1 + 2ulp
  EXPECT_EQ(f32_to_f16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  EXPECT_EQ(f32_to_f16(2049.0f), 0x6800);  // 2048 + 1 (halfway, 2048 even)
  EXPECT_EQ(f32_to_f16(2051.0f), 0x6802);  // 2050 odd -> 2052
  // Overflow: 65520 is the midpoint between 65504 and 2^16 and rounds (to even) to Inf.
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xFC00);
  // Subnormal halves (units of 2^-24) and underflow.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half a unit: tie to even 0
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);                      // 1.5 units -> 2
  EXPECT_EQ(f32_to_f16(5 * std::ldexp(1.0f, -25)), 0x0002);                      // 2.5 units -> 2
  EXPECT_EQ(f32_to_f16(-7 * std::ldexp(1.0f, -25)), 0x8004);                     // -3.5 units -> -4
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);  // -> min normal
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_TRUE(is_nan_code(f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(is_nan_code(f32_to_f16(std::numeric_limits<float>::signaling_NaN())));
  EXPECT_TRUE(is_nan_code(f32_to_f16(std::bit_cast<float>(0x7F800001u))));  // payload below 10 bits
}

// For random finite floats: the result is a nearest half, and on a tie the even one.
TEST(Half, RandomFloatsRoundToNearest) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> exp_bits(100, 145);  // around the half range
  for (int it = 0; it < 200000; ++it) {
    const uint32_t bits = (rng() & 0x807FFFFFu) | (exp_bits(rng) << 23);
    const float f = std::bit_cast<float>(bits);
    const uint16_t h = f32_to_f16(f);
    const double v = half_value(h), x = f;
    if (std::isinf(v)) {
      ASSERT_GE(std::fabs(x), 65520.0) << f;
      continue;
    }
    // Neighbours of h towards and away from zero (same sign).
    const uint16_t mag = h & 0x7FFFu;
    const double up = half_value(static_cast<uint16_t>((h & 0x8000u) | (mag + 1)));
    const double err = std::fabs(x - v);
    ASSERT_LE(err, std::fabs(x - up)) << f;
    if (mag > 0) {
      const double down = half_value(static_cast<uint16_t>((h & 0x8000u) | (mag - 1)));
      ASSERT_LE(err, std::fabs(x - down)) << f;
      if (err == std::fabs(x - down) || (!std::isinf(up) && err == std::fabs(x - up))) {
        ASSERT_EQ(h & 1u, 0u) << "tie not to even: " << f;
      }
    }
  }
}

TEST(Half, BatchRefVsOptimizedRandomBits) {
  std::mt19937 rng(11);
  for (size_t n : testing::kOddSizes) {
    std::vector<float> x(n);
    for (auto& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // incl. NaN, Inf
    for (size_t i = 0; i < n; i += 5) x[i] = std::ldexp(static_cast<float>(rng() % 4096), -30);
    std::vector<uint16_t> r(n + 1, 0xABCD), o(n + 1, 0xABCD);
    ref::f32_to_f16(x.data(), n, r.data());
    f32_to_f16(x.data(), n, o.data());
    EXPECT_EQ(r, o) << n;
    EXPECT_EQ(o[n], 0xABCD);
  }
}

}  // namespace
}  // namespace clbo::kernels
