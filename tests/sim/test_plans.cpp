// The cluster expansions move exactly the bytes of clbo's CommPlans (plan/plan.hpp):
// NCCL's ring allgather moves what the direct allgather moves, the 1-bit scheme matches
// onebit_bytes_per_rank, tree and hierarchical allreduce match the ring's total. Merging
// rounds keeps every byte and counts the merged steps.
#include <gtest/gtest.h>

#include <numeric>

#include "clbo/plan/plan.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/expansion/nccl_tuning.hpp"
#include "clbo/sim/expansion/rounds.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;

namespace {

std::vector<uint64_t> sent(const std::vector<Segment>& segs, int endpoints,
                           bool with_staging = false) {
  std::vector<uint64_t> b(static_cast<size_t>(endpoints), 0);
  for (const auto& s : segs) {
    if (s.staging && !with_staging) continue;
    const auto e = bytes_sent_by_endpoint(s, endpoints);
    for (size_t i = 0; i < b.size(); ++i) b[i] += e[i];
  }
  return b;
}

uint64_t total(const std::vector<Segment>& segs) {
  uint64_t t = 0;
  for (const auto& s : segs)
    if (!s.staging) t += s.payload_bytes() + s.analytic_bytes;
  return t;
}

KernelModel kernels() {
  KernelModel k;
  k.hbm_Bps = 9e11;
  return k;
}

}  // namespace

TEST(Plans, RingAllreduceIsClboPlanExactlyAndMergedKeepsBytes) {
  const ClusterSpec c = test::small_cluster(4, 4);
  const CommCall call{CollKind::kAllreduce, 1000003, DType::kF16, "grad"};
  ExpandOptions exact;
  exact.exact = true;
  exact.allreduce = Algo::kRing;
  const auto segs = expand_call(call, 0, c, 16, kernels(), exact);
  ASSERT_EQ(segs.size(), 1u);
  const CommPlan plan = make_plan(call, 16);
  EXPECT_EQ(segs[0].rounds.size(), static_cast<size_t>(plan.num_rounds()));
  const auto b = sent(segs, 16);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(b[static_cast<size_t>(r)], plan.bytes_sent_by(r));

  ExpandOptions fast = exact;
  fast.exact = false;
  fast.target_rounds = 5;
  const auto merged = expand_call(call, 0, c, 16, kernels(), fast);
  EXPECT_LE(merged[0].rounds.size(), 6u);
  const auto bm = sent(merged, 16);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(bm[static_cast<size_t>(r)], plan.bytes_sent_by(r));
  int steps = 0;
  for (const auto& round : merged[0].rounds) steps += round.front().steps;
  EXPECT_EQ(steps, plan.num_rounds());
}

TEST(Plans, OneBitNcclMatchesTheClosedForm) {
  const ClusterSpec c = test::small_cluster(4, 4);
  for (size_t n : {size_t{1000}, size_t{123457}, size_t{4000000}}) {
    const CommCall call{CollKind::kCompressedAllreduce, n, DType::kF32, "momentum"};
    const auto segs = expand_call(call, 0, c, 16, kernels(), ExpandOptions{});
    const auto b = sent(segs, 16);
    for (int r = 0; r < 16; ++r)
      EXPECT_EQ(b[static_cast<size_t>(r)], onebit_bytes_per_rank(n, 16)) << n;
    // And the same total as clbo's own two-phase plan.
    EXPECT_EQ(total(segs), make_plan(call, 16).total_bytes());
  }
}

TEST(Plans, OneBitMpiMovesTheSameTrafficPlusStaging) {
  const ClusterSpec c = test::small_cluster(4, 4);
  const size_t n = 1 << 20;
  const CommCall call{CollKind::kCompressedAllreduce, n, DType::kF32, "momentum"};
  ExpandOptions o;
  o.backend = Backend::kMpi;
  const auto segs = expand_call(call, 0, c, 16, kernels(), o);
  EXPECT_EQ(total(segs), 16 * onebit_bytes_per_rank(n, 16));
  uint64_t staged = 0;
  int staging_segments = 0;
  for (const auto& s : segs)
    if (s.staging) staged += s.payload_bytes(), ++staging_segments;
  EXPECT_EQ(staging_segments, 4);  // D2H and H2D around each phase
  EXPECT_GT(staged, n / 8 * 16);
  // Host-staged MPI traffic leaves from the node CPUs (endpoints p .. p+N-1).
  for (const auto& s : segs) {
    if (s.staging || s.rounds.empty()) continue;
    for (const auto& r : s.rounds)
      for (const auto& x : r) {
        EXPECT_GE(x.src, 16);
      }
  }
}

