// Ring allreduce: values against a float64 sum and against the documented summation order,
// bit-identical ranks, the fp16 wire, and bytes equal to the plan.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/core/error.hpp"
#include "clbo/kernels/half.hpp"
#include "clbo/plan/plan.hpp"
#include "coll_test_util.hpp"

namespace clbo {
namespace {

constexpr int kWorlds[] = {1, 2, 3, 4, 5, 8, 16};
constexpr size_t kLengths[] = {0, 1, 2, 3, 7, 13, 1001};

struct RingRun {
  std::vector<std::vector<float>> in, out;  // per rank
  std::vector<test::Traffic> traffic;
};

RingRun run_ring(int p, size_t n, DType wire, bool mean) {
  RingRun run;
  for (int r = 0; r < p; ++r) run.in.push_back(test::random_floats(test::seed_of(p, r, n), n));
  run.out = run.in;
  run.traffic = test::run_counted(p, [&](CountingCommunicator& comm, int r) {
    float* buf = run.out[static_cast<size_t>(r)].data();
    if (mean) {
      ring_allreduce_mean(comm, buf, n, wire);
    } else {
      ring_allreduce_sum(comm, buf, n, wire);
    }
  });
  return run;
}

int chunk_of_element(size_t i, size_t n, int p) {
  int j = 0;
  while (ring_chunk_begin(n, p, j + 1) <= i) ++j;
  return j;
}

float round_f16(float x) {
  return kernels::f16_to_f32(kernels::f32_to_f16(x));
}

TEST(RingAllreduce, SumMatchesFloat64AndTheDocumentedOrderOnEveryRank) {
  for (int p : kWorlds) {
    for (size_t n : kLengths) {
      const RingRun run = run_ring(p, n, DType::kF32, false);
      for (size_t i = 0; i < n; ++i) {
        double exact = 0, magnitude = 0;
        for (int r = 0; r < p; ++r) {
          exact += run.in[r][i];
          magnitude += std::fabs(run.in[r][i]);
        }
        // Recursive summation of p terms: |error| <= (p−1)·u·Σ|x| with u = 2^−24.
        const double tol = (p - 1) * 0x1p-24 * magnitude;
        EXPECT_NEAR(run.out[0][i], exact, tol) << "p " << p << " n " << n << " i " << i;
        // The header promises chunk j is summed left to right from rank j (p = 1: x itself).
        const int j = chunk_of_element(i, n, p);
        float ordered = run.in[j][i];
        for (int k = 1; k < p; ++k) ordered = ordered + run.in[(j + k) % p][i];
        EXPECT_EQ(run.out[0][i], ordered) << "p " << p << " n " << n << " i " << i;
      }
      for (int r = 1; r < p; ++r) {
        EXPECT_TRUE(test::bit_identical(run.out[0], run.out[r])) << "p " << p << " rank " << r;
      }
      const CommPlan plan = make_plan({CollKind::kAllreduce, n, DType::kF32, "test"}, p);
      test::expect_traffic_matches(plan, run.traffic);
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(run.traffic[r].bytes_sent, ring_bytes_per_rank(n, p, r, 4));
      }
    }
  }
}

TEST(RingAllreduce, MeanIsTheSumTimesTheReciprocal) {
  for (int p : {1, 3, 4, 16}) {
    for (size_t n : {size_t{1}, size_t{13}, size_t{1001}}) {
      const RingRun sum = run_ring(p, n, DType::kF32, false);
      const RingRun mean = run_ring(p, n, DType::kF32, true);
      const float inv_p = 1.0f / static_cast<float>(p);
      for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(mean.out[r][i], sum.out[r][i] * inv_p);
      }
    }
  }
}

TEST(RingAllreduce, Fp16WireRoundsLikeAHalfReductionAndHalvesTheBytes) {
  for (int p : kWorlds) {
    for (size_t n : kLengths) {
      const RingRun run = run_ring(p, n, DType::kF16, false);
      for (size_t i = 0; i < n; ++i) {
        double exact = 0, magnitude = 0;
        for (int r = 0; r < p; ++r) {
          exact += run.in[r][i];
          magnitude += std::fabs(run.in[r][i]);
        }
        if (p == 1) {
          EXPECT_EQ(run.out[0][i], run.in[0][i]);  // documented no-op, no rounding
          continue;
        }
        // Each input and each of the p−1 partial sums is rounded to fp16 (u = 2^−11).
        const double tol = (2 * p - 1) * 0x1p-11 * magnitude;
        EXPECT_NEAR(run.out[0][i], exact, tol) << "p " << p << " n " << n << " i " << i;
        const int j = chunk_of_element(i, n, p);
        float ordered = round_f16(run.in[j][i]);
        for (int k = 1; k < p; ++k)
          ordered = round_f16(ordered + round_f16(run.in[(j + k) % p][i]));
        EXPECT_EQ(run.out[0][i], ordered) << "p " << p << " n " << n << " i " << i;
        EXPECT_EQ(run.out[0][i], round_f16(run.out[0][i])) << "not fp16-representable";
      }
      for (int r = 1; r < p; ++r) EXPECT_TRUE(test::bit_identical(run.out[0], run.out[r]));
      const CommPlan plan = make_plan({CollKind::kAllreduce, n, DType::kF16, "test"}, p);
      test::expect_traffic_matches(plan, run.traffic);
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(run.traffic[r].bytes_sent, ring_bytes_per_rank(n, p, r, 2));
      }
    }
  }
}

TEST(RingAllreduce, RejectsAWireTypeItCannotReduce) {
  EXPECT_THROW(run_local(2,
                         [](Communicator& comm) {
                           float x = 1.f;
                           ring_allreduce_sum(comm, &x, 1, DType::kU8);
                         }),
               Error);
}

}  // namespace
}  // namespace clbo
