// The host-side parts of the CUDA library, which run with or without a GPU: device
// detection that explains itself, errors instead of crashes. (1-bit LAMB's factor is CPU code
// now, tested in tests/kernels/test_lamb_factor.cpp.)
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/cuda/runtime.hpp"
#include "cuda_test_util.hpp"

namespace clbo::cuda {
namespace {

TEST(CudaRuntime, NoDeviceAlwaysComesWithAReason) {
  const int n = device_count();
  const std::string why = unavailable_reason();
  if (n == 0) {
    EXPECT_FALSE(why.empty());
    EXPECT_NE(why.find("cudaGetDeviceCount"), std::string::npos) << why;
  } else {
    EXPECT_TRUE(why.empty()) << why;
    EXPECT_FALSE(device_description(0).empty());
  }
}

TEST(CudaRuntime, AllocationWithoutDeviceIsAClearError) {
  if (device_count() > 0) {
    DeviceBuffer<float> b(16);
    EXPECT_EQ(b.size(), 16u);
    EXPECT_NE(b.data(), nullptr);
    return;
  }
  try {
    DeviceBuffer<float> b(16);
    FAIL() << "allocating without a device should throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
}

// The NCCL communicator works on a non-blocking stream, which is not ordered after the legacy
// default stream that upload and fill_bytes use. So both must be complete on return: a copy
// on a non-blocking stream issued right after them must see every byte. The race this guards
// against showed as the last staged chunk of a 512 KiB upload still in flight when a p = 1
// ncclAllReduce read it, so the sizes are those few hundred KiB, the rounds many and the
// contents change every round.
TEST(CudaRuntime, UploadAndFillAreCompleteForANonBlockingStream) {
  CLBO_REQUIRE_CUDA_DEVICE();
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  auto copy_and_read = [&](DeviceBuffer<uint8_t>& src, DeviceBuffer<uint8_t>& dst) {
    check(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, stream),
          "copy on the non-blocking stream");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return dst.download();
  };
  for (size_t bytes : {size_t{256} << 10, size_t{512} << 10, size_t{1} << 20}) {
    DeviceBuffer<uint8_t> src(bytes), dst(bytes);
    std::vector<uint8_t> pattern(bytes);
    for (int round = 0; round < 300; ++round) {
      for (size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<uint8_t>(i * 31 + round + 1);
      src.fill_bytes(0);
      src.upload(pattern);
      ASSERT_TRUE(testing::same_bytes(copy_and_read(src, dst), pattern))
          << bytes << " bytes, round " << round << ", upload";
      const auto value = static_cast<uint8_t>(round % 255 + 1);
      src.fill_bytes(value);
      ASSERT_TRUE(testing::same_bytes(copy_and_read(src, dst), std::vector<uint8_t>(bytes, value)))
          << bytes << " bytes, round " << round << ", fill_bytes";
    }
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace clbo::cuda
