// GPU mask, compaction and fp16 kernels against the CPU reference, outputs poisoned.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "clbo/cuda/mask.hpp"
#include "clbo/kernels/half.hpp"
#include "clbo/kernels/mask.hpp"
#include "cuda_test_util.hpp"

namespace clbo::cuda {
namespace {

using namespace testing;

struct MaskCase {
  uint64_t seed;
  uint32_t t;
  double k;
  size_t begin, n;
};

// Unaligned begins (Philox words straddle threads), begins past 2^32 (the counter's high
// word), partial bytes and partial tiles, and the k = 0 / k = 1 edges.
const std::vector<MaskCase> kMasks = {{0, 1, 0.1, 0, 1},
                                      {0, 1, 0.1, 0, 4096},
                                      {7, 3, 0.5, 3, 1001},
                                      {7, 3, 0.01, 5, 70001},
                                      {1ull << 40, 9, 0.3, (1ull << 33) + 1, 12347},
                                      {123, 100, 1.0, 2, 5000},
                                      {123, 100, 0.0, 0, 5000},
                                      {42, 0, 0.25, 4, 3 * 4096 + 17}};

std::vector<uint8_t> cpu_mask(const MaskCase& c) {
  std::vector<uint8_t> bits((c.n + 7) / 8);
  kernels::ref::random_mask(c.seed, c.t, c.k, c.begin, c.n, bits.data());
  return bits;
}

TEST(CudaMask, RandomMaskBitIdentical) {
  CLBO_REQUIRE_CUDA_DEVICE();
  for (const auto& c : kMasks) {
    auto dbits = poisoned<uint8_t>((c.n + 7) / 8);
    random_mask(c.seed, c.t, c.k, c.begin, c.n, dbits.data());
    sync();
    EXPECT_TRUE(same_bytes(dbits.download(), cpu_mask(c))) << "begin " << c.begin << " n " << c.n;
  }
}

TEST(CudaMask, CountCompactScatterMatchReference) {
  CLBO_REQUIRE_CUDA_DEVICE();
  Workspace ws;
  uint64_t seed = 60;
  for (const auto& c : kMasks) {
    auto bits = cpu_mask(c);
    // Garbage past n in the last byte must be ignored.
    if (c.n % 8 != 0) bits.back() |= static_cast<uint8_t>(0xffu >> (c.n % 8));
    const auto src = random_floats(c.n, ++seed);
    std::vector<float> want(c.n);
    const size_t count = kernels::ref::compact(src.data(), bits.data(), c.n, want.data());
    want.resize(count);
    auto dbits = to_device(bits);
    auto dsrc = to_device(src);
    EXPECT_EQ(mask_count(dbits.data(), c.n, ws), count);
    auto ddst = poisoned<float>(count + 1);
    EXPECT_EQ(compact(dsrc.data(), dbits.data(), c.n, ddst.data(), ws), count);
    auto got = ddst.download();
    const uint32_t guard = 0xffffffffu;
    EXPECT_EQ(std::memcmp(&got[count], &guard, 4), 0) << "wrote past the count";
    got.resize(count);
    EXPECT_TRUE(bitwise_equal(got, want)) << "n " << c.n;

    // Scatter the compacted values back over a poisoned-free background.
    auto background = random_floats(c.n, ++seed);
    auto dback = to_device(background);
    auto dcompact = to_device(want);
    scatter(dcompact.data(), dbits.data(), c.n, dback.data(), ws);
    sync();
    kernels::ref::scatter(want.data(), bits.data(), c.n, background.data());
    EXPECT_TRUE(bitwise_equal(dback.download(), background)) << "n " << c.n;
  }
}

TEST(CudaMask, FusedMaskCompactMatchesReference) {
  CLBO_REQUIRE_CUDA_DEVICE();
  Workspace ws;
  uint64_t seed = 70;
  for (const auto& c : kMasks) {
    const auto bits = cpu_mask(c);
    const auto src = random_floats(c.n, ++seed);
    std::vector<float> want(c.n);
    want.resize(kernels::ref::compact(src.data(), bits.data(), c.n, want.data()));
    auto dsrc = to_device(src);
    auto dbits = poisoned<uint8_t>(bits.size());
    auto ddst = poisoned<float>(std::max<size_t>(1, want.size()));
    const size_t count =
        mask_compact(c.seed, c.t, c.k, c.begin, c.n, dsrc.data(), dbits.data(), ddst.data(), ws);
    ASSERT_EQ(count, want.size()) << "n " << c.n;
    EXPECT_TRUE(same_bytes(dbits.download(), bits)) << "n " << c.n;
    auto got = ddst.download();
    got.resize(count);
    EXPECT_TRUE(bitwise_equal(got, want)) << "n " << c.n;
  }
}

TEST(CudaMask, RejectsKeepFractionOutsideUnitInterval) {
  CLBO_REQUIRE_CUDA_DEVICE();
  EXPECT_THROW(random_mask(0, 0, 1.5, 0, 8, nullptr), Error);
  EXPECT_THROW(random_mask(0, 0, std::nan(""), 0, 8, nullptr), Error);
}

TEST(CudaHalf, ConversionsMatchCpu) {
  CLBO_REQUIRE_CUDA_DEVICE();
  auto src = random_floats(100000, 80, 1000.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float special : {65504.0f, 65520.0f, 65519.99f, 6.0e-8f, 2.9e-8f, 3.0e-8f, 1e-10f, -1e-10f,
                        inf, -inf, 1e30f, -0.0f})
    src.push_back(special);
  const size_t n = src.size();
  auto dsrc = to_device(src);
  auto dh = poisoned<uint16_t>(n);
  f32_to_f16(dsrc.data(), n, dh.data());
  sync();
  std::vector<uint16_t> want(n);
  kernels::f32_to_f16(src.data(), n, want.data());
  const auto got = dh.download();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "element " << i << " = " << src[i];

  // Every binary16 pattern back to fp32; NaNs only need to stay NaN.
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  auto dall = to_device(all);
  auto df = poisoned<float>(all.size());
  f16_to_f32(dall.data(), all.size(), df.data());
  sync();
  std::vector<float> wantf(all.size());
  kernels::f16_to_f32(all.data(), all.size(), wantf.data());
  const auto gotf = df.download();
  for (size_t i = 0; i < all.size(); ++i) {
    if (std::isnan(wantf[i]))
      EXPECT_TRUE(std::isnan(gotf[i])) << "pattern " << i;
    else
      EXPECT_EQ(std::memcmp(&gotf[i], &wantf[i], 4), 0) << "pattern " << i;
  }
}

}  // namespace
}  // namespace clbo::cuda