TEST(Plans, RingAllgatherMovesWhatTheDirectAllgatherMoves) {
  const auto rounds = ring_allgather_rounds(12, 1000);
  Segment s;
  s.rounds = rounds;
  const auto b = bytes_sent_by_endpoint(s, 12);
  const CommPlan direct = make_plan(CommCall{CollKind::kAllgather, 500, DType::kF16, "x"}, 12);
  for (int r = 0; r < 12; ++r) EXPECT_EQ(b[static_cast<size_t>(r)], direct.bytes_sent_by(r));
}

TEST(Plans, TreeAndHierarchicalMoveTheRingsTotal) {
  const ClusterSpec c = test::small_cluster(8, 4);
  const size_t n = 1 << 22;
  const CommCall call{CollKind::kAllreduce, n, DType::kF16, "grad"};
  const uint64_t ring_total = make_plan(call, 32).total_bytes();
  for (Algo a : {Algo::kTree, Algo::kHierarchical}) {
    for (bool exact : {true, false}) {
      ExpandOptions o;
      o.allreduce = a;
      o.exact = exact;
      const auto segs = expand_call(call, 0, c, 32, kernels(), o);
      const double t = static_cast<double>(total(segs));
      // The tree sends every byte of each half up and down every edge: 2·S·(p−1), the same
      // as the ring; hierarchical splits it between NVLink and the network.
      EXPECT_NEAR(t / static_cast<double>(ring_total), 1.0, 1e-6) << to_string(a) << exact;
    }
  }
}

TEST(Plans, FastTreeKeepsOnlyInterNodeTransfers) {
  const TreePlan full = tree_allreduce_rounds(32, 4, 1 << 20, 16, true);
  const TreePlan fast = tree_allreduce_rounds(32, 4, 1 << 20, 16, false);
  EXPECT_EQ(fast.chain_depth, 3);
  for (const auto& r : fast.rounds)
    for (const auto& x : r) {
      EXPECT_EQ(x.src % 4, 0);
      EXPECT_EQ(x.dst % 4, 0);
    }
  uint64_t a = 0, b = fast.chain_bytes;
  for (const auto& r : full.rounds)
    for (const auto& x : r) a += x.bytes;
  int stand_ins = 0;
  for (const auto& r : fast.rounds)
    for (const auto& x : r) {
      b += x.counted ? x.bytes : 0;
      stand_ins += x.counted ? 0 : 1;
    }
  EXPECT_EQ(a, b);
  EXPECT_GT(stand_ins, 0);  // pipeline-depth stand-ins for the chains, not counted
}

TEST(Plans, NcclSelectionFollowsItsCostModel) {
  const ClusterSpec one = test::small_cluster(1, 8);
  const ClusterSpec many = test::small_cluster(64, 8);
  ExpandOptions o;
  EXPECT_EQ(nccl_choose_allreduce(one, 8, 1e9, o).algo, Algo::kRing);  // tree needs nodes
  EXPECT_EQ(nccl_choose_allreduce(many, 512, 1e9, o).proto, Proto::kSimple);
  EXPECT_EQ(nccl_choose_allreduce(many, 512, 64, o).proto, Proto::kLL);
  EXPECT_EQ(nccl_choose_allreduce(many, 512, 64 * 1024, o).algo, Algo::kTree);
  // Latency tables of docs/reference/published.md.
  EXPECT_DOUBLE_EQ(nccl_hop_s(many, Algo::kRing, Proto::kSimple, true), 14e-6);
  EXPECT_DOUBLE_EQ(nccl_hop_s(many, Algo::kTree, Proto::kLL, true), 5e-6);
  EXPECT_DOUBLE_EQ(nccl_base_s(Algo::kRing, Proto::kLL128), 14e-6);
  EXPECT_DOUBLE_EQ(proto_efficiency(Proto::kLL), 0.5);
}

TEST(Plans, SparseAllreduceChargesCompaction) {
  const ClusterSpec c = test::small_cluster(2, 4);
  ExpandOptions o;
  o.param_count = 1000000;
  const auto segs = expand_call(
      CommCall{CollKind::kSparseAllreduce, 100000, DType::kF16, "momentum"}, 0, c, 8, kernels(), o);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_TRUE(segs[0].compression);
  EXPECT_GT(segs[0].compute_s, 0);
  EXPECT_EQ(total(segs),
            make_plan(CommCall{CollKind::kAllreduce, 100000, DType::kF16, ""}, 8).total_bytes());
}
