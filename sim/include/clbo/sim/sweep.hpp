// `clbo simulate`'s command-line flags as edits of the experiment document: --ds-config,
// --workload, --cluster, --gpus and --steps set their fields, and each --set FIELD=V1,V2,...
// is an axis of a sweep whose points are the product of all axes. Every point is an ordinary
// experiment document that goes through the one parse path (spec.hpp); nothing here reads a
// field's meaning. The merged results record the flags, so a result says how it was made.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::sim {

// The flags as typed; values are read as JSON where they parse (8, 1e-3, true, "x", [1,2])
// and as strings otherwise (fp16, paper-eth-v100).
struct CommandLineFlags {
  std::string ds_config, workload, gpus, steps;
  std::vector<std::string> clusters;
  std::vector<std::string> sets;  // "FIELD=V1,V2,..."
  bool any() const {
    return !ds_config.empty() || !workload.empty() || !gpus.empty() || !steps.empty() ||
           !clusters.empty() || !sets.empty();
  }
};

// One --set axis. `field` is as typed; `path` is its place in the document: a field of the
// simulate block ("micro_batch", "simulate.micro_batch" or "ds_config.optimizer.params.lr"
// are simulate.<field>), or "cluster.<field>" for a field of every cluster
// ("cluster.nic.rate_Gbps"). Paths take array indices: "optimizers[1].label".
struct SetAxis {
  std::string text, field, path;
  std::vector<nlohmann::json> values;
};

// The most points a sweep may have: far beyond any table a person reads.
inline constexpr size_t kMaxSweepPoints = 4096;

// A --set argument. Errors (no '=', no value, an empty value, a bad path) name "--set" and
// the argument.
SetAxis parse_set_flag(const std::string& text);
// "8,16,32" → [8, 16, 32]; commas inside brackets, braces or quotes do not split.
std::vector<nlohmann::json> parse_flag_values(const std::string& text, const std::string& flag);

// The document with --ds-config, --workload, --cluster, --gpus and --steps applied.
// --ds-config replaces the experiment's optimizers, batch, backend and gradient dtype (the
// config sets them all); --cluster and --gpus replace its clusters and GPU counts, and are an
// error on a document that lists rows. `file` names the document in errors.
nlohmann::json apply_flags(nlohmann::json doc, const CommandLineFlags& flags,
                           const std::string& file);

struct SweepPoint {
  nlohmann::json doc;                             // the experiment at this point
  nlohmann::json set = nlohmann::json::object();  // field (as typed) → value
  std::string label;                              // "micro_batch=8 cluster.nic.rate_Gbps=10"
};

// The product of the axes, the first axis outermost; one point (the document) without axes.
// A cluster field inlines each cluster reference (preset or file) before editing it; a
// ds_config field inlines a ds_config path. Errors name --set and the argument.
std::vector<SweepPoint> sweep_points(const nlohmann::json& doc, const std::vector<SetAxis>& axes,
                                     const std::string& file);

// What the flags did, for the results: each flag's value and each axis's values.
nlohmann::json flags_record(const CommandLineFlags& flags, const std::vector<SetAxis>& axes);

// One results document from the results of every point (in point order): the runs of all
// points, each with "sweep_point" and "set"; "sweep" lists each point's set, config and
// inputs; "config" is `doc`, the experiment before the --set edits; "inputs" are the first
// point's; warnings are the points' in order, each once; timing adds up.
nlohmann::json merge_sweep_results(const nlohmann::json& doc, const std::vector<SweepPoint>& points,
                                   std::vector<nlohmann::json> results);

}  // namespace clbo::sim
