// GPU 1-bit kernels against the CPU reference: packed bits and error buffers bit-identical,
// scales and sums within rounding of the reduction order, on fresh random data with every
// output poisoned before each run.
#include <gtest/gtest.h>

#include <vector>

#include "clbo/cuda/onebit.hpp"
#include "clbo/kernels/onebit.hpp"
#include "cuda_test_util.hpp"

namespace clbo::cuda {
namespace {

using namespace testing;

// (n, p) pairs covering: a single element, partial bytes, partial 128-element warp tiles,
// several grid-stride rounds, and p that makes n' a multiple of 8p but not of 128.
const std::vector<std::pair<size_t, int>> kCases = {
    {1, 1}, {7, 1}, {8, 1}, {9, 3}, {127, 2}, {1000, 3}, {4099, 5}, {100003, 4}, {3000001, 3}};

TEST(CudaOnebit, EfSumsqMatchesReference) {
  CLBO_REQUIRE_CUDA_DEVICE();
  Workspace ws;
  uint64_t seed = 100;
  for (auto [n, p] : kCases) {
    const size_t n_pad = clbo::onebit_padded_size(n, p);
    const auto x = random_floats(n, ++seed), e = random_floats(n_pad, ++seed, 0.1f);
    auto dx = to_device(x), de = to_device(e);
    auto dsum = poisoned<double>(1);
    ef_sumsq(dx.data(), n, de.data(), n_pad, dsum.data(), ws);
    sync();
    EXPECT_TRUE(close(download_one(dsum.data()),
                      kernels::ref::ef_sumsq(x.data(), n, e.data(), n_pad), 1e-12))
        << "n=" << n;
  }
}

TEST(CudaOnebit, EfSignPackBitIdentical) {
  CLBO_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 200;
  for (auto [n, p] : kCases) {
    const size_t n_pad = clbo::onebit_padded_size(n, p);
    const auto x = random_floats(n, ++seed);
    auto e = random_floats(n_pad, ++seed, 0.1f);
    const float scale = 0.75f;
    auto dx = to_device(x), de = to_device(e);
    auto dpacked = poisoned<uint8_t>(n_pad / 8);
    ef_sign_pack(dx.data(), n, de.data(), n_pad, scale, dpacked.data());
    sync();
    std::vector<uint8_t> packed(n_pad / 8);
    kernels::ref::ef_sign_pack(x.data(), n, e.data(), n_pad, scale, packed.data());
    EXPECT_TRUE(same_bytes(dpacked.download(), packed)) << "n=" << n;
    EXPECT_TRUE(bitwise_equal(de.download(), e)) << "n=" << n;
  }
}

// The fused two-kernel compression: its device scale equals the reference's, and given that
// scale the reference reproduces its bytes and error buffer exactly. Three consecutive
// calls so the error feedback carries over.
TEST(CudaOnebit, FusedCompressMatchesReference) {
  CLBO_REQUIRE_CUDA_DEVICE();
  Workspace ws;
  uint64_t seed = 300;
  for (auto [n, p] : kCases) {
    const size_t n_pad = clbo::onebit_padded_size(n, p);
    std::vector<float> e(n_pad, 0.0f);
    auto de = to_device(e);
    for (int step = 0; step < 3; ++step) {
      const auto x = random_floats(n, ++seed);
      auto dx = to_device(x);
      auto dpacked = poisoned<uint8_t>(n_pad / 8);
      auto dscale = poisoned<float>(1);
      onebit_compress(dx.data(), n, de.data(), n_pad, dpacked.data(), dscale.data(), ws);
      sync();
      const float gpu_scale = download_one(dscale.data());
      const float cpu_scale =
          kernels::rms_scale(kernels::ref::ef_sumsq(x.data(), n, e.data(), n_pad), n_pad);
      EXPECT_TRUE(close(gpu_scale, cpu_scale, 1e-6)) << "n=" << n << " step " << step;
      std::vector<uint8_t> packed(n_pad / 8);
      kernels::ref::ef_sign_pack(x.data(), n, e.data(), n_pad, gpu_scale, packed.data());
      EXPECT_TRUE(same_bytes(dpacked.download(), packed)) << "n=" << n << " step " << step;
      EXPECT_TRUE(bitwise_equal(de.download(), e)) << "n=" << n << " step " << step;
    }
  }
}

TEST(CudaOnebit, UnpackScaleBitIdenticalAlignedAndNot) {
  CLBO_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 400;
  // 1003: the tail alone; 3000: whole 1024-element tiles and a tail; 2^20: tiles alone.
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{13}, size_t{1003}, size_t{3000},
                   size_t{1u << 20}}) {
    const auto packed = random_bytes((n + 7) / 8, ++seed);
    std::vector<float> want(n);
    kernels::ref::unpack_scale(packed.data(), n, 0.3f, want.data());
    auto dp = to_device(packed);
    // Offset 1 makes the output misaligned for float4 stores (the scalar path).
    for (size_t offset : {size_t{0}, size_t{1}}) {
      auto dout = poisoned<float>(n + offset);
      unpack_scale(dp.data(), n, 0.3f, dout.data() + offset);
      sync();
      auto got = dout.download();
      got.erase(got.begin(), got.begin() + static_cast<long>(offset));
      EXPECT_TRUE(bitwise_equal(got, want)) << "n=" << n << " offset " << offset;
    }
  }
}

