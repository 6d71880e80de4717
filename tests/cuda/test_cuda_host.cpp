// The host-side parts of the CUDA library, which run with or without a GPU: device
// detection that explains itself, errors instead of crashes. (1-bit LAMB's factor is CPU code
// now, tested in tests/kernels/test_lamb_factor.cpp.)
#include <gtest/gtest.h>

#include <string>

#include "clbo/core/error.hpp"
#include "clbo/cuda/runtime.hpp"

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

}  // namespace
}  // namespace clbo::cuda
