// The host-side parts of the CUDA library, which run with or without a GPU: device
// detection that explains itself, errors instead of crashes, and 1-bit LAMB's scalar factor.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/cuda/optim.hpp"
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

// terms = {max ratio, Σu_pre², Σu²}
TEST(OnebitLambFactor, FollowsAlgorithmsSection4) {
  // No weight decay: the max ratio, clamped to [min, max] and to last·(1 ± threshold).
  const double t1[3] = {1.05, 4.0, 9.0};
  EXPECT_FLOAT_EQ(onebit_lamb_factor(t1, 0.0f, 1.0f, 0.5f, 4.0f, 0.1f), 1.05f);
  const double t2[3] = {3.0, 4.0, 9.0};
  EXPECT_FLOAT_EQ(onebit_lamb_factor(t2, 0.0f, 1.0f, 0.5f, 4.0f, 0.1f), 1.1f);  // threshold
  EXPECT_FLOAT_EQ(onebit_lamb_factor(t2, 0.0f, 3.0f, 0.5f, 2.5f, 0.1f),
                  2.7f);  // factor_max 2.5, then last·0.9
  const double t3[3] = {0.1, 4.0, 9.0};
  EXPECT_FLOAT_EQ(onebit_lamb_factor(t3, 0.0f, 0.5f, 0.5f, 4.0f, 0.1f), 0.5f);  // factor_min
  // With weight decay: rr = min(1, ‖u_pre‖/‖u‖) = 2/3 blends the factor toward 1.
  const double f = 1.06 * (2.0 / 3.0) + (1.0 - 2.0 / 3.0);
  EXPECT_FLOAT_EQ(
      onebit_lamb_factor(std::vector<double>{1.06, 4.0, 9.0}.data(), 0.01f, 1.0f, 0.5f, 4.0f, 0.1f),
      static_cast<float>(f));
  // ‖u‖ = 0 gives rr = 1 (no blending) rather than a division by zero.
  const double t4[3] = {1.02, 0.0, 0.0};
  EXPECT_FLOAT_EQ(onebit_lamb_factor(t4, 0.01f, 1.0f, 0.5f, 4.0f, 0.1f), 1.02f);
}

TEST(OnebitLambTermsReference, MatchesTheFormulaOnOneElement) {
  const auto layout = ParamLayout::from_sizes({1, 2});
  const float theta[3] = {2.0f, 1.0f, -1.0f}, m[3] = {0.5f, 0.25f, 0.0f},
              m_last[3] = {0.25f, 0.0f, 0.0f}, v[3] = {4.0f, 1.0f, 1.0f};
  float vf[3] = {1.0f, 0.25f, 0.0f}, u[3];
  double terms[6];
  const OnebitLambArgs a{0.5f, 0.5f, 0.0f, 0.25f};
  ref::onebit_lamb_terms(theta, m, m_last, v, vf, u, layout, a, terms);
  // Element 0: ĝ = (0.5 − 0.125)/0.5 = 0.75; v_fresh = 0.5 + 0.5·0.5625 = 0.78125;
  // denom = 2; u_pre = 0.25; u = 0.25 + 0.5 = 0.75; ratio = 2/sqrt(0.78125).
  EXPECT_FLOAT_EQ(vf[0], 0.78125f);
  EXPECT_FLOAT_EQ(u[0], 0.75f);
  EXPECT_DOUBLE_EQ(terms[0], static_cast<double>(2.0f / std::sqrt(0.78125f)));
  EXPECT_DOUBLE_EQ(terms[1], 0.0625);
  EXPECT_DOUBLE_EQ(terms[2], 0.5625);
  // Tensor 1, element 2 has v_fresh = 0 after the update: ratio 1/0 → +inf wins the max.
  EXPECT_TRUE(std::isinf(terms[3]));
}

}  // namespace
}  // namespace clbo::cuda
