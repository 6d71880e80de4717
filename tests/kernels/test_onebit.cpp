#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "clbo/kernels/onebit.hpp"
#include "kernel_test_util.hpp"

namespace clbo::kernels {
namespace {

using testing::bit_msb;
using testing::bitwise_equal;
using testing::kOddSizes;
using testing::random_bytes;
using testing::random_floats;

TEST(OnebitPadding, DeepSpeedRule) {
  EXPECT_EQ(onebit_padded_size(13, 2), 16u);  // 2·lcm(2,8) = 16
  EXPECT_EQ(onebit_padded_size(0, 2), 0u);
  EXPECT_EQ(onebit_padded_size(0, 3), 0u);
  EXPECT_EQ(onebit_padded_size(1, 3), 72u);  // 3·lcm(3,8) = 72
  EXPECT_EQ(onebit_padded_size(72, 3), 72u);
  EXPECT_EQ(onebit_padded_size(73, 3), 144u);
  EXPECT_EQ(onebit_padded_size(9, 1), 16u);
  EXPECT_EQ(onebit_padded_size(100, 4), 128u);     // 4·8 = 32
  EXPECT_EQ(onebit_padded_size(100, 8), 128u);     // 8·8 = 64
  EXPECT_EQ(onebit_padded_size(100, 6), 144u);     // 6·24 = 144
  EXPECT_EQ(onebit_padded_size(1000, 16), 1024u);  // 16·16 = 256
  EXPECT_THROW(onebit_padded_size(10, 0), std::invalid_argument);
}

TEST(OnebitPadding, MultipleOfEightPAndMinimal) {
  for (int p = 1; p <= 33; ++p) {
    const size_t unit = static_cast<size_t>(p) * std::lcm(static_cast<size_t>(p), size_t{8});
    for (size_t n :
         {size_t{1}, size_t{7}, size_t{8}, size_t{1000}, size_t{12345}, unit, unit + 1}) {
      const size_t np = onebit_padded_size(n, p);
      EXPECT_EQ(np % (8 * static_cast<size_t>(p)), 0u) << n << " " << p;
      EXPECT_EQ(np % unit, 0u);
      EXPECT_GE(np, n);
      EXPECT_LT(np - n, unit);
    }
  }
}

TEST(Onebit, RmsScale) {
  EXPECT_EQ(rms_scale(0.0, 0), 0.0f);
  EXPECT_EQ(rms_scale(5.0, 0), 0.0f);
  EXPECT_EQ(rms_scale(16.0, 4), 2.0f);
  EXPECT_EQ(rms_scale(0.0, 8), 0.0f);
}

// Element 8k+j is bit 7−j of byte k; the sign test is b >= 0, so ±0.0 encode as 1.
TEST(Onebit, MsbFirstHandComputedByte) {
  const std::vector<float> x = {1.0f,  -1.0f, -1.0f, 2.0f,  0.0f,  -0.0f, -3.0f, 0.5f,
                                -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f, 1.0f};
  // signs: 1 0 0 1 1 1 0 1 -> 0b10011101 = 0x9D, then 0000 0001 -> 0x01
  for (int impl = 0; impl < 2; ++impl) {
    std::vector<float> err(16, 0.0f);
    uint8_t packed[2] = {0xAA, 0xAA};
    (impl ? ef_sign_pack : ref::ef_sign_pack)(x.data(), 16, err.data(), 16, 1.0f, packed);
    EXPECT_EQ(packed[0], 0x9D) << "impl " << impl;
    EXPECT_EQ(packed[1], 0x01) << "impl " << impl;
    float out[16];
    (impl ? unpack_scale : ref::unpack_scale)(packed, 16, 2.0f, out);
    EXPECT_EQ(out[0], 2.0f);
    EXPECT_EQ(out[1], -2.0f);
    EXPECT_EQ(out[5], 2.0f);  // −0.0 encoded as +1
    EXPECT_EQ(out[15], 2.0f);
  }
}

TEST(Onebit, EfSumsqRefVsOptimized) {
  for (size_t n : kOddSizes)
    for (size_t extra : {size_t{0}, size_t{1}, size_t{5}, size_t{64}}) {
      const size_t n_pad = n + extra;
      const auto x = random_floats(n, n * 31 + extra);
      const auto e = random_floats(n_pad, n * 17 + extra + 1, 0.1f);
      const double r = ref::ef_sumsq(x.data(), n, e.data(), n_pad);
      const double o = ef_sumsq(x.data(), n, e.data(), n_pad);
      EXPECT_NEAR(o, r, 1e-12 * r) << "n=" << n << " n_pad=" << n_pad;
      // And against a float64 recomputation of the definition.
      double d = 0.0;
      for (size_t i = 0; i < n_pad; ++i) {
        const float b = (i < n ? x[i] : 0.0f) + e[i];
        d += static_cast<double>(b) * b;
      }
      EXPECT_NEAR(r, d, 1e-12 * d);
    }
}

// Runs both implementations of the fused pass on copies of the same inputs.
struct PackResult {
  std::vector<float> err;
  std::vector<uint8_t> packed;
};
PackResult run_pack(bool optimized, const std::vector<float>& x, size_t n,
                    const std::vector<float>& err0, float scale) {
  PackResult r{err0, std::vector<uint8_t>(err0.size() / 8, 0x5A)};
  (optimized ? ef_sign_pack : ref::ef_sign_pack)(x.data(), n, r.err.data(), err0.size(), scale,
                                                 r.packed.data());
  return r;
}

TEST(Onebit, SignPackRefVsOptimizedBitIdentical) {
  for (size_t n : kOddSizes)
    for (size_t extra : {size_t{0}, size_t{3}, size_t{8}, size_t{61}}) {
      const size_t n_pad = (n + extra + 7) / 8 * 8;
      const auto x = random_floats(n, 1000 + n + extra);
      auto e = random_floats(n_pad, 2000 + n + extra, 0.3f);
      if (n_pad > 3) e[n_pad - 1] = -0.0f;  // a −0.0 error in the padding: 0.0f + −0.0 = +0.0
      const float s = rms_scale(ref::ef_sumsq(x.data(), n, e.data(), n_pad), n_pad);
      const auto r = run_pack(false, x, n, e, s);
      const auto o = run_pack(true, x, n, e, s);
      EXPECT_TRUE(bitwise_equal(r.err, o.err)) << "n=" << n << " n_pad=" << n_pad;
      EXPECT_EQ(r.packed, o.packed) << "n=" << n << " n_pad=" << n_pad;
    }
}

// e_new = b − s·sgn(b) elementwise, with b = x + e (x = 0 past n) and sgn from the bits.
TEST(Onebit, WorkerErrorFeedbackIdentity) {
  const size_t n = 1003, n_pad = onebit_padded_size(n, 4);
  const auto x = random_floats(n, 7);
  const auto e0 = random_floats(n_pad, 8, 0.2f);
  const float s = rms_scale(ef_sumsq(x.data(), n, e0.data(), n_pad), n_pad);
  ASSERT_GT(s, 0.0f);
  const auto o = run_pack(true, x, n, e0, s);
  for (size_t i = 0; i < n_pad; ++i) {
    const float b = (i < n ? x[i] : 0.0f) + e0[i];
    const bool bit = bit_msb(o.packed.data(), i);
    EXPECT_EQ(bit, b >= 0.0f) << i;
    const float sgn = bit ? 1.0f : -1.0f;
    EXPECT_EQ(o.err[i], b - s * sgn) << i;
    // Decoding plus the new error gives back b (up to one rounding).
    EXPECT_NEAR(sgn * s + o.err[i], b, 1e-6f * (std::fabs(b) + s)) << i;
  }
  // The scale is the RMS over the padded length, padding included.
  double sum = 0.0;
  for (size_t i = 0; i < n_pad; ++i) {
    const double b = (i < n ? x[i] : 0.0) + e0[i];
    sum += b * b;
  }
  EXPECT_NEAR(s, std::sqrt(sum / n_pad), 1e-6 * s);
}

TEST(Onebit, UnpackRefVsOptimizedAndRoundTrip) {
  for (size_t n : kOddSizes) {
    const auto bytes = random_bytes((n + 7) / 8, 40 + n);
    std::vector<float> r(n + 1, 7.0f), o(n + 1, 7.0f);
    ref::unpack_scale(bytes.data(), n, 0.75f, r.data());
    unpack_scale(bytes.data(), n, 0.75f, o.data());
    EXPECT_TRUE(bitwise_equal(r, o)) << "n=" << n;
    EXPECT_EQ(o[n], 7.0f) << "wrote past n";
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(o[i], bit_msb(bytes.data(), i) ? 0.75f : -0.75f);
  }
  // Pack then unpack: every output has the sign of b and magnitude s.
  const size_t n = 8 * 129;
  const auto x = random_floats(n, 99);
  std::vector<float> e(n, 0.0f), out(n);
  std::vector<uint8_t> packed(n / 8);
  ef_sign_pack(x.data(), n, e.data(), n, 0.5f, packed.data());
  unpack_scale(packed.data(), n, 0.5f, out.data());
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], x[i] >= 0.0f ? 0.5f : -0.5f) << i;
}

