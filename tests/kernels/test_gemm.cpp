// gemm.hpp: the AVX2+FMA kernel and the portable loop against the reference, bit for bit,
// over every transpose combination and the edges of the register tile and cache blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "clbo/kernels/gemm.hpp"

using namespace clbo::kernels;

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  // Values that expose a missing fma or a reordered sum: signed zeros, subnormals, large
  // magnitudes that cancel.
  if (n > 8) {
    v[0] = -0.0f;
    v[1] = std::numeric_limits<float>::denorm_min() * 3;
    v[2] = 1e30f;
    v[3] = -1e30f;
    v[4] = 1.0f + std::numeric_limits<float>::epsilon();
  }
  return v;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

struct Shape {
  size_t m, n, k;
};

// Every path against ref::gemm for one shape and transpose pair; C has a padded row stride
// whose padding must stay untouched.
void check(detail::GemmPath path, Op opa, Op opb, Shape s) {
  SCOPED_TRACE(testing::Message() << "m " << s.m << " n " << s.n << " k " << s.k << " opa "
                                  << (opa == Op::kN ? "N" : "T") << " opb "
                                  << (opb == Op::kN ? "N" : "T"));
  const size_t lda = (opa == Op::kN ? s.k : s.m) + 3, ldb = (opb == Op::kN ? s.n : s.k) + 1;
  const size_t a_rows = opa == Op::kN ? s.m : s.k, b_rows = opb == Op::kN ? s.k : s.n;
  const auto a = random_floats(a_rows * lda, 1 + static_cast<uint32_t>(s.m));
  const auto b = random_floats(b_rows * ldb, 2 + static_cast<uint32_t>(s.n));
  const size_t ldc = s.n + 2;
  std::vector<float> want(s.m * ldc, 7.0f), got(s.m * ldc, 7.0f);
  ref::gemm(opa, opb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, want.data(), ldc);
  ASSERT_TRUE(detail::set_gemm_path(path));
  gemm(opa, opb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, got.data(), ldc);
  detail::set_gemm_path(detail::GemmPath::kAuto);
  EXPECT_TRUE(same_bits(want, got));
  for (size_t i = 0; i < s.m; ++i)
    for (size_t j = s.n; j < ldc; ++j) ASSERT_EQ(got[i * ldc + j], 7.0f) << "padding overwritten";
}

const Shape kShapes[] = {{1, 1, 1},     {5, 15, 3},    {6, 16, 8},    {7, 17, 255},
                         {13, 33, 256}, {97, 40, 257}, {12, 10, 600}, {200, 70, 31},
                         {1, 100, 513}, {100, 1, 64},  {3, 2100, 5}};

void check_all(detail::GemmPath path) {
  for (Op opa : {Op::kN, Op::kT})
    for (Op opb : {Op::kN, Op::kT})
      for (const Shape& s : kShapes) check(path, opa, opb, s);
}

}  // namespace

TEST(Gemm, PortableMatchesReferenceBitForBit) {
  check_all(detail::GemmPath::kPortable);
}

TEST(Gemm, Avx2FmaMatchesReferenceBitForBit) {
  if (!detail::set_gemm_path(detail::GemmPath::kAvx2Fma))
    GTEST_SKIP() << "this CPU or build has no AVX2+FMA kernel";
  detail::set_gemm_path(detail::GemmPath::kAuto);
  check_all(detail::GemmPath::kAvx2Fma);
}

// The definition is the fused chain: a product that a separate multiply and add would round
// differently must come out as the fma gives it.
TEST(Gemm, ChainIsFusedNotMultiplyThenAdd) {
  const float e = std::numeric_limits<float>::epsilon();
  const std::vector<float> a = {-1.0f, 1.0f + e};
  const std::vector<float> b = {1.0f, 1.0f - e};
  float c = 0;
  for (auto path : {detail::GemmPath::kPortable, detail::GemmPath::kAvx2Fma}) {
    if (!detail::set_gemm_path(path)) continue;
    gemm(Op::kN, Op::kN, 1, 1, 2, a.data(), 2, b.data(), 1, &c, 1);
    // −1 + (1+e)(1−e) = −e²: exact with fma, 0 with a rounded product.
    EXPECT_EQ(c, -e * e);
  }
  detail::set_gemm_path(detail::GemmPath::kAuto);
}

TEST(Gemm, EmptyDepthGivesPositiveZero) {
  std::vector<float> c(6, 5.0f);
  gemm(Op::kN, Op::kN, 2, 3, 0, nullptr, 0, nullptr, 3, c.data(), 3);
  for (float x : c) {
    EXPECT_EQ(x, 0.0f);
    EXPECT_FALSE(std::signbit(x));
  }
}

TEST(Gemm, DoubleIsTheSameChain) {
  const std::vector<double> a = {1.5, -2.0, 0.25, 3.0, 1.0, -1.0};  // 2x3
  const std::vector<double> b = {2.0, 1.0, -1.0, 0.5, 4.0, 0.0};    // 3x2
  std::vector<double> c(4);
  gemm(Op::kN, Op::kN, 2, 2, 3, a.data(), 3, b.data(), 2, c.data(), 2);
  EXPECT_EQ(c[0], std::fma(0.25, 4.0, std::fma(-2.0, -1.0, 1.5 * 2.0)));
  EXPECT_EQ(c[3], std::fma(-1.0, 0.0, std::fma(1.0, 0.5, 3.0 * 1.0)));
}
