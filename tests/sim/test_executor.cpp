// Programs run on SimGrid: merged rounds and node aggregation give the per-rank, per-step
// results; byte counts come out of the executed transfers; every topology builds; user XML
// platforms run with a host→rank mapping and bad mappings are reported.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "clbo/core/error.hpp"
#include "clbo/plan/plan.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/expansion/nccl_tuning.hpp"
#include "clbo/sim/expansion/rounds.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;

namespace {

KernelModel kernels() {
  KernelModel k;
  k.hbm_Bps = 9e11;
  return k;
}

Program program(const ClusterSpec& c, int p, const CommCall& call, const ExpandOptions& o) {
  Program prog;
  prog.p = p;
  prog.gpus_per_node = c.gpus_per_node;
  prog.segments = expand_call(call, 0, c, p, kernels(), o);
  return prog;
}

ProgramResult run1(const ClusterSpec& c, int p, const Program& prog, bool aggregate) {
  SessionOptions s;
  s.aggregate = aggregate;
  return simulate_programs(c, p, {prog}, s).at(0);
}

ExpandOptions exact_opts(Algo a = Algo::kRing) {
  ExpandOptions o;
  o.exact = true;
  o.allreduce = a;
  return o;
}

}  // namespace

TEST(Executor, MergedRingEqualsThePerStepRing) {
  const ClusterSpec c = test::small_cluster(4, 4);
  const CommCall call{CollKind::kAllreduce, 50'000'000, DType::kF16, "grad"};
  ExpandOptions fast = exact_opts();
  fast.exact = false;
  fast.target_rounds = 4;
  const ProgramResult exact = run1(c, 16, program(c, 16, call, exact_opts()), false);
  const ProgramResult merged = run1(c, 16, program(c, 16, call, fast), true);
  EXPECT_NEAR(test::rel(merged.time_s, exact.time_s), 0, 0.005);
  EXPECT_LT(merged.transfers * 4, exact.transfers);
  EXPECT_EQ(merged.traffic_bytes, exact.traffic_bytes);
  EXPECT_EQ(exact.traffic_bytes, make_plan(call, 16).total_bytes());
}

TEST(Executor, NodeAggregationMatchesPerRankFlowsForTheOneBitScheme) {
  // One flow per node pair carries the all-to-all's inter-node traffic in fast mode.
  const ClusterSpec c = test::small_cluster(4, 4);
  const CommCall call{CollKind::kCompressedAllreduce, 40'000'000, DType::kF32, "momentum"};
  ExpandOptions exact = exact_opts();
  const Program prog = program(c, 16, call, exact);
  const ProgramResult per_rank = run1(c, 16, prog, false);
  const ProgramResult per_node = run1(c, 16, prog, true);
  EXPECT_NEAR(test::rel(per_node.time_s, per_rank.time_s), 0, 0.005);
  EXPECT_EQ(per_node.traffic_bytes, per_rank.traffic_bytes);
  EXPECT_EQ(per_rank.traffic_bytes, 16 * onebit_bytes_per_rank(call.count, 16));
  EXPECT_LT(per_node.transfers, per_rank.transfers);
  // Every phase shows up with its own timing.
  ASSERT_EQ(per_node.segments.size(), prog.segments.size());
  for (size_t i = 1; i < per_node.segments.size(); ++i)
    EXPECT_GE(per_node.segments[i].start_s + 1e-12, per_node.segments[i - 1].end_s);
}