// Outputs past the streaming threshold take the non-temporal store path; an odd offset
// takes the unaligned one.
TEST(Onebit, UnpackLargeAndUnaligned) {
  const size_t n = (size_t{16} << 20) / sizeof(float) + 13;
  const auto bytes = random_bytes((n + 7) / 8, 5);
  std::vector<float> r(n + 1), o(n + 1);
  ref::unpack_scale(bytes.data(), n, -1.5f, r.data());
  unpack_scale(bytes.data(), n, -1.5f, o.data());
  EXPECT_TRUE(bitwise_equal(r, o));
  ref::unpack_scale(bytes.data(), n, 2.0f, r.data() + 1);
  unpack_scale(bytes.data(), n, 2.0f, o.data() + 1);
  EXPECT_TRUE(bitwise_equal(r, o));
}

struct ServerInputs {
  std::vector<std::vector<uint8_t>> pieces;
  std::vector<const uint8_t*> ptrs;
  std::vector<float> scales, err;
};
ServerInputs server_inputs(int p, size_t c, uint64_t seed) {
  ServerInputs in;
  for (int j = 0; j < p; ++j) {
    in.pieces.push_back(random_bytes(c / 8, seed + static_cast<uint64_t>(j)));
    in.scales.push_back(0.5f + 0.1f * static_cast<float>(j) + 0.01f * static_cast<float>(seed % 7));
  }
  for (auto& piece : in.pieces) in.ptrs.push_back(piece.data());
  in.err = random_floats(c, seed + 100, 0.2f);
  return in;
}

