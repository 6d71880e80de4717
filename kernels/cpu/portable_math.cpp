// portable_math.hpp: Cody–Waite reduction and fixed-degree polynomials, evaluated in a fixed
// order (this library builds with -ffp-contract=off, so no multiply-add is fused).
#include "clbo/kernels/portable_math.hpp"

#include <cmath>
#include <limits>

namespace clbo::kernels {

namespace {

// ln 2 split so that k·kLn2Hi is exact for |k| < 2^21 (the high part has 32 significant bits).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;

}  // namespace

double portable_exp(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
  if (x < -745.2) return 0.0;
  // x = k·ln2 + r with |r| ≤ ln2/2; e^x = 2^k · e^r.
  const double k = std::nearbyint(x * 1.4426950408889634);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  // Taylor series of e^r to degree 13 (truncation below 4e-18 relative), Horner from the top.
  double p = 1.0 / 6227020800.0;  // 1/13!
  constexpr double kInvFact[] = {1.0 / 479001600.0,
                                 1.0 / 39916800.0,
                                 1.0 / 3628800.0,
                                 1.0 / 362880.0,
                                 1.0 / 40320.0,
                                 1.0 / 5040.0,
                                 1.0 / 720.0,
                                 1.0 / 120.0,
                                 1.0 / 24.0,
                                 1.0 / 6.0,
                                 0.5,
                                 1.0,
                                 1.0};
  for (double c : kInvFact) p = p * r + c;
  // Scaling by a power of two is exact (one rounding where the result is subnormal).
  return std::ldexp(p, static_cast<int>(k));
}

double portable_log(double x) {
  if (std::isnan(x) || x < 0.0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  // x = m·2^e with m in [√½, √2); frexp is exact, subnormals included.
  int e = 0;
  double m = std::frexp(x, &e);
  if (m < 0.70710678118654752440) {
    m = m * 2.0;
    e = e - 1;
  }
  // With f = m − 1 (exact, Sterbenz) and s = f/(2+f), |s| ≤ 0.1716: ln m = 2·atanh(s) =
  // f − f²/2 + s·(f²/2 + R), R = Σ_{k=1..11} 2·s^{2k}/(2k+1) (fdlibm's arrangement: the
  // large term f is exact, so the result stays within one ulp).
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double s2 = s * s;
  double r = 0.0;
  for (int k = 11; k >= 1; --k) r = r * s2 + 2.0 / (2 * k + 1);
  r = r * s2;
  const double hfsq = 0.5 * f * f;
  const double ln_m = f - (hfsq - s * (hfsq + r));
  const double de = static_cast<double>(e);
  return de * kLn2Hi + (de * kLn2Lo + ln_m);
}

}  // namespace clbo::kernels