TEST(CudaOnebit, UnpackChunksUsesEachChunksScale) {
  CLBO_REQUIRE_CUDA_DEVICE();
  const int p = 3;
  // 1000: chunks shorter than the kernel's 1024-element tile (a division per quad); 1024:
  // exactly a tile; 1032 and 4104: longer ones, whose boundaries fall inside a tile (one
  // division per tile). Each also with the output misaligned for float4 stores.
  for (size_t c : {size_t{1000}, size_t{1024}, size_t{1032}, size_t{4104}}) {
    const size_t n = 2 * c + 517;  // the last chunk is truncated, as in §2 step 5
    const auto packed = random_bytes(p * c / 8, 7 + c);
    const std::vector<float> scales = {0.5f, 1.25f, 3.0f};
    std::vector<float> want(n);
    for (int j = 0; j < p; ++j) {
      const size_t begin = j * c, len = std::min(c, n - begin);
      kernels::ref::unpack_scale(packed.data() + j * c / 8, len, scales[j], want.data() + begin);
    }
    auto dp = to_device(packed);
    auto ds = to_device(scales);
    for (size_t offset : {size_t{0}, size_t{1}}) {
      auto dout = poisoned<float>(n + offset);
      unpack_scale_chunks(dp.data(), n, c, ds.data(), dout.data() + offset);
      sync();
      auto got = dout.download();
      got.erase(got.begin(), got.begin() + static_cast<long>(offset));
      EXPECT_TRUE(bitwise_equal(got, want)) << "chunk " << c << " offset " << offset;
    }
  }
}

TEST(CudaOnebit, ServerStepMatchesReference) {
  CLBO_REQUIRE_CUDA_DEVICE();
  Workspace ws;
  uint64_t seed = 500;
  for (int p : {1, 2, 3, 5, 8}) {
    for (size_t c : {size_t{8}, size_t{136}, size_t{4096}, size_t{250008}}) {
      const auto pieces = random_bytes(p * c / 8, ++seed);
      std::vector<float> scales(p);
      for (int j = 0; j < p; ++j) scales[j] = 0.1f + 0.37f * static_cast<float>(j);
      auto e = random_floats(c, ++seed, 0.05f);
      auto dpieces = to_device(pieces);
      auto dscales = to_device(scales);
      auto de = to_device(e);
      auto dout = poisoned<uint8_t>(c / 8);
      auto dscale = poisoned<float>(1);
      server_step(dpieces.data(), dscales.data(), p, de.data(), c, dout.data(), dscale.data(), ws);
      sync();
      std::vector<const uint8_t*> ptrs(p);
      for (int j = 0; j < p; ++j) ptrs[j] = pieces.data() + j * c / 8;
      std::vector<uint8_t> out(c / 8);
      const float s =
          kernels::ref::server_step(ptrs.data(), scales.data(), p, e.data(), c, out.data());
      const float gpu_s = download_one(dscale.data());
      ASSERT_TRUE(close(gpu_s, s, 1e-6)) << "p=" << p << " c=" << c;
      EXPECT_TRUE(same_bytes(dout.download(), out)) << "p=" << p << " c=" << c;
      if (gpu_s == s) {
        EXPECT_TRUE(bitwise_equal(de.download(), e)) << "p=" << p << " c=" << c;
      }
    }
  }
}

TEST(CudaOnebit, RejectsLengthsThatAreNotWholeBytes) {
  CLBO_REQUIRE_CUDA_DEVICE();
  Workspace ws;
  EXPECT_THROW(ef_sign_pack(nullptr, 0, nullptr, 12, 1.0f, nullptr), Error);
  EXPECT_THROW(server_step(nullptr, nullptr, 2, nullptr, 20, nullptr, nullptr, ws), Error);
  EXPECT_THROW(unpack_scale_chunks(nullptr, 16, 12, nullptr, nullptr), Error);
}

}  // namespace
}  // namespace clbo::cuda