TEST(OnebitServer, RefVsOptimized) {
  for (int p : {1, 2, 3, 4, 5, 8, 16, 33})
    for (size_t c : {size_t{8}, size_t{64}, size_t{72}, size_t{8 * 125}, size_t{4096 + 8}}) {
      auto r = server_inputs(p, c, 10 * static_cast<uint64_t>(p) + c);
      auto o = r;
      std::vector<uint8_t> pr(c / 8), po(c / 8);
      const float sr =
          ref::server_step(r.ptrs.data(), r.scales.data(), p, r.err.data(), c, pr.data());
      const float so = server_step(o.ptrs.data(), o.scales.data(), p, o.err.data(), c, po.data());
      EXPECT_NEAR(so, sr, 1e-6 * sr) << "p=" << p << " c=" << c;
      EXPECT_EQ(pr, po) << "p=" << p << " c=" << c;
      if (so == sr) {
        EXPECT_TRUE(bitwise_equal(r.err, o.err)) << "p=" << p << " c=" << c;
      } else {  // the double sums rounded to neighbouring floats: errors differ by that much
        for (size_t i = 0; i < c; ++i) EXPECT_NEAR(r.err[i], o.err[i], 4 * std::fabs(so - sr));
      }
    }
}

// The server step against a straightforward float64 re-derivation of §2 step 3. Odd p and
// distinct worker scales keep a away from the exact ties that make sign() rounding-dependent.
TEST(OnebitServer, MatchesFloat64Derivation) {
  for (int p : {1, 3, 5, 7})
    for (size_t c : {size_t{8}, size_t{1000}, size_t{4096}}) {
      auto in = server_inputs(p, c, 77 + static_cast<uint64_t>(p));
      const std::vector<float> e0 = in.err;
      std::vector<uint8_t> packed(c / 8);
      const float s =
          server_step(in.ptrs.data(), in.scales.data(), p, in.err.data(), c, packed.data());
      std::vector<double> a(c);
      double sumsq = 0.0;
      for (size_t i = 0; i < c; ++i) {
        double votes = 0.0;
        for (int j = 0; j < p; ++j) votes += (bit_msb(in.ptrs[j], i) ? 1.0 : -1.0) * in.scales[j];
        a[i] = votes / p + e0[i];
        sumsq += a[i] * a[i];
      }
      const double s64 = std::sqrt(sumsq / static_cast<double>(c));
      EXPECT_NEAR(s, s64, 1e-6 * s64) << "p=" << p << " c=" << c;
      for (size_t i = 0; i < c; ++i) {
        if (std::fabs(a[i]) > 1e-5) {
          EXPECT_EQ(bit_msb(packed.data(), i), a[i] >= 0.0) << i;
        }
        const double sgn = bit_msb(packed.data(), i) ? 1.0 : -1.0;
        EXPECT_NEAR(in.err[i], a[i] - s64 * sgn, 1e-5) << i;
      }
    }
}

// All votes cancel (p = 2, equal scales, opposite bits) and e = −0.0 / +0.0: a is ±0, s = 0,
// and e ← a − s keeps a's zero sign in both implementations.
TEST(OnebitServer, ExactCancellationZeros) {
  const size_t c = 16;
  std::vector<uint8_t> p0(c / 8, 0xF0), p1(c / 8, 0x0F);
  const uint8_t* ptrs[2] = {p0.data(), p1.data()};
  const float scales[2] = {1.0f, 1.0f};
  for (int impl = 0; impl < 2; ++impl) {
    std::vector<float> err(c);
    for (size_t i = 0; i < c; ++i) err[i] = i % 2 ? -0.0f : 0.0f;
    std::vector<uint8_t> out(c / 8);
    const float s =
        (impl ? server_step : ref::server_step)(ptrs, scales, 2, err.data(), c, out.data());
    EXPECT_EQ(s, 0.0f);
    for (size_t i = 0; i < c; ++i) {
      EXPECT_EQ(err[i], 0.0f);
      // votes = 0.0f + 1 − 1 = +0.0; +0.0·0.5 + (−0.0) = +0.0, so every a is +0.0 here
      EXPECT_FALSE(std::signbit(err[i])) << "impl " << impl << " i " << i;
    }
    EXPECT_EQ(out[0], 0xFF);  // a >= 0 everywhere
  }
}

}  // namespace
}  // namespace clbo::kernels
