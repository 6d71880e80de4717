#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "clbo/kernels/mask.hpp"
#include "kernel_test_util.hpp"

namespace clbo::kernels {
namespace {

using testing::bit_msb;
using testing::bitwise_equal;
using testing::kOddSizes;
using testing::random_floats;

// Recomputes §7b from the Philox primitive alone, without mask_keep.
bool keep_independent(uint64_t seed, uint32_t t, double k, uint64_t i) {
  const uint64_t q = i / 4;
  const Philox4x32 r =
      philox4x32_10(static_cast<uint32_t>(q & 0xFFFFFFFFu), static_cast<uint32_t>(q >> 32), t, 0,
                    static_cast<uint32_t>(seed & 0xFFFFFFFFu), static_cast<uint32_t>(seed >> 32));
  const double threshold = k >= 1.0 ? 4294967296.0 : std::floor(k * 4294967296.0);
  return static_cast<double>(r.v[i % 4]) < threshold;
}

TEST(Mask, KeepMatchesIndependentRecomputation) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{12345}, (uint64_t{1} << 40) + 3})
    for (double k : {0.0, 0.1, 0.5, 0.999, 1.0})
      for (uint64_t i : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{4}, uint64_t{1001},
                         (uint64_t{1} << 34) + 5})
        EXPECT_EQ(mask_keep(seed, 9, mask_threshold(k), i), keep_independent(seed, 9, k, i))
            << seed << " " << k << " " << i;
}

// Runs `body` once per Philox code path this CPU supports, then restores the default.
template <typename Body>
void for_each_mask_path(Body body) {
  using detail::MaskPath;
  for (MaskPath path : {MaskPath::kScalar, MaskPath::kSse2, MaskPath::kAvx2, MaskPath::kAuto}) {
    if (!detail::set_mask_path(path)) continue;
    SCOPED_TRACE("mask path " + std::to_string(static_cast<int>(path)));
    body();
  }
  detail::set_mask_path(MaskPath::kAuto);
}

// Known answers from an independent Python Philox4x32-10 (which reproduces Random123's KAT
// 0,0,0,0 / 0,0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8): the first 32 mask bits.
TEST(Mask, KnownAnswers) {
  struct Kat {
    uint64_t seed;
    uint32_t t;
    double k;
    size_t begin;
    uint8_t bytes[4];
  };
  const Kat kats[] = {
      {0, 1, 0.1, 0, {0x20, 0x00, 0x00, 0xAA}},
      {12345, 7, 0.5, 0, {0x31, 0xC7, 0xB6, 0x1A}},
      {12345, 7, 0.5, 5, {0x38, 0xF6, 0xC3, 0x53}},
      {(uint64_t{1} << 40) + 3, 3, 0.25, (size_t{1} << 36) + 1, {0x50, 0x23, 0x30, 0x82}},
      {99, 4000000000u, 0.9, (size_t{1} << 34) - 3, {0xFF, 0xFF, 0xFF, 0xEF}},  // q crosses 2^32
  };
  for_each_mask_path([&] {
    for (const auto& kat : kats)
      for (int impl = 0; impl < 2; ++impl) {
        uint8_t bits[4];
        (impl ? random_mask : ref::random_mask)(kat.seed, kat.t, kat.k, kat.begin, 32, bits);
        for (int b = 0; b < 4; ++b)
          EXPECT_EQ(bits[b], kat.bytes[b])
              << "seed " << kat.seed << " byte " << b << " impl " << impl;
      }
  });
}

TEST(Mask, RefVsOptimizedAtOddOffsetsAndSizes) {
  for_each_mask_path([] {
    for (size_t begin : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{8},
                         size_t{13}, size_t{1000}, (size_t{1} << 34) - 3})
      for (size_t n : kOddSizes)
        for (double k : {0.0, 0.05, 0.1, 0.5, 1.0}) {
          const size_t nb = (n + 7) / 8;
          std::vector<uint8_t> r(nb + 1, 0xA5), o(nb + 1, 0xA5);
          ref::random_mask(77, 3, k, begin, n, r.data());
          random_mask(77, 3, k, begin, n, o.data());
          EXPECT_EQ(r, o) << "begin=" << begin << " n=" << n << " k=" << k;
          EXPECT_EQ(o[nb], 0xA5) << "wrote past ceil(n/8)";
          if (n % 8) {
            EXPECT_EQ(o[nb - 1] & (0xFFu >> (n % 8)), 0u) << "trailing bits not zero";
          }
          for (size_t j = 0; j < n; ++j)
            ASSERT_EQ(bit_msb(o.data(), j), keep_independent(77, 3, k, begin + j)) << j;
        }
  });
}

TEST(Mask, SubrangesAgreeWithWholeMask) {
  // A rank drawing only its slice sees the same bits as the full mask.
  const size_t n = 4000;
  std::vector<uint8_t> whole(n / 8);
  random_mask(5, 11, 0.3, 0, n, whole.data());
  for (size_t begin : {size_t{1}, size_t{6}, size_t{999}}) {
    std::vector<uint8_t> part((n - begin + 7) / 8);
    random_mask(5, 11, 0.3, begin, n - begin, part.data());
    for (size_t j = 0; j < n - begin; ++j)
      ASSERT_EQ(bit_msb(part.data(), j), bit_msb(whole.data(), begin + j)) << begin << " " << j;
  }
}

