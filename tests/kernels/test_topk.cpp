#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "clbo/kernels/topk.hpp"
#include "kernel_test_util.hpp"

namespace clbo::kernels {
namespace {

// Values from a small set so |x| ties are common, including +0.0 and −0.0.
std::vector<float> tie_heavy(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const float levels[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.5f, -2.5f, 0.125f, 3.0f};
  std::vector<float> x(n);
  for (auto& v : x) v = levels[rng() % 8];
  return x;
}

// Checks the selection independently: idx ascending and unique; val = x[idx] bitwise;
// every selected |x| >= every unselected |x|, and on equal |x| the selected index is lower.
void check_selection(const std::vector<float>& x, size_t k, const std::vector<uint32_t>& idx,
                     const std::vector<float>& val) {
  std::vector<bool> chosen(x.size(), false);
  for (size_t j = 0; j < k; ++j) {
    if (j) {
      ASSERT_LT(idx[j - 1], idx[j]);
    }
    ASSERT_LT(idx[j], x.size());
    ASSERT_EQ(std::memcmp(&val[j], &x[idx[j]], 4), 0);
    chosen[idx[j]] = true;
  }
  float min_in = INFINITY;
  size_t last_tied_in = 0;
  for (size_t j = 0; j < k; ++j) min_in = std::min(min_in, std::fabs(x[idx[j]]));
  for (size_t j = 0; j < k; ++j)
    if (std::fabs(x[idx[j]]) == min_in) last_tied_in = std::max<size_t>(last_tied_in, idx[j]);
  for (size_t i = 0; i < x.size(); ++i) {
    if (chosen[i]) continue;
    ASSERT_LE(std::fabs(x[i]), min_in) << i;
    if (std::fabs(x[i]) == min_in) {
      ASSERT_GT(i, last_tied_in) << "tie not broken by lower index";
    }
  }
}

TEST(Topk, RefVsOptimizedWithTies) {
  for (size_t n : testing::kOddSizes)
    for (size_t k : {size_t{0}, size_t{1}, n / 10, n / 2, n > 0 ? n - 1 : 0, n}) {
      if (k > n) continue;
      for (int data = 0; data < 2; ++data) {
        const auto x = data ? tie_heavy(n, n + k) : testing::random_floats(n, n + k);
        std::vector<uint32_t> ir(k), io(k);
        std::vector<float> vr(k), vo(k);
        ref::topk_select(x.data(), n, k, ir.data(), vr.data());
        topk_select(x.data(), n, k, io.data(), vo.data());
        EXPECT_EQ(ir, io) << "n=" << n << " k=" << k;
        EXPECT_TRUE(testing::bitwise_equal(vr, vo));
        check_selection(x, k, io, vo);
      }
    }
}

TEST(Topk, AllEqualMagnitudesPickLowestIndices) {
  for (float v : {1.0f, -0.0f, 3e-39f /* subnormal */}) {
    std::vector<float> x(100, v);
    x[50] = -v;
    std::vector<uint32_t> idx(7);
    std::vector<float> val(7);
    topk_select(x.data(), x.size(), 7, idx.data(), val.data());
    for (uint32_t j = 0; j < 7; ++j) EXPECT_EQ(idx[j], j) << v;
  }
}

TEST(Topk, HandExampleKeepsSignAndNegativeZero) {
  const std::vector<float> x = {0.5f, -3.0f, 3.0f, -0.0f, 1.0f, 0.0f};
  uint32_t idx[5];
  float val[5];
  topk_select(x.data(), x.size(), 5, idx, val);
  const uint32_t want[] = {0, 1, 2, 3, 4};  // |−0.0| ties |0.0|; index 3 < 5 wins
  for (int j = 0; j < 5; ++j) EXPECT_EQ(idx[j], want[j]);
  EXPECT_EQ(val[1], -3.0f);
  EXPECT_TRUE(std::signbit(val[3]));
  EXPECT_THROW(topk_select(x.data(), x.size(), 7, idx, val), std::invalid_argument);
  EXPECT_THROW(ref::topk_select(x.data(), x.size(), 7, idx, val), std::invalid_argument);
}

}  // namespace
}  // namespace clbo::kernels
