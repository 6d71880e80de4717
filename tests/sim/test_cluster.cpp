// Cluster specs: the six presets parse and state their sources; bad clusters are rejected
// with errors naming the file, the field and the value.
#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/presets.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;

namespace {

template <class F>
InputError input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError("", "", "", "");
}

}  // namespace

TEST(Cluster, ThePresetsParseAndStateTheirSources) {
  // The six presets of the simulator issue plus the two H200 projection presets (docs/paper.md).
  const std::vector<std::string> expected = {"a100-hdr",        "blog-ib-qdr-v100", "dgx-h100-ndr",
                                             "h100-100gbe-tcp", "h200-100gbe-tcp",  "h200-ndr",
                                             "paper-eth-v100",  "paper-ib-v100"};
  EXPECT_EQ(preset_names("clusters"), expected);
  for (const auto& name : expected) {
    const nlohmann::json j = preset_json("clusters", name, "test", "cluster");
    const ClusterSpec c = resolve_cluster(name, "test", "cluster");
    EXPECT_EQ(c.name, name);
    EXPECT_FALSE(c.source.empty()) << name;
    for (const char* section : {"intra", "nic", "fabric", "topology"})
      EXPECT_TRUE(j[section].contains("source")) << name << " " << section;
    EXPECT_GE(c.max_gpus(), 1024) << name << " must reach 1024 GPUs for sweeps";
    EXPECT_GT(c.node_net_Bps(), 0);
    EXPECT_GT(c.intra_Bps, 0);
  }
}

TEST(Cluster, PresetsHoldTheirStatedNumbers) {
  const ClusterSpec eth = resolve_cluster("paper-eth-v100", "t", "c");
  EXPECT_EQ(eth.gpus_per_node, 4);
  EXPECT_EQ(eth.fabric, FabricKind::kTcp);
  EXPECT_DOUBLE_EQ(eth.nic_rate_Bps, 40e9 / 8);
  EXPECT_TRUE(eth.crosstraffic);  // TCP default
  const ClusterSpec ib = resolve_cluster("paper-ib-v100", "t", "c");
  EXPECT_EQ(ib.gpus_per_node, 8);
  EXPECT_EQ(ib.topology, TopologyKind::kTwoLevel);
  EXPECT_DOUBLE_EQ(ib.nic_rate_Bps, 100e9 / 8);  // EDR from the generation
  EXPECT_FALSE(ib.crosstraffic);
  const ClusterSpec qdr = resolve_cluster("blog-ib-qdr-v100", "t", "c");
  EXPECT_DOUBLE_EQ(qdr.nic_rate_Bps, 32e9 / 8);  // QDR: 40 Gb/s signalling, 32 Gb/s data
  const ClusterSpec dgx = resolve_cluster("dgx-h100-ndr", "t", "c");
  EXPECT_EQ(dgx.nic_count, 8);
  EXPECT_EQ(dgx.topology, TopologyKind::kFatTree);
  EXPECT_NEAR(dgx.node_net_Bps(), 8 * 50e9 * 0.96, 1);
}

TEST(Cluster, UnknownPresetSuggestsTheNearestName) {
  const InputError e =
      input_error([] { resolve_cluster("paper-eth-v10", "exp.json", "simulate.clusters[0]"); });
  EXPECT_EQ(e.where(), "exp.json");
  EXPECT_EQ(e.field(), "simulate.clusters[0]");
  EXPECT_EQ(e.value(), "paper-eth-v10");
  EXPECT_NE(std::string(e.what()).find("did you mean 'paper-eth-v100'"), std::string::npos);
}

TEST(Cluster, ZeroGpusPerNodeIsRejected) {
  auto j = test::small_cluster_json();
  j["gpus_per_node"] = 0;
  const InputError e = input_error([&] { parse_cluster(j, "c.json"); });
  EXPECT_EQ(e.where(), "c.json");
  EXPECT_EQ(e.field(), "gpus_per_node");
  EXPECT_EQ(e.value(), "0");
}

TEST(Cluster, ZeroNodesIsRejected) {
  auto j = test::small_cluster_json();
  j["nodes"] = 0;
  EXPECT_EQ(input_error([&] { parse_cluster(j, "c.json"); }).field(), "nodes");
}

TEST(Cluster, NegativeBandwidthIsRejected) {
  auto j = test::small_cluster_json();
  j["intra"]["bandwidth_GBps"] = -5;
  const InputError e = input_error([&] { parse_cluster(j, "c.json"); });
  EXPECT_EQ(e.field(), "intra.bandwidth_GBps");
  EXPECT_EQ(e.value(), "-5");
  j = test::small_cluster_json();
  j["nic"]["rate_Gbps"] = -100;
  EXPECT_EQ(input_error([&] { parse_cluster(j, "c.json"); }).field(), "nic.rate_Gbps");
}

TEST(Cluster, UnknownFieldIsRejectedWithSuggestion) {
  auto j = test::small_cluster_json();
  j["fabric"]["efficency"] = 0.9;
  const InputError e = input_error([&] { parse_cluster(j, "c.json"); });
  EXPECT_EQ(e.field(), "fabric.efficency");
  EXPECT_NE(std::string(e.what()).find("efficiency"), std::string::npos);
}

TEST(Cluster, GpuCountsMustFitTheNodes) {
  const ClusterSpec c = test::small_cluster(4, 4);
  EXPECT_NO_THROW(check_gpu_count(c, 1, "e", "gpus"));
  EXPECT_NO_THROW(check_gpu_count(c, 3, "e", "gpus"));  // part of one node
  EXPECT_NO_THROW(check_gpu_count(c, 16, "e", "gpus"));
  EXPECT_EQ(input_error([&] { check_gpu_count(c, 0, "e", "gpus[0]"); }).value(), "0");
  const InputError partial = input_error([&] { check_gpu_count(c, 6, "e", "gpus[1]"); });
  EXPECT_EQ(partial.field(), "gpus[1]");
  EXPECT_EQ(partial.value(), "6");
  EXPECT_EQ(input_error([&] { check_gpu_count(c, 32, "e", "gpus[2]"); }).value(), "32");
}

TEST(Cluster, TwoLevelOversubscriptionSetsTheUplink) {
  auto j = test::small_cluster_json(8, 4);
  j["topology"] = {{"type", "two_level"}, {"nodes_per_leaf", 4}, {"oversubscription", 2.0}};
  const ClusterSpec c = parse_cluster(j, "c.json");
  EXPECT_DOUBLE_EQ(c.uplink_Bps, 4 * c.node_net_Bps() / 2);
  j["topology"]["uplink_GBps"] = 5;
  EXPECT_EQ(input_error([&] { parse_cluster(j, "c.json"); }).field(), "topology.uplink_GBps");
}