TEST(Executor, NodeAggregationMatchesForAPlainAlltoall) {
  const ClusterSpec c = test::small_cluster(6, 4);
  const Program prog =
      program(c, 24, CommCall{CollKind::kAlltoall, 250'000, DType::kF32, "x"}, exact_opts());
  const ProgramResult a = run1(c, 24, prog, false), b = run1(c, 24, prog, true);
  EXPECT_NEAR(test::rel(b.time_s, a.time_s), 0, 0.005);
}

TEST(Executor, NodeLevelTreeMatchesTheTreeWithIntraNodeChains) {
  // Fast mode simulates the double binary tree between nodes only and lets stand-in
  // chunks play the chains' pipeline depth; with the chains simulated the step is the same.
  for (const ClusterSpec& c : {test::small_cluster(8, 4), test::small_cluster(16, 8)}) {
    const int p = c.max_gpus();
    const CommCall call{CollKind::kAllreduce, 20'000'000, DType::kF16, "grad"};
    ExpandOptions fast = exact_opts(Algo::kTree);
    fast.exact = false;
    ExpandOptions chains = fast;
    chains.tree_chains = true;
    const ProgramResult full = run1(c, p, program(c, p, call, chains), false);
    const ProgramResult quick = run1(c, p, program(c, p, call, fast), true);
    EXPECT_NEAR(test::rel(quick.time_s, full.time_s), 0, 0.03) << p;
    EXPECT_EQ(quick.traffic_bytes, full.traffic_bytes);
    EXPECT_LT(quick.transfers * 3, full.transfers);
  }
}

TEST(Executor, EveryTopologyBuildsAndRuns) {
  auto j = test::small_cluster_json(8, 2);
  for (const nlohmann::json& topo :
       {nlohmann::json{{"type", "single_switch"}},
        nlohmann::json{{"type", "two_level"}, {"nodes_per_leaf", 2}, {"oversubscription", 4.0}},
        nlohmann::json{{"type", "fat_tree"}, {"nodes_per_leaf", 4}, {"spines", 2}}}) {
    j["topology"] = topo;
    const ClusterSpec c = parse_cluster(j, "t.json");
    const Program prog =
        program(c, 16, CommCall{CollKind::kAllreduce, 1'000'000, DType::kF32, "g"}, exact_opts());
    const ProgramResult r = run1(c, 16, prog, true);
    EXPECT_GT(r.time_s, 0) << topo.dump();
    EXPECT_EQ(
        r.traffic_bytes,
        make_plan(CommCall{CollKind::kAllreduce, 1'000'000, DType::kF32, "g"}, 16).total_bytes());
  }
}

TEST(Executor, OversubscribedUplinksSlowCrossLeafTraffic) {
  auto j = test::small_cluster_json(8, 2);
  j["topology"] = {{"type", "two_level"}, {"nodes_per_leaf", 4}, {"oversubscription", 1.0}};
  const ClusterSpec full = parse_cluster(j, "t.json");
  j["topology"]["oversubscription"] = 4.0;
  const ClusterSpec thin = parse_cluster(j, "t.json");
  const CommCall call{CollKind::kAlltoall, 2'000'000, DType::kF32, "x"};
  const double a = run1(full, 16, program(full, 16, call, exact_opts()), true).time_s;
  const double b = run1(thin, 16, program(thin, 16, call, exact_opts()), true).time_s;
  EXPECT_GT(b, 1.5 * a);
}

TEST(Executor, MpiHostStagingCrossesThePcieLinks) {
  const ClusterSpec c = test::small_cluster(4, 4);
  const CommCall call{CollKind::kCompressedAllreduce, 20'000'000, DType::kF32, "m"};
  ExpandOptions nccl = exact_opts(), mpi = exact_opts();
  mpi.backend = Backend::kMpi;
  const ProgramResult a = run1(c, 16, program(c, 16, call, nccl), true);
  const ProgramResult b = run1(c, 16, program(c, 16, call, mpi), true);
  EXPECT_EQ(a.traffic_bytes, b.traffic_bytes);
  EXPECT_EQ(a.staging_bytes, 0u);
  EXPECT_GT(b.staging_bytes, 0u);
  EXPECT_GT(b.time_s, a.time_s);  // four PCIe copies and a shared host link per node
}

class XmlPlatform : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("clbo_xml_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    xml_ = (dir_ / "platform.xml").string();
    std::ofstream(xml_) << R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="AS0" routing="Full">
    <cluster id="c" prefix="host" suffix="" radical="0-7" speed="1Gf" bw="10GBps" lat="1us"
             sharing_policy="SPLITDUPLEX" bb_bw="100GBps" bb_lat="1us"/>
  </zone>
</platform>
)";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  nlohmann::json cluster(std::vector<std::string> hosts) const {
    return {{"name", "xml-test"}, {"gpu", "V100-SXM2"},
            {"gpus_per_node", 2}, {"xml", xml_},
            {"hosts", hosts},     {"fabric", {{"type", "infiniband"}, {"generation", "EDR"}}}};
  }
  std::filesystem::path dir_;
  std::string xml_;
};

TEST_F(XmlPlatform, RunsWithAHostToRankMapping) {
  const ClusterSpec c = parse_cluster(cluster({"host3", "host2", "host1", "host0"}), "x.json");
  const CommCall call{CollKind::kAllreduce, 1'000'000, DType::kF32, "g"};
  const ProgramResult r = run1(c, 4, program(c, 4, call, exact_opts()), true);
  EXPECT_GT(r.time_s, 0);
  EXPECT_EQ(r.traffic_bytes, make_plan(call, 4).total_bytes());
}

TEST_F(XmlPlatform, AHostMissingFromThePlatformIsNamed) {
  const ClusterSpec c = parse_cluster(cluster({"host0", "host1", "gpu7", "host3"}), "x.json");
  try {
    run1(c, 4, program(c, 4, CommCall{CollKind::kAllreduce, 1000, DType::kF32, "g"}, exact_opts()),
         true);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "x.json");
    EXPECT_EQ(e.field(), "hosts[2]");
    EXPECT_EQ(e.value(), "gpu7");
  }
}

