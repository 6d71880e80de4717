// Small clusters and helpers shared by the simulator tests.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "clbo/sim/cluster.hpp"

namespace clbo::sim::test {

// A single-switch InfiniBand cluster with round numbers, so analytic expectations are easy.
inline nlohmann::json small_cluster_json(int nodes = 4, int gpus = 4) {
  return {{"name", "test-ib"},
          {"source", "tests"},
          {"gpu", "V100-SXM2"},
          {"nodes", nodes},
          {"gpus_per_node", gpus},
          {"intra", {{"type", "nvlink"}, {"bandwidth_GBps", 100.0}, {"latency_us", 1.0}}},
          {"nic", {{"count", 1}, {"rate_Gbps", 80}, {"latency_us", 1.0}}},
          {"fabric", {{"type", "infiniband"}, {"efficiency", 1.0}}},
          {"topology", {{"type", "single_switch"}, {"switch_latency_us", 1.0}}}};
}

inline ClusterSpec small_cluster(int nodes = 4, int gpus = 4) {
  return parse_cluster(small_cluster_json(nodes, gpus), "test");
}

inline double rel(double a, double b) {
  return (a - b) / b;
}

}  // namespace clbo::sim::test
