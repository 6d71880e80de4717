// Small clusters and helpers shared by the simulator tests.
#pragma once
#include <nlohmann/json.hpp>
#include <stdexcept>
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

// One entry of an experiment's `optimizers` list, with an optional named baseline.
inline nlohmann::json opt(const std::string& label, const std::string& type, nlohmann::json params,
                          const std::string& base = "") {
  nlohmann::json o = {{"label", label}, {"optimizer", {{"type", type}, {"params", params}}}};
  if (!base.empty()) o["baseline"] = base;
  return o;
}

// A BERT-Base experiment filling every GPU of small_cluster_json(nodes, gpus_per_node);
// `extra` adds or overrides fields of its `simulate` block. `optimizers` is a JSON array:
// pass json::array({opt(...)}) for one entry, since clang (unlike gcc) reads a braced list
// of one json, {opt(...)}, as a copy of that json rather than an array of it.
inline nlohmann::json small_experiment(nlohmann::json optimizers, int64_t steps, int nodes = 4,
                                       int gpus_per_node = 4,
                                       nlohmann::json extra = nlohmann::json::object()) {
  if (!optimizers.is_array())
    throw std::invalid_argument("small_experiment: optimizers must be a JSON array, got " +
                                optimizers.dump());
  nlohmann::json s = {{"name", "test"},
                      {"simulate",
                       {{"workload", "bert-base-seq128"},
                        {"clusters", {small_cluster_json(nodes, gpus_per_node)}},
                        {"gpus", {nodes * gpus_per_node}},
                        {"micro_batch", 16},
                        {"grad_acc", 1},
                        {"total_steps", steps},
                        {"optimizers", optimizers}}}};
  for (auto it = extra.begin(); it != extra.end(); ++it) s["simulate"][it.key()] = it.value();
  return s;
}

// The run of an experiment's results whose optimizer label is `label`.
inline const nlohmann::json& run_of(const nlohmann::json& results, const std::string& label) {
  for (const auto& r : results["runs"])
    if (r["optimizer"] == label) return r;
  throw std::runtime_error("no run " + label);
}

}  // namespace clbo::sim::test