TEST_F(XmlPlatform, ABrokenPlatformIsRestatedAsAnError) {
  std::ofstream(xml_)
      << "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\"><host id=\"a\" speed=\"1f\"/>";
  const ClusterSpec c = parse_cluster(cluster({"a", "b"}), "x.json");
  try {
    run1(c, 2, program(c, 2, CommCall{CollKind::kAllreduce, 1000, DType::kF32, "g"}, exact_opts()),
         true);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(xml_), std::string::npos) << e.what();
  }
}

namespace {

ProgramResult run_capped(const ClusterSpec& c, int p, const Program& prog, int cap) {
  SessionOptions s;
  s.max_flows_per_round = cap;
  return simulate_programs(c, p, {prog}, s).at(0);
}

}  // namespace

TEST(Executor, MergedPipelineFillMatchesTheSamePatternMerge) {
  // Fast mode merges the tree's fill and drain rounds with its steady state
  // (merge_pipeline_rounds); the previous path merged only rounds of one pattern. Both on
  // the oversubscribed InfiniBand preset and on the TCP preset with crosstraffic, for a
  // bandwidth-bound gradient and SLAMB's smaller compacted buffer.
  for (const char* preset : {"paper-ib-v100", "paper-eth-v100"}) {
    const ClusterSpec c = resolve_cluster(preset, "test", "cluster");
    const int p = 128;
    for (size_t count : {size_t{340'000'000}, size_t{34'000'000}}) {
      const CommCall call{CollKind::kAllreduce, count, DType::kF16, "grad"};
      ExpandOptions now = exact_opts(Algo::kTree);
      now.exact = false;
      ExpandOptions before = now;
      before.tree_merge_fill = false;
      before.tree_target_rounds = 12;
      const ProgramResult a = run1(c, p, program(c, p, call, before), true);
      const ProgramResult b = run1(c, p, program(c, p, call, now), true);
      EXPECT_NEAR(test::rel(b.time_s, a.time_s), 0, 0.02) << preset << " " << count;
      EXPECT_EQ(b.traffic_bytes, a.traffic_bytes);
      EXPECT_LT(b.transfers * 3, a.transfers);
    }
  }
}

TEST(Executor, MergedShiftsMatchTheConcurrentAlltoall) {
  // A node-level all-to-all with more network flows than the cap carries several messages
  // per flow (lowering.cpp, merge_shifts): shift groups on one switch, leaf groups under leaf
  // switches. With TCP crosstraffic on one switch, on the oversubscribed two-level tree (2
  // nodes per leaf: 16 leaves, 5 per group), on a fat-tree (D-mod-k routing) and on an
  // oversubscribed TCP leaf-spine (8 nodes per leaf) it ends when the all-at-once exchange
  // does.
  nlohmann::json leaf_spine = test::small_cluster_json(32, 4);
  leaf_spine["fabric"] = {{"type", "tcp"}, {"achievable_fraction", 0.4}};
  leaf_spine["topology"] = {{"type", "two_level"}, {"nodes_per_leaf", 8}, {"oversubscription", 2}};
  const std::vector<std::pair<ClusterSpec, int>> cases = {
      {resolve_cluster("paper-eth-v100", "test", "cluster"), 256},  // 64 nodes
      {resolve_cluster("paper-ib-v100", "test", "cluster"), 256},   // 32 nodes
      {resolve_cluster("dgx-h100-ndr", "test", "cluster"), 256},    // 32 nodes, 2 leaves
      {parse_cluster(leaf_spine, "test"), 128}};                    // 32 nodes, 4 leaves
  for (const auto& [c, p] : cases) {
    ExpandOptions o;
    const CommCall a2a{CollKind::kAlltoall, 40'000, DType::kF32, "x"};
    const Program prog = program(c, p, a2a, o);
    const ProgramResult all_at_once = run_capped(c, p, prog, 1 << 30);
    const ProgramResult merged = run_capped(c, p, prog, 128);
    EXPECT_NEAR(test::rel(merged.time_s, all_at_once.time_s), 0, 0.005) << c.name;
    EXPECT_EQ(merged.traffic_bytes, all_at_once.traffic_bytes);
    EXPECT_LT(merged.transfers, all_at_once.transfers) << c.name;
  }
}

TEST(Executor, RingRoundsAreNeverSplitIntoWindows) {
  // The flow cap concerns all-to-alls only: windows would serialise a ring step.
  const ClusterSpec c = test::small_cluster(8, 4);
  ExpandOptions o;
  const Program prog = program(c, 32, CommCall{CollKind::kAllgather, 4, DType::kF32, "s"}, o);
  EXPECT_DOUBLE_EQ(run_capped(c, 32, prog, 16).time_s, run_capped(c, 32, prog, 1024).time_s);
}