TEST(Mask, FractionKeptIsK) {
  const size_t n = size_t{1} << 20;
  std::vector<uint8_t> bits(n / 8);
  for (double k : {0.01, 0.1, 0.5, 0.9}) {
    random_mask(0, 1, k, 0, n, bits.data());
    const double frac = static_cast<double>(mask_count(bits.data(), n)) / n;
    // The standard deviation is at most 0.0005 here; 0.005 is a 10-sigma bound.
    EXPECT_NEAR(frac, k, 0.005) << k;
  }
}

TEST(Mask, EdgesKZeroAndOne) {
  for (size_t n : kOddSizes) {
    const size_t nb = (n + 7) / 8;
    std::vector<uint8_t> bits(nb + 1, 0x33);
    random_mask(1, 1, 0.0, 3, n, bits.data());
    EXPECT_EQ(mask_count(bits.data(), n), 0u);
    for (size_t j = 0; j < nb; ++j) EXPECT_EQ(bits[j], 0u);
    random_mask(1, 1, 1.0, 3, n, bits.data());
    EXPECT_EQ(mask_count(bits.data(), n), n);
    if (n % 8) {
      EXPECT_EQ(bits[nb - 1] & (0xFFu >> (n % 8)), 0u);
    }
    EXPECT_EQ(bits[nb], 0x33);
  }
  uint8_t b[1];
  EXPECT_THROW(random_mask(0, 1, -0.1, 0, 8, b), std::invalid_argument);
  EXPECT_THROW(random_mask(0, 1, 1.5, 0, 8, b), std::invalid_argument);
  EXPECT_THROW(random_mask(0, 1, std::nan(""), 0, 8, b), std::invalid_argument);
  EXPECT_THROW(ref::random_mask(0, 1, 2.0, 0, 8, b), std::invalid_argument);
}

TEST(Mask, SetRangeAndCount) {
  const size_t n = 100;
  for (size_t lo : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{13}, size_t{64}})
    for (size_t hi :
         {size_t{0}, size_t{3}, size_t{8}, size_t{9}, size_t{16}, size_t{70}, size_t{100}}) {
      std::vector<uint8_t> bits(n / 8 + 1, 0);
      bits[0] = 0x01;  // an already-set bit (element 7) must survive
      mask_set_range(bits.data(), lo, hi);
      size_t expect = 0;
      for (size_t i = 0; i < n; ++i) {
        const bool want = (i >= lo && i < hi) || i == 7;
        EXPECT_EQ(bit_msb(bits.data(), i), want) << lo << " " << hi << " " << i;
        expect += want;
      }
      EXPECT_EQ(mask_count(bits.data(), n), expect);
      for (size_t m : {size_t{0}, size_t{5}, size_t{8}, size_t{65}, size_t{99}}) {
        size_t c = 0;
        for (size_t i = 0; i < m; ++i) c += bit_msb(bits.data(), i);
        EXPECT_EQ(mask_count(bits.data(), m), c);
      }
    }
}

TEST(Mask, CompactScatterRefVsOptimizedAndRoundTrip) {
  for_each_mask_path([] {
    for (size_t n : kOddSizes)
      for (double k : {0.0, 0.1, 0.5, 0.9, 1.0}) {
        const auto x = random_floats(n, n + 3);
        std::vector<uint8_t> bits((n + 7) / 8 + 1);
        random_mask(9, 2, k, 1, n, bits.data());
        const size_t kept = mask_count(bits.data(), n);
        // Exactly sized buffers, so a sanitizer build catches any access past the kept count;
        // the sentinels catch it in the others.
        std::vector<float> cr(kept), co(kept), slack(kept + 8, 9.0f);
        EXPECT_EQ(ref::compact(x.data(), bits.data(), n, cr.data()), kept);
        EXPECT_EQ(compact(x.data(), bits.data(), n, co.data()), kept);
        EXPECT_TRUE(bitwise_equal(cr, co)) << n << " " << k;
        EXPECT_EQ(compact(x.data(), bits.data(), n, slack.data()), kept);
        for (size_t j = kept; j < kept + 8; ++j) EXPECT_EQ(slack[j], 9.0f) << "wrote past kept";
        // Scatter back onto a sentinel-filled buffer: kept slots get x back, others untouched.
        std::vector<float> sr(n, -7.0f), so(n, -7.0f);
        ref::scatter(co.data(), bits.data(), n, sr.data());
        scatter(co.data(), bits.data(), n, so.data());
        EXPECT_TRUE(bitwise_equal(sr, so));
        for (size_t i = 0; i < n; ++i) {
          const float want = bit_msb(bits.data(), i) ? x[i] : -7.0f;
          EXPECT_EQ(std::memcmp(&so[i], &want, sizeof(float)), 0) << i;
        }
      }
  });
}

TEST(Mask, CompactFullAndEmptyBytes) {
  const size_t n = 40;
  const auto x = random_floats(n, 1);
  const std::vector<uint8_t> bits = {0xFF, 0x00, 0x81, 0xFF, 0x7E};
  std::vector<float> out(mask_count(bits.data(), n));
  ASSERT_EQ(out.size(), 8u + 0 + 2 + 8 + 6);
  ASSERT_EQ(compact(x.data(), bits.data(), n, out.data()), out.size());
  std::vector<size_t> want_idx;
  for (size_t i = 0; i < n; ++i)
    if (bit_msb(bits.data(), i)) want_idx.push_back(i);
  for (size_t j = 0; j < out.size(); ++j) EXPECT_EQ(std::memcmp(&out[j], &x[want_idx[j]], 4), 0);
}

}  // namespace
}  // namespace clbo::kernels
