// CommPlan expansion and its closed forms (the transfers themselves are held against the
// real algorithms' counted bytes in the other test files).
#include <gtest/gtest.h>

#include <set>

#include "clbo/core/error.hpp"
#include "clbo/kernels/onebit.hpp"
#include "clbo/plan/plan.hpp"

namespace clbo {
namespace {

TEST(CommPlan, RingHasTwoPMinusOneRoundsAroundTheRing) {
  for (int p : {2, 3, 4, 7, 16}) {
    for (size_t n : {size_t{16}, size_t{1001}}) {
      for (DType d : {DType::kF32, DType::kF16}) {
        const CommPlan plan = make_plan({CollKind::kAllreduce, n, d, "g"}, p);
        EXPECT_EQ(plan.algorithm, "ring");
        EXPECT_EQ(plan.num_rounds(), 2 * (p - 1));
        EXPECT_EQ(plan.transfers.size(), static_cast<size_t>(2 * (p - 1) * p));
        for (const Transfer& t : plan.transfers) EXPECT_EQ(t.dst, (t.src + 1) % p);
        // Every rank sends 2(p−1) chunks and the chunks of a phase cover the buffer p−1 times.
        EXPECT_EQ(plan.total_bytes(), 2ull * (p - 1) * n * dtype_bytes(d));
        for (int r = 0; r < p; ++r) {
          EXPECT_EQ(plan.bytes_sent_by(r), ring_bytes_per_rank(n, p, r, dtype_bytes(d)));
          EXPECT_EQ(plan.messages_sent_by(r), static_cast<uint64_t>(2 * (p - 1)));
        }
      }
    }
  }
}

TEST(CommPlan, RingChunksAreTheIntegerDivisionSplit) {
  // n = 11, p = 4: chunks [0,2) [2,5) [5,8) [8,11).
  EXPECT_EQ(ring_chunk_begin(11, 4, 1), 2u);
  EXPECT_EQ(ring_chunk_begin(11, 4, 2), 5u);
  EXPECT_EQ(ring_chunk_begin(11, 4, 3), 8u);
  EXPECT_EQ(ring_chunk_begin(11, 4, 4), 11u);
  // Rank 0 skips chunk 1 (3 elements) in the reduce-scatter and chunk 2 (3) in the allgather.
  EXPECT_EQ(ring_bytes_per_rank(11, 4, 0, 4), (22u - 3 - 3) * 4);
  // Rank 3 skips chunk 0 (2) and chunk 1 (3).
  EXPECT_EQ(ring_bytes_per_rank(11, 4, 3, 4), (22u - 2 - 3) * 4);
  const CommPlan plan = make_plan({CollKind::kAllreduce, 11, DType::kF32, "g"}, 4);
  EXPECT_EQ(plan.bytes_sent_by(0), 64u);
  EXPECT_EQ(plan.bytes_sent_by(3), 68u);
}

TEST(CommPlan, EmptyChunksAreNotSent) {
  const CommPlan plan = make_plan({CollKind::kAllreduce, 2, DType::kF32, "g"}, 5);
  for (const Transfer& t : plan.transfers) EXPECT_GT(t.bytes, 0u);
  EXPECT_EQ(plan.total_bytes(), 2ull * 4 * 2 * 4);
  EXPECT_TRUE(make_plan({CollKind::kAllreduce, 0, DType::kF32, "g"}, 5).transfers.empty());
}

TEST(CommPlan, OnebitIsFourDirectPhasesMatchingTheClosedForm) {
  for (int p : {2, 3, 5, 8, 16, 64}) {
    for (size_t n : {size_t{1}, size_t{13}, size_t{1001}, size_t{336'000'000}}) {
      const CommPlan plan = make_plan({CollKind::kCompressedAllreduce, n, DType::kF32, "m"}, p);
      EXPECT_EQ(plan.num_rounds(), 4);
      EXPECT_EQ(plan.transfers.size(), static_cast<size_t>(4 * p * (p - 1)));
      const uint64_t n_pad = clbo::onebit_padded_size(n, p);
      for (const Transfer& t : plan.transfers) {
        EXPECT_NE(t.src, t.dst);
        EXPECT_EQ(t.bytes, t.round % 2 == 0 ? n_pad / p / 8 : 4u);
      }
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(plan.bytes_sent_by(r), onebit_bytes_per_rank(n, p));
        EXPECT_EQ(plan.bytes_received_by(r), onebit_bytes_per_rank(n, p));
        EXPECT_EQ(onebit_bytes_per_rank(n, p), (p - 1) * n_pad / (4 * p) + 8 * (p - 1));
      }
    }
  }
}

TEST(CommPlan, OnebitIsAbout32TimesLessThanAnFp32Ring) {
  const size_t n = 336'000'000;  // BERT-Large
  for (int p : {16, 64}) {
    const double ring = static_cast<double>(ring_bytes_per_rank(n, p, 0, 4));
    const double onebit = static_cast<double>(onebit_bytes_per_rank(n, p));
    EXPECT_NEAR(ring / onebit, 32.0, 0.1) << p;
  }
}

TEST(CommPlan, DirectCollectivesAndTopk) {
  const int p = 4;
  const CommPlan a2a = make_plan({CollKind::kAlltoall, 10, DType::kF16, ""}, p);
  EXPECT_EQ(a2a.algorithm, "direct_alltoall");
  EXPECT_EQ(a2a.num_rounds(), 1);
  std::set<std::pair<int, int>> pairs;
  for (const Transfer& t : a2a.transfers) {
    EXPECT_EQ(t.bytes, 20u);
    pairs.insert({t.src, t.dst});
  }
  EXPECT_EQ(pairs.size(), 12u);
  const CommPlan ag = make_plan({CollKind::kAllgather, 3, DType::kU8, ""}, p);
  EXPECT_EQ(ag.algorithm, "direct_allgather");
  EXPECT_EQ(ag.bytes_sent_by(2), 9u);
  const CommPlan topk = make_plan({CollKind::kTopkAllgather, 5, DType::kF16, ""}, p);
  EXPECT_EQ(topk.bytes_sent_by(1), 3u * 40);  // 8 bytes per pair whatever the dtype
}

TEST(CommPlan, OnebitExchangesNameEachPhaseOnce) {
  const auto ex = onebit_exchanges(1001, 4);
  ASSERT_EQ(ex.size(), 4u);
  const uint64_t piece = onebit_padded_size(1001, 4) / 4 / 8;
  EXPECT_EQ(ex[0].kind, CollKind::kAlltoall);
  EXPECT_EQ(ex[0].bytes, piece);
  EXPECT_EQ(ex[2].bytes, piece);
  for (int i : {1, 2, 3}) EXPECT_EQ(ex[static_cast<size_t>(i)].kind, CollKind::kAllgather);
  EXPECT_EQ(ex[1].bytes, 4u);
  EXPECT_EQ(ex[3].bytes, 4u);
  std::set<std::string> names;
  for (const auto& e : ex) names.insert(e.name);
  EXPECT_EQ(names.size(), 4u);
  EXPECT_TRUE(onebit_exchanges(0, 4).empty());
}

TEST(CommPlan, RingAllgatherSendsWhatTheDirectAllgatherSends) {
  for (int p : {2, 3, 8}) {
    CommPlan ring, direct;
    ring.p = direct.p = p;
    ring_allgather_plan(ring, 1000, 2);
    direct_exchange_plan(direct, 1000);
    EXPECT_EQ(ring.num_rounds(), 2 + p - 1);  // offset by the starting round
    for (const Transfer& t : ring.transfers) EXPECT_EQ(t.dst, (t.src + 1) % p);
    for (int r = 0; r < p; ++r) EXPECT_EQ(ring.bytes_sent_by(r), direct.bytes_sent_by(r));
    EXPECT_EQ(direct.num_rounds(), 1);
  }
}

TEST(CommPlan, SingleRankPlansAreEmptyAndBadWorldSizesAreRejected) {
  for (CollKind k :
       {CollKind::kAllreduce, CollKind::kCompressedAllreduce, CollKind::kSparseAllreduce,
        CollKind::kTopkAllgather, CollKind::kAlltoall, CollKind::kAllgather}) {
    const CommPlan plan = make_plan({k, 1001, DType::kF32, ""}, 1);
    EXPECT_TRUE(plan.transfers.empty()) << to_string(k);
    EXPECT_EQ(plan.num_rounds(), 0);
  }
  EXPECT_EQ(onebit_bytes_per_rank(1001, 1), 0u);
  EXPECT_EQ(ring_bytes_per_rank(1001, 1, 0, 4), 0u);
  EXPECT_THROW(make_plan({CollKind::kAllreduce, 1, DType::kF32, ""}, 0), InputError);
}

}  // namespace
}  // namespace clbo
