// 1-bit LAMB's per-tensor factor (lamb_factor.hpp): the terms pass on hand-computed values and
// edge cases, the factor's blend and clamps, and the in-place update of last_factor. The GPU
// kernel is compared against this same code in tests/cuda/test_cuda_optim.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "clbo/kernels/lamb_factor.hpp"

namespace clbo::kernels {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

OnebitLambFactorArgs factor_args(float wd, double lo = 0.5, double hi = 4.0, double th = 0.1) {
  return {wd, lo, hi, th};
}

// terms = {max ratio, Σu_pre², Σu²}
TEST(OnebitLambFactor, MaxRatioClampedToBoundsAndToTheLastFactor) {
  const double t1[3] = {1.05, 4.0, 9.0};
  EXPECT_EQ(onebit_lamb_factor(t1, 5, 1.0, factor_args(0)), 1.05);
  const double t2[3] = {3.0, 4.0, 9.0};
  EXPECT_EQ(onebit_lamb_factor(t2, 5, 1.0, factor_args(0)), 1.0 * (1.0 + 0.1));  // threshold
  // factor_max 2.5 first, then the lower threshold bound last·0.9 = 2.7 wins.
  EXPECT_EQ(onebit_lamb_factor(t2, 5, 3.0, factor_args(0, 0.5, 2.5)), 3.0 * (1.0 - 0.1));
  const double t3[3] = {0.1, 4.0, 9.0};
  EXPECT_EQ(onebit_lamb_factor(t3, 5, 0.5, factor_args(0)), 0.5);  // factor_min
  // The threshold is a double: last·(1 + 0.1) in double, not 1.1f.
  EXPECT_NE(onebit_lamb_factor(t2, 5, 1.0, factor_args(0)), static_cast<double>(1.1f));
}

TEST(OnebitLambFactor, WeightDecayBlendsTowardOne) {
  // rr = min(1, ‖u_pre‖/‖u‖) = 2/3 blends the factor toward 1.
  const double t[3] = {1.06, 4.0, 9.0};
  const double rr = std::sqrt(4.0) / std::sqrt(9.0);
  EXPECT_EQ(onebit_lamb_factor(t, 5, 1.0, factor_args(0.01f)), 1.06 * rr + (1.0 - rr));
  // Without weight decay the norms are ignored.
  EXPECT_EQ(onebit_lamb_factor(t, 5, 1.0, factor_args(0)), 1.06);
  // ‖u‖ = 0 gives rr = 1 (no blending) rather than a division by zero.
  const double zero[3] = {1.02, 0.0, 0.0};
  EXPECT_EQ(onebit_lamb_factor(zero, 5, 1.0, factor_args(0.01f)), 1.02);
  // rr never exceeds 1, so the blend never extrapolates.
  const double big_pre[3] = {1.08, 9.0, 4.0};
  EXPECT_EQ(onebit_lamb_factor(big_pre, 5, 1.0, factor_args(0.01f)), 1.08);
}

TEST(OnebitLambFactor, EmptyTensorIsNeutralAndNoRatioHitsTheLowerBounds) {
  const double none[3] = {-kInf, 0.0, 0.0};
  EXPECT_EQ(onebit_lamb_factor(none, 0, 1.0, factor_args(0)), 1.0);  // empty: stays at 1
  EXPECT_EQ(onebit_lamb_factor(none, 0, 1.0, factor_args(0.01f)), 1.0);
  EXPECT_EQ(onebit_lamb_factor(none, 4, 1.0, factor_args(0)), 0.9);  // all ratios NaN
}

TEST(OnebitLambFactor, LayoutVersionUpdatesLastFactorInPlace) {
  const auto layout = ParamLayout::from_sizes({2, 0, 3});
  const double terms[9] = {3.0, 1.0, 1.0, -kInf, 0.0, 0.0, 0.7, 1.0, 1.0};
  std::vector<double> last = {1.0, 1.0, 0.75};
  onebit_lamb_factors(terms, layout, factor_args(0), last.data());
  EXPECT_EQ(last[0], 1.1);  // upper threshold
  EXPECT_EQ(last[1], 1.0);  // empty tensor
  EXPECT_EQ(last[2], 0.7);
  // A second call starts from the new values.
  onebit_lamb_factors(terms, layout, factor_args(0), last.data());
  EXPECT_EQ(last[0], 1.1 * 1.1);
}

TEST(OnebitLambTerms, MatchTheFormulaOnHandComputedElements) {
  const auto layout = ParamLayout::from_sizes({1, 2});
  const float theta[3] = {2.0f, 1.0f, -1.0f}, m[3] = {0.5f, 0.25f, 0.0f},
              m_last[3] = {0.25f, 0.0f, 0.0f}, v[3] = {4.0f, 1.0f, 1.0f};
  float vf[3] = {1.0f, 0.25f, 0.0f}, u[3];
  double terms[6];
  onebit_lamb_terms(theta, m, m_last, v, vf, u, layout, {0.5f, 0.5f, 0.0f, 0.25f}, terms);
  // Element 0: ĝ = (0.5 − 0.125)/0.5 = 0.75; v_fresh = 0.5 + 0.5·0.5625 = 0.78125;
  // denom = 2; u_pre = 0.25; u = 0.25 + 0.5 = 0.75; ratio = 2/sqrt(0.78125).
  EXPECT_EQ(vf[0], 0.78125f);
  EXPECT_EQ(u[0], 0.75f);
  EXPECT_EQ(terms[0], static_cast<double>(2.0f / std::sqrt(0.78125f)));
  EXPECT_EQ(terms[1], 0.0625);
  EXPECT_EQ(terms[2], 0.5625);
  // Element 1: ĝ = 0.5, v_fresh = 0.125 + 0.125 = 0.25, u_pre = 0.25, u = 0.5.
  EXPECT_EQ(vf[1], 0.25f);
  EXPECT_EQ(u[1], 0.5f);
  // Element 2 has v_fresh = 0 after the update: ratio 1/0 = +inf wins the tensor's max.
  EXPECT_EQ(vf[2], 0.0f);
  EXPECT_EQ(terms[3], kInf);
  EXPECT_EQ(terms[4], 0.0625);
  EXPECT_EQ(terms[5], 0.25 + 0.0625);
}

TEST(OnebitLambTerms, NoWeightDecayLeavesUPreUntouchedAndEmptyTensorsGetMinusInf) {
  const auto layout = ParamLayout::from_sizes({2, 0, 1});
  // m = −0 gives u_pre = −0; adding 0·θ would make it +0.
  const float theta[3] = {1.0f, 2.0f, 3.0f}, m[3] = {-0.0f, 0.5f, 0.25f}, m_last[3] = {},
              v[3] = {1.0f, 1.0f, 1.0f};
  float vf[3] = {1.0f, 1.0f, 1.0f}, u[3];
  double terms[9];
  onebit_lamb_terms(theta, m, m_last, v, vf, u, layout, {0.9f, 0.999f, 1e-6f, 0.0f}, terms);
  EXPECT_TRUE(std::signbit(u[0]));
  EXPECT_EQ(u[0], 0.0f);
  EXPECT_EQ(terms[1], terms[2]);  // u == u_pre
  EXPECT_EQ(terms[3], -kInf);     // the empty tensor: no ratio
  EXPECT_EQ(terms[4], 0.0);
  EXPECT_EQ(terms[5], 0.0);
}

TEST(OnebitLambTerms, NanRatiosAreSkippedByTheMax) {
  const auto layout = ParamLayout::from_sizes({2});
  // eps = 0 and v = v_fresh = 0 on element 0 make its ratio 0/0 = NaN.
  const float theta[2] = {}, m[2] = {0.0f, 0.5f}, m_last[2] = {}, v[2] = {0.0f, 4.0f};
  float vf[2] = {0.0f, 1.0f}, u[2];
  double terms[3];
  onebit_lamb_terms(theta, m, m_last, v, vf, u, layout, {0.5f, 0.5f, 0.0f, 0.0f}, terms);
  // Element 1: ĝ = 1, v_fresh = 0.5 + 0.5 = 1, ratio = 2/1.
  EXPECT_EQ(terms[0], 2.0);
}

}  // namespace
}  // namespace clbo::kernels
