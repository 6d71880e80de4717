// Sparse (masked) allreduce and the top-k allgather compressor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/philox.hpp"
#include "clbo/kernels/mask.hpp"
#include "clbo/plan/plan.hpp"
#include "coll_test_util.hpp"

namespace clbo {
namespace {

bool kept(const std::vector<uint8_t>& mask, size_t i) {
  return (mask[i / 8] >> (7 - i % 8)) & 1;
}

TEST(SparseAllreduce, SumsMaskedEntriesAndLeavesTheRestUntouched) {
  for (int p : {1, 2, 3, 4, 8, 16}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{13}, size_t{1001}}) {
      for (DType wire : {DType::kF32, DType::kF16}) {
        std::vector<uint8_t> mask((n + 7) / 8);
        kernels::random_mask(/*seed=*/42, /*t=*/3, /*k=*/0.3, 0, n, mask.data());
        if (n > 0) mask[0] |= 0x80;  // at least one kept element even for tiny n
        size_t expected_count = 0;
        for (size_t i = 0; i < n; ++i) expected_count += kept(mask, i);

        std::vector<std::vector<float>> in, out;
        for (int r = 0; r < p; ++r) in.push_back(test::random_floats(test::seed_of(p, r, n, 9), n));
        out = in;
        std::vector<size_t> counts(static_cast<size_t>(p));
        const auto traffic = test::run_counted(p, [&](CountingCommunicator& comm, int r) {
          counts[r] = sparse_allreduce_sum(comm, out[r].data(), n, mask.data(), wire);
        });

        const double u = wire == DType::kF32 ? 0x1p-24 : 0x1p-11;
        for (int r = 0; r < p; ++r) {
          EXPECT_EQ(counts[r], expected_count);
          for (size_t i = 0; i < n; ++i) {
            if (!kept(mask, i)) {
              ASSERT_EQ(out[r][i], in[r][i]) << "unselected element " << i << " changed";
              continue;
            }
            double exact = 0, magnitude = 0;
            for (int q = 0; q < p; ++q) {
              exact += in[q][i];
              magnitude += std::fabs(in[q][i]);
            }
            const double tol = (wire == DType::kF32 ? p - 1 : 2 * p - 1) * u * magnitude;
            ASSERT_NEAR(out[r][i], exact, tol) << "p " << p << " n " << n << " i " << i;
            ASSERT_EQ(out[r][i], out[0][i]) << "ranks disagree on a selected element";
          }
        }
        const CommPlan plan = make_plan({CollKind::kSparseAllreduce, expected_count, wire, "m"}, p);
        test::expect_traffic_matches(plan, traffic);
      }
    }
  }
}

TEST(SparseAllreduce, RanksWithDifferentMasksFailInsteadOfMixingElements) {
  EXPECT_THROW(run_local(2,
                         [](Communicator& comm) {
                           std::vector<float> buf(16, 1.f);
                           // rank 0 keeps 10 elements, rank 1 keeps 12
                           const std::vector<uint8_t> mask = comm.rank() == 0
                                                                 ? std::vector<uint8_t>{0xFF, 0xC0}
                                                                 : std::vector<uint8_t>{0xFF, 0xF0};
                           sparse_allreduce_sum(comm, buf.data(), 16, mask.data());
                         }),
               Error);
}

// Top-k by a plain sort: largest |x| first, ties to the lower index.
std::vector<uint32_t> topk_by_sort(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  order.resize(k);
  return order;
}

TEST(TopkAllgather, EqualsADirectComputationOnEveryRank) {
  for (int p : {1, 2, 3, 4, 5, 8, 16}) {
    for (size_t n : {size_t{1}, size_t{13}, size_t{1001}}) {
      for (size_t k : {size_t{0}, size_t{1}, n / 10, n}) {
        std::vector<std::vector<float>> in, out;
        for (int r = 0; r < p; ++r) {
          std::vector<float> x = test::random_floats(test::seed_of(p, r, n, 5), n);
          if (n > 4) x[3] = -x[4];  // a tie in |x|
          in.push_back(x);
        }
        out = in;
        const auto traffic = test::run_counted(p, [&](CountingCommunicator& comm, int r) {
          topk_allgather_mean(comm, out[r].data(), n, k);
        });

        std::vector<float> expected(n, 0.0f);
        for (int r = 0; r < p; ++r) {
          for (uint32_t i : topk_by_sort(in[r], k)) expected[i] += in[r][i];
        }
        for (float& v : expected) v *= 1.0f / static_cast<float>(p);
        for (int r = 0; r < p; ++r) {
          EXPECT_TRUE(test::bit_identical(out[r], expected))
              << "p " << p << " n " << n << " k " << k;
        }
        const CommPlan plan = make_plan({CollKind::kTopkAllgather, k, DType::kF32, "g"}, p);
        test::expect_traffic_matches(plan, traffic);
        for (const auto& t : traffic) EXPECT_EQ(t.bytes_sent, (p - 1) * 8 * k);
      }
    }
  }
}

TEST(TopkAllgather, RejectsKLargerThanTheBuffer) {
  try {
    run_local(1, [](Communicator& comm) {
      std::vector<float> buf(4);
      topk_allgather_mean(comm, buf.data(), 4, 5);
    });
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "k");
    EXPECT_EQ(e.value(), "5");
  }
}

}  // namespace
}  // namespace clbo
