// GPU optimizer kernels against the CPU reference: element-wise state bit-identical,
// per-tensor double sums within 1e-12 relative, outputs poisoned before each run.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "clbo/cuda/optim.hpp"
#include "clbo/kernels/adam.hpp"
#include "clbo/kernels/lamb_factor.hpp"
#include "clbo/kernels/norms.hpp"
#include "cuda_test_util.hpp"

namespace clbo::cuda {
namespace {

using namespace testing;

// Tensors of awkward sizes: empty, single element, several segments, a partial segment.
ParamLayout awkward_layout() {
  return ParamLayout::from_sizes({3, 0, 1, 4096, 10000, 4097, 255});
}

std::vector<float> positive(size_t n, uint64_t seed) {
  auto v = random_floats(n, seed, 0.01f);
  for (auto& x : v) x = x * x;  // second moments are non-negative
  return v;
}

kernels::AdamArgs adam_args(bool m, bool v) {
  kernels::AdamArgs a;
  a.lr = 1e-2f, a.beta1 = 0.9f, a.beta2 = 0.995f, a.eps = 1e-6f, a.weight_decay = 0.01f;
  a.bc1 = 0.271f, a.bc2 = 0.0297f;
  a.update_m = m, a.update_v = v;
  return a;
}

TEST(CudaOptim, AdamUpdateBitIdenticalForEveryMomentFlag) {
  CLBO_REQUIRE_CUDA_DEVICE();
  const size_t n = 100003;
  uint64_t seed = 10;
  for (bool um : {true, false})
    for (bool uv : {true, false}) {
      auto theta = random_floats(n, ++seed), m = random_floats(n, ++seed, 0.1f);
      auto v = positive(n, ++seed);
      const auto g = random_floats(n, ++seed);
      auto dt = to_device(theta), dm = to_device(m), dv = to_device(v);
      auto dg = to_device(g);
      const auto a = adam_args(um, uv);
      cuda::adam_update(dt.data(), dm.data(), dv.data(), dg.data(), n, a);
      sync();
      kernels::ref::adam_update(theta.data(), m.data(), v.data(), g.data(), n, a);
      EXPECT_TRUE(bitwise_equal(dt.download(), theta)) << um << uv;
      EXPECT_TRUE(bitwise_equal(dm.download(), m)) << um << uv;
      EXPECT_TRUE(bitwise_equal(dv.download(), v)) << um << uv;
    }
}

TEST(CudaOptim, MomentumUpdateBitIdentical) {
  CLBO_REQUIRE_CUDA_DEVICE();
  const size_t n = 77777;
  auto m = random_floats(n, 1), g = random_floats(n, 2);
  auto dm = to_device(m), dg = to_device(g);
  cuda::momentum_update(dm.data(), dg.data(), n, 0.9f);
  sync();
  kernels::momentum_update(m.data(), g.data(), n, 0.9f);
  EXPECT_TRUE(bitwise_equal(dm.download(), m));
}

TEST(CudaOptim, LambDirectionAndNormsMatchReference) {
  CLBO_REQUIRE_CUDA_DEVICE();
  const auto layout = awkward_layout();
  const LayoutTable table(layout);
  const size_t n = layout.total(), T = layout.num_tensors();
  Workspace ws;
  auto theta = random_floats(n, 21), m = random_floats(n, 22, 0.1f), v = positive(n, 23);
  const auto g = random_floats(n, 24);
  auto dt = to_device(theta), dm = to_device(m), dv = to_device(v), dg = to_device(g);
  auto du = poisoned<float>(n);
  auto dts = poisoned<double>(T), dus = poisoned<double>(T);
  const auto a = adam_args(true, true);
  cuda::lamb_direction(dt.data(), dm.data(), dv.data(), dg.data(), du.data(), table, a, dts.data(),
                       dus.data(), ws);
  sync();
  std::vector<float> u(n);
  std::vector<double> ts(T), us(T);
  kernels::ref::lamb_direction(theta.data(), m.data(), v.data(), g.data(), u.data(), layout, a,
                               ts.data(), us.data());
  EXPECT_TRUE(bitwise_equal(du.download(), u));
  EXPECT_TRUE(bitwise_equal(dm.download(), m));
  EXPECT_TRUE(bitwise_equal(dv.download(), v));
  const auto gts = dts.download(), gus = dus.download();
  for (size_t t = 0; t < T; ++t) {
    EXPECT_TRUE(close(gts[t], ts[t], 1e-12)) << "tensor " << t;
    EXPECT_TRUE(close(gus[t], us[t], 1e-12)) << "tensor " << t;
  }
}

TEST(CudaOptim, LambTrustAndScaledUpdateMatchCpu) {
  CLBO_REQUIRE_CUDA_DEVICE();
  const auto layout = awkward_layout();
  const LayoutTable table(layout);
  const size_t n = layout.total(), T = layout.num_tensors();
  // Sums that hit every branch: zero norms, ratios below lo, inside, above hi.
  std::vector<double> ts = {0.0, 4.0, 1e-8, 9.0, 1e6, 2.5, 3.0};
  std::vector<double> us = {1.0, 0.0, 1.0, 4.0, 1e-4, 2.5, 7.0};
  ASSERT_EQ(ts.size(), T);
  auto dts = to_device(ts), dus = to_device(us);
  auto dcoeff = poisoned<float>(T);
  cuda::lamb_trust(dts.data(), dus.data(), T, 0.01f, 10.0f, dcoeff.data());
  sync();
  const auto coeff = dcoeff.download();
  for (size_t t = 0; t < T; ++t)
    EXPECT_EQ(coeff[t], kernels::lamb_trust(ts[t], us[t], 0.01f, 10.0f)) << "tensor " << t;

  auto theta = random_floats(n, 31);
  const auto u = random_floats(n, 32);
  auto dt = to_device(theta), du = to_device(u);
  cuda::scaled_update(dt.data(), du.data(), table, dcoeff.data(), 0.125f);
  sync();
  kernels::scaled_update(theta.data(), u.data(), layout, coeff.data(), 0.125f);
  EXPECT_TRUE(bitwise_equal(dt.download(), theta));
}

TEST(CudaOptim, TensorAndSlambMaskedSumsMatchReference) {
  CLBO_REQUIRE_CUDA_DEVICE();
  const auto layout = awkward_layout();
  const LayoutTable table(layout);
  const size_t n = layout.total(), T = layout.num_tensors();
  Workspace ws;
  const auto w = random_floats(n, 41), u = random_floats(n, 42);
  std::vector<float> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = i % 3 == 0 ? 1.0f : i % 3 == 1 ? 0.99f : 0.25f;
  auto dw = to_device(w), du = to_device(u), dr = to_device(r);
  auto d1 = poisoned<double>(T), d4 = poisoned<double>(4 * T);
  cuda::tensor_sumsq(dw.data(), table, d1.data(), ws);
  cuda::slamb_masked_sumsq(dw.data(), du.data(), dr.data(), table, d4.data(), ws);
  sync();
  std::vector<double> s1(T), s4(4 * T);
  kernels::ref::tensor_sumsq(w.data(), layout, s1.data());
  kernels::ref::slamb_masked_sumsq(w.data(), u.data(), r.data(), layout, s4.data());
  const auto g1 = d1.download(), g4 = d4.download();
  for (size_t i = 0; i < T; ++i) EXPECT_TRUE(close(g1[i], s1[i], 1e-12)) << "tensor " << i;
  for (size_t i = 0; i < 4 * T; ++i) EXPECT_TRUE(close(g4[i], s4[i], 1e-12)) << "slot " << i;
}

// The fused 1-bit LAMB pass against the CPU contract (clbo/kernels/lamb_factor.hpp), with and
// without weight decay (λ = 0 must leave u_pre's −0s alone), and the factors the host derives
// from either set of terms.
TEST(CudaOptim, OnebitLambTermsMatchTheCpuContract) {
  CLBO_REQUIRE_CUDA_DEVICE();
  const auto layout = awkward_layout();
  const LayoutTable table(layout);
  const size_t n = layout.total(), T = layout.num_tensors();
  Workspace ws;
  for (const float wd : {0.01f, 0.0f}) {
    SCOPED_TRACE(wd);
    const auto theta = random_floats(n, 51), m = random_floats(n, 52, 0.1f),
               m_last = random_floats(n, 53, 0.1f), v = positive(n, 54);
    auto vf = positive(n, 55);
    const kernels::OnebitLambArgs a{0.9f, 0.999f, 1e-6f, wd};
    auto dt = to_device(theta), dm = to_device(m), dml = to_device(m_last), dv = to_device(v);
    auto dvf = to_device(vf);
    auto du = poisoned<float>(n);
    auto dterms = poisoned<double>(kernels::kOnebitLambTerms * T);
    cuda::onebit_lamb_terms(dt.data(), dm.data(), dml.data(), dv.data(), dvf.data(), du.data(),
                            table, a, dterms.data(), ws);
    sync();
    std::vector<float> u(n);
    std::vector<double> terms(kernels::kOnebitLambTerms * T);
    kernels::onebit_lamb_terms(theta.data(), m.data(), m_last.data(), v.data(), vf.data(), u.data(),
                               layout, a, terms.data());
    EXPECT_TRUE(bitwise_equal(du.download(), u));
    EXPECT_TRUE(bitwise_equal(dvf.download(), vf));
    const auto got = dterms.download();
    for (size_t t = 0; t < T; ++t) {
      EXPECT_EQ(got[3 * t], terms[3 * t]) << "max ratio of tensor " << t;  // max is exact
      EXPECT_TRUE(close(got[3 * t + 1], terms[3 * t + 1], 1e-12)) << "tensor " << t;
      EXPECT_TRUE(close(got[3 * t + 2], terms[3 * t + 2], 1e-12)) << "tensor " << t;
    }
    // The host turns either set of terms into the same factors: exactly without weight decay
    // (only the max enters), within the sums' rounding with it.
    const kernels::OnebitLambFactorArgs fa{wd, 0.5, 4.0, 0.1};
    std::vector<double> f_gpu(T, 1.0), f_cpu(T, 1.0);
    kernels::onebit_lamb_factors(got.data(), layout, fa, f_gpu.data());
    kernels::onebit_lamb_factors(terms.data(), layout, fa, f_cpu.data());
    for (size_t t = 0; t < T; ++t) {
      if (wd == 0.0f)
        EXPECT_EQ(f_gpu[t], f_cpu[t]) << "tensor " << t;
      else
        EXPECT_TRUE(close(f_gpu[t], f_cpu[t], 1e-12)) << "tensor " << t;
    }
  }
}

}  // namespace
}  // namespace clbo::cuda
