// Helpers for the GPU tests: skip with the reason when no device is usable, round-trip
// buffers, and poison outputs so a kernel that skips an element cannot pass by accident.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../kernels/kernel_test_util.hpp"
#include "clbo/core/error.hpp"
#include "clbo/cuda/runtime.hpp"

// Skips the current test, naming why the GPU is unusable.
#define CLBO_REQUIRE_CUDA_DEVICE()                                            \
  do {                                                                        \
    if (clbo::cuda::device_count() == 0)                                      \
      GTEST_SKIP() << "no CUDA device: " << clbo::cuda::unavailable_reason(); \
  } while (0)

namespace clbo::cuda::testing {

using kernels::testing::bitwise_equal;
using kernels::testing::random_bytes;
using kernels::testing::random_floats;

// Every byte 0xFF: as floats that is a NaN, as packed signs all ones.
constexpr int kPoison = 0xFF;

template <class T>
DeviceBuffer<T> to_device(const std::vector<T>& host) {
  DeviceBuffer<T> d;
  d.upload(host);
  return d;
}

// A device buffer of n elements, every byte poisoned.
template <class T>
DeviceBuffer<T> poisoned(size_t n) {
  DeviceBuffer<T> d(n);
  d.fill_bytes(kPoison);
  return d;
}

// Waits for the device and surfaces asynchronous kernel errors.
inline void sync() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

template <class T>
T download_one(const T* d) {
  T v{};
  check(cudaMemcpy(&v, d, sizeof(T), cudaMemcpyDeviceToHost), "download_one");
  return v;
}

inline ::testing::AssertionResult same_bytes(const std::vector<uint8_t>& a,
                                             const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return ::testing::AssertionFailure()
             << "first difference at byte " << i << ": " << int(a[i]) << " vs " << int(b[i]);
  return ::testing::AssertionSuccess();
}

// |a − b| ≤ rel·max(|a|, |b|), for the double sums whose reduction order differs.
inline ::testing::AssertionResult close(double a, double b, double rel) {
  const double scale = std::max(std::abs(a), std::abs(b));
  if (std::abs(a - b) <= rel * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b << " (relative tolerance " << rel << ")";
}

}  // namespace clbo::cuda::testing
