// Shared helpers for the kernel tests: deterministic random inputs that include the values
// kernels get wrong most easily (±0.0, exact ties), and bitwise buffer comparison.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace clbo::kernels::testing {

// The sizes every ref-vs-optimized comparison runs: around the 8-element byte, the
// 64-element block, and a large odd size.
inline const std::vector<size_t> kOddSizes = {0,  1,  7,  8,  9,   15,       16,
                                              17, 63, 64, 65, 127, 1000 + 3, 4096 + 8};

// Gaussian values with about 1 in 16 replaced by +0.0, −0.0 or a repeated value (ties).
inline std::vector<float> random_floats(size_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::uniform_int_distribution<int> pick(0, 63);
  std::vector<float> v(n);
  for (auto& x : v) {
    const int c = pick(rng);
    x = c == 0 ? 0.0f : c == 1 ? -0.0f : c == 2 ? 0.25f : c == 3 ? -0.25f : normal(rng);
  }
  return v;
}

inline std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// True when the two float buffers hold the same bit patterns (so −0.0 ≠ +0.0, NaN == NaN).
inline bool same_bits(const float* a, const float* b, size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0;
}

inline ::testing::AssertionResult bitwise_equal(const std::vector<float>& a,
                                                const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "first difference at " << i << ": " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

inline bool bit_msb(const uint8_t* bits, size_t i) {
  return (bits[i / 8] >> (7 - i % 8)) & 1u;
}

}  // namespace clbo::kernels::testing
