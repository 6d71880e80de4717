// portable_exp / portable_log against the C library (itself within one ulp): at most 2 ulp
// apart over the whole range, and the special values as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "clbo/kernels/portable_math.hpp"

using namespace clbo::kernels;

namespace {

// Distance in units in the last place between two finite doubles of the same sign.
int64_t ulps(double a, double b) {
  int64_t ia, ib;
  std::memcpy(&ia, &a, 8);
  std::memcpy(&ib, &b, 8);
  return ia > ib ? ia - ib : ib - ia;
}

}  // namespace

TEST(PortableMath, ExpWithinTwoUlp) {
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> wide(-740.0, 709.0), narrow(-30.0, 1.0);
  int64_t worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? wide(gen) : narrow(gen);
    const int64_t d = ulps(portable_exp(x), std::exp(x));
    worst = std::max(worst, d);
    ASSERT_LE(d, 2) << "x = " << x;
  }
  EXPECT_EQ(portable_exp(0.0), 1.0);
  EXPECT_EQ(portable_exp(-0.0), 1.0);
  RecordProperty("worst_ulp", static_cast<int>(worst));
}

TEST(PortableMath, ExpSpecialValues) {
  EXPECT_TRUE(std::isnan(portable_exp(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(portable_exp(-std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_EQ(portable_exp(-800.0), 0.0);
  EXPECT_EQ(portable_exp(710.0), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isinf(portable_exp(std::numeric_limits<double>::infinity())));
  // Subnormal results are still close to the library's.
  EXPECT_NEAR(portable_exp(-740.0), std::exp(-740.0), 1e-323);
}

TEST(PortableMath, LogWithinTwoUlp) {
  std::mt19937_64 gen(2);
  std::uniform_real_distribution<double> expo(-1000.0, 1000.0), near_one(0.5, 2.0);
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? std::exp2(expo(gen)) : near_one(gen);
    const double want = std::log(x);
    // Near 1 the result is tiny; compare with an absolute floor of one ulp of 1e-16.
    if (std::abs(want) < 1e-3) {
      ASSERT_NEAR(portable_log(x), want, 4e-16 * std::abs(want) + 1e-19) << "x = " << x;
    } else {
      ASSERT_LE(ulps(portable_log(x), want), 2) << "x = " << x;
    }
  }
  EXPECT_EQ(portable_log(1.0), 0.0);
  EXPECT_EQ(portable_log(2.0), std::log(2.0));
}

TEST(PortableMath, LogSpecialValues) {
  EXPECT_EQ(portable_log(0.0), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(portable_log(-0.0), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(portable_log(-1.0)));
  EXPECT_TRUE(std::isnan(portable_log(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(portable_log(std::numeric_limits<double>::infinity()),
            std::numeric_limits<double>::infinity());
  const double sub = std::numeric_limits<double>::denorm_min() * 12345;
  EXPECT_LE(ulps(portable_log(sub), std::log(sub)), 2);
}
