#include <gtest/gtest.h>

#include <cmath>

#include "clbo/kernels/norms.hpp"
#include "kernel_test_util.hpp"

namespace clbo::kernels {
namespace {

using testing::random_floats;

const ParamLayout& odd_layout() {
  static const ParamLayout l = ParamLayout::from_sizes({1, 7, 0, 1003, 64, 17, 4096 + 9});
  return l;
}

TEST(Norms, TensorSumsqAgainstDoubleSums) {
  const auto& l = odd_layout();
  const auto x = random_floats(l.total(), 21, 3.0f);
  std::vector<double> r(l.num_tensors()), o(l.num_tensors(), -1.0);
  ref::tensor_sumsq(x.data(), l, r.data());
  tensor_sumsq(x.data(), l, o.data());
  for (size_t t = 0; t < l.num_tensors(); ++t) {
    double d = 0.0;
    for (size_t i = l[t].offset; i < l[t].offset + l[t].size; ++i) d += double(x[i]) * x[i];
    EXPECT_EQ(r[t], d) << t;  // the reference is the plain in-order sum
    EXPECT_NEAR(o[t], d, 1e-12 * d) << t;
  }
  EXPECT_EQ(o[2], 0.0);  // the empty tensor
}

std::vector<float> freshness(size_t n, uint64_t seed) {
  auto r = random_floats(n, seed);
  const float levels[] = {1.0f, 0.99f, 0.5f, 1.0f, 0.0f, 1.0f};
  for (size_t i = 0; i < n; ++i) r[i] = levels[static_cast<size_t>(std::fabs(r[i]) * 97) % 6];
  return r;
}

TEST(Norms, SlambMaskedRefVsOptimizedAndPartition) {
  const auto& l = odd_layout();
  const auto w = random_floats(l.total(), 1), u = random_floats(l.total(), 2, 0.01f);
  const auto r = freshness(l.total(), 3);
  std::vector<double> ref_out(4 * l.num_tensors()), opt(4 * l.num_tensors(), -1.0);
  ref::slamb_masked_sumsq(w.data(), u.data(), r.data(), l, ref_out.data());
  slamb_masked_sumsq(w.data(), u.data(), r.data(), l, opt.data());
  std::vector<double> w2(l.num_tensors()), u2(l.num_tensors());
  tensor_sumsq(w.data(), l, w2.data());
  tensor_sumsq(u.data(), l, u2.data());
  for (size_t t = 0; t < l.num_tensors(); ++t) {
    for (int q = 0; q < 4; ++q)
      EXPECT_NEAR(opt[4 * t + q], ref_out[4 * t + q], 1e-12 * ref_out[4 * t + q]) << t << " " << q;
    // Every r here is <= 1, so F and S partition each tensor.
    EXPECT_NEAR(opt[4 * t + 0] + opt[4 * t + 2], w2[t], 1e-12 * w2[t]) << t;
    EXPECT_NEAR(opt[4 * t + 1] + opt[4 * t + 3], u2[t], 1e-12 * u2[t]) << t;
  }
}

TEST(Norms, SlambMaskedHandExample) {
  const ParamLayout l = ParamLayout::from_sizes({3, 2});
  const float w[] = {1, 2, 3, 4, 5}, u[] = {10, 20, 30, 40, 50};
  const float r[] = {1.0f, 0.5f, 1.0f, 0.99f, 1.0f};
  for (int impl = 0; impl < 2; ++impl) {
    double out[8];
    (impl ? slamb_masked_sumsq : ref::slamb_masked_sumsq)(w, u, r, l, out);
    const double want[8] = {1 + 9, 100 + 900, 4, 400, 25, 2500, 16, 1600};
    for (int q = 0; q < 8; ++q) EXPECT_EQ(out[q], want[q]) << impl << " " << q;
  }
}

}  // namespace
}  // namespace clbo::kernels
