// The α-β model (analytic.hpp) against SimGrid on the same Programs. On an uncontended
// single switch they agree within 5%. Where flows share links — an all-to-all's incast on
// the NICs, an oversubscribed uplink — the α-β model, which prices each transfer as if it
// were alone, is optimistic by about the number of flows sharing the bottleneck.
#include <gtest/gtest.h>

#include "clbo/sim/analytic.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;

namespace {

Program program(const ClusterSpec& c, int p, const std::vector<CommCall>& calls, Algo a,
                bool exact) {
  KernelModel k;
  k.hbm_Bps = 9e11;
  ExpandOptions o;
  o.allreduce = a;
  o.exact = exact;
  return calls_program(calls, c, p, k, o);
}

}  // namespace

TEST(Crosscheck, AlphaBetaAgreesWithin5PercentOnAnUncontendedSwitch) {
  const ClusterSpec c = test::small_cluster(8, 4);
  const int p = 32;
  struct Case {
    const char* what;
    std::vector<CommCall> calls;
    Algo algo;
  };
  const std::vector<Case> cases = {
      {"ring allreduce 100 MB",
       {{CollKind::kAllreduce, 50'000'000, DType::kF16, "g"}},
       Algo::kRing},
      {"ring allreduce 64 KB", {{CollKind::kAllreduce, 32'768, DType::kF16, "g"}}, Algo::kRing},
      {"ring allgather", {{CollKind::kAllgather, 1'000'000, DType::kF32, "g"}}, Algo::kRing},
      {"1-bit scalar allgathers", {{CollKind::kAllgather, 1, DType::kF32, "scale"}}, Algo::kRing},
  };
  std::vector<Program> progs;
  for (const auto& k : cases) progs.push_back(program(c, p, k.calls, k.algo, false));
  const auto results = simulate_programs(c, p, progs);
  for (size_t i = 0; i < cases.size(); ++i) {
    const double model = analytic_program_s(c, progs[i]);
    EXPECT_NEAR(test::rel(results[i].time_s, model), 0, 0.05)
        << cases[i].what << ": SimGrid " << results[i].time_s << " s, α-β " << model << " s";
  }
}

TEST(Crosscheck, AlphaBetaIsOptimisticWhereFlowsShareLinks) {
  // All-to-all: each node's NIC carries 3 node-pair flows at once (4 nodes), which the α-β
  // model prices as if each had the NIC alone.
  const ClusterSpec c = test::small_cluster(4, 4);
  const Program a2a =
      program(c, 16, {{CollKind::kAlltoall, 4'000'000, DType::kF32, "x"}}, Algo::kRing, false);
  const double sim = simulate_programs(c, 16, {a2a}).at(0).time_s;
  const double model = analytic_program_s(c, a2a);
  // The 16 GPUs of a node pair send 4×4 = 16 messages; per NIC 3 peers × 16 share the link.
  EXPECT_GT(sim / model, 20.0) << "sim " << sim << " model " << model;

  // Oversubscribed two-level tree: a ring across leaves is fine (one flow per NIC and per
  // uplink direction), but the hierarchical allreduce runs 4 inter-node rings in parallel
  // (one per local rank) that share every NIC and uplink: SimGrid shows the sharing, the
  // α-β model does not.
  auto j = test::small_cluster_json(8, 4);
  j["topology"] = {{"type", "two_level"}, {"nodes_per_leaf", 2}, {"oversubscription", 2.0}};
  const ClusterSpec tree = parse_cluster(j, "t.json");
  const Program ring =
      program(tree, 32, {{CollKind::kAllreduce, 50'000'000, DType::kF16, "g"}}, Algo::kRing, false);
  const Program hier = program(tree, 32, {{CollKind::kAllreduce, 50'000'000, DType::kF16, "g"}},
                               Algo::kHierarchical, false);
  const auto r = simulate_programs(tree, 32, {ring, hier});
  EXPECT_NEAR(test::rel(r[0].time_s, analytic_program_s(tree, ring)), 0, 0.05);
  EXPECT_GT(r[1].time_s / analytic_program_s(tree, hier), 1.5);
}
