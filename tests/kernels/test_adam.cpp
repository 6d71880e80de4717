#include <gtest/gtest.h>

#include <cmath>

#include "clbo/kernels/adam.hpp"
#include "kernel_test_util.hpp"

namespace clbo::kernels {
namespace {

using testing::bitwise_equal;
using testing::kOddSizes;
using testing::random_floats;

struct State {
  std::vector<float> theta, m, v, g;
};
State random_state(size_t n, uint64_t seed) {
  State s{random_floats(n, seed), random_floats(n, seed + 1, 0.1f),
          random_floats(n, seed + 2, 0.01f), random_floats(n, seed + 3)};
  for (auto& x : s.v) x = x * x;  // v >= 0
  return s;
}

AdamArgs args(bool update_m, bool update_v) {
  AdamArgs a;
  a.lr = 1e-2f;
  a.weight_decay = 0.01f;
  a.bc1 = 1.0f - 0.9f * 0.9f * 0.9f;
  a.bc2 = 1.0f - 0.999f * 0.999f * 0.999f;
  a.update_m = update_m;
  a.update_v = update_v;
  return a;
}

TEST(Adam, RefVsOptimizedBitIdentical) {
  for (size_t n : kOddSizes)
    for (int flags = 0; flags < 4; ++flags) {
      const AdamArgs a = args(flags & 1, flags & 2);
      State r = random_state(n, n + 50), o = r;
      ref::adam_update(r.theta.data(), r.m.data(), r.v.data(), r.g.data(), n, a);
      adam_update(o.theta.data(), o.m.data(), o.v.data(), o.g.data(), n, a);
      EXPECT_TRUE(bitwise_equal(r.theta, o.theta)) << n << " flags " << flags;
      EXPECT_TRUE(bitwise_equal(r.m, o.m)) << n << " flags " << flags;
      EXPECT_TRUE(bitwise_equal(r.v, o.v)) << n << " flags " << flags;
    }
}

TEST(Adam, NullGradientWhenMomentsFrozen) {
  State s = random_state(33, 1);
  const State before = s;
  State r = s;
  adam_update(s.theta.data(), s.m.data(), s.v.data(), nullptr, 33, args(false, false));
  ref::adam_update(r.theta.data(), r.m.data(), r.v.data(), nullptr, 33, args(false, false));
  EXPECT_TRUE(bitwise_equal(s.m, before.m));
  EXPECT_TRUE(bitwise_equal(s.v, before.v));
  EXPECT_TRUE(bitwise_equal(s.theta, r.theta));
  EXPECT_FALSE(bitwise_equal(s.theta, before.theta));
}

// One step by hand: θ = 1, m = v = 0, g = 0.5, t = 1 with bias correction, no weight decay.
TEST(Adam, HandComputedStep) {
  AdamArgs a;
  a.lr = 0.1f;
  a.bc1 = 1.0f - 0.9f;
  a.bc2 = 1.0f - 0.999f;
  float theta = 1.0f, m = 0.0f, v = 0.0f;
  const float g = 0.5f;
  adam_update(&theta, &m, &v, &g, 1, a);
  // m = 0.1·0.5, v = 0.001·0.25; m̂ = 0.5, v̂ = 0.25, u = 0.5/(0.5 + 1e-8) ≈ 1 - 2e-8.
  EXPECT_FLOAT_EQ(m, 0.05f);
  EXPECT_NEAR(v, 0.00025f, 1e-8f);  // 1 − 0.999f is 0.00099998713f in fp32
  EXPECT_FLOAT_EQ(theta, 0.9f);
  // The same step written out in fp32 in the documented order is exact.
  const float omb1 = 1.0f - 0.9f, omb2 = 1.0f - 0.999f;
  const float m1 = 0.9f * 0.0f + omb1 * g, v1 = 0.999f * 0.0f + omb2 * g * g;
  const float u = (m1 / a.bc1) / (std::sqrt(v1 / a.bc2) + 1e-8f) + 0.0f * 1.0f;
  EXPECT_EQ(theta, 1.0f - 0.1f * u);
}

TEST(Adam, MomentumAndScaledUpdate) {
  const size_t n = 1003;
  auto m = random_floats(n, 4);
  const auto g = random_floats(n, 5);
  auto want = m;
  for (size_t i = 0; i < n; ++i) want[i] = 0.9f * want[i] + (1.0f - 0.9f) * g[i];
  momentum_update(m.data(), g.data(), n, 0.9f);
  EXPECT_TRUE(bitwise_equal(m, want));

  const ParamLayout l = ParamLayout::from_sizes({1, 0, 600, 402});
  auto theta = random_floats(n, 6);
  const auto u = random_floats(n, 7);
  const float coeff[] = {0.5f, 2.0f, 1.3f, 0.01f};
  auto expect = theta;
  for (size_t t = 0; t < l.num_tensors(); ++t)
    for (size_t i = l[t].offset; i < l[t].offset + l[t].size; ++i)
      expect[i] = expect[i] - (0.003f * coeff[t]) * u[i];
  scaled_update(theta.data(), u.data(), l, coeff, 0.003f);
  EXPECT_TRUE(bitwise_equal(theta, expect));
}

TEST(Lamb, DirectionRefVsOptimizedAndConsistentWithAdam) {
  const ParamLayout l = ParamLayout::from_sizes({1, 7, 0, 1003, 64, 9});
  const size_t n = l.total();
  for (int flags = 0; flags < 4; ++flags) {
    const AdamArgs a = args(flags & 1, flags & 2);
    State r = random_state(n, 70), o = r, adam = r;
    std::vector<float> ur(n), uo(n);
    std::vector<double> tr(l.num_tensors()), usr(l.num_tensors()), to(l.num_tensors()),
        uso(l.num_tensors());
    ref::lamb_direction(r.theta.data(), r.m.data(), r.v.data(), r.g.data(), ur.data(), l, a,
                        tr.data(), usr.data());
    lamb_direction(o.theta.data(), o.m.data(), o.v.data(), o.g.data(), uo.data(), l, a, to.data(),
                   uso.data());
    EXPECT_TRUE(bitwise_equal(ur, uo)) << flags;
    EXPECT_TRUE(bitwise_equal(r.m, o.m)) << flags;
    EXPECT_TRUE(bitwise_equal(r.v, o.v)) << flags;
    for (size_t t = 0; t < l.num_tensors(); ++t) {
      double ts = 0.0, us = 0.0;
      for (size_t i = l[t].offset; i < l[t].offset + l[t].size; ++i) {
        ts += double(r.theta[i]) * r.theta[i];
        us += double(ur[i]) * ur[i];
      }
      EXPECT_NEAR(to[t], ts, 1e-12 * ts);
      EXPECT_NEAR(uso[t], us, 1e-12 * us);
    }
    // θ − lr·u with the LAMB direction is exactly the Adam update.
    adam_update(adam.theta.data(), adam.m.data(), adam.v.data(), adam.g.data(), n, a);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(adam.theta[i], r.theta[i] - a.lr * ur[i]) << i;
    EXPECT_TRUE(bitwise_equal(adam.m, o.m));
  }
}

TEST(Lamb, TrustRatioEdges) {
  EXPECT_EQ(lamb_trust(0.0, 4.0, 0.01f, 10.0f), 1.0f);
  EXPECT_EQ(lamb_trust(4.0, 0.0, 0.01f, 10.0f), 1.0f);
  EXPECT_EQ(lamb_trust(0.0, 0.0, 0.01f, 10.0f), 1.0f);
  EXPECT_EQ(lamb_trust(4.0, 1.0, 0.01f, 10.0f), 2.0f);
  EXPECT_EQ(lamb_trust(400.0, 1.0, 0.01f, 10.0f), 10.0f);  // clamped high
  EXPECT_EQ(lamb_trust(1e-8, 1.0, 0.01f, 10.0f), 0.01f);   // clamped low
  EXPECT_EQ(lamb_trust(1.0, 4.0, 0.01f, 0.3f), 0.3f);      // BERT recipe's max_coeff
  EXPECT_FLOAT_EQ(lamb_trust(2.0, 8.0, 0.01f, 10.0f), 0.5f);
}

}  // namespace
}  // namespace clbo::kernels
