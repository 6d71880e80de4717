// `clbo calibrate`: fit a cluster preset to a user's own measurements by running the
// simulator itself (docs/calibration.md).
//
//   {"name": "my-cluster", "description": ..., "source": ...,
//    "cluster": "<preset>" | "<cluster.json>" | {...},     // the base: everything not fitted
//    "measurements": [
//      {"kind": "step", "workload": ..., "micro_batch": 16, "grad_acc": 1,
//       "optimizer": {DeepSpeed block of Adam or LAMB}, "gpus": 64,
//       "step_ms": 2351.1 | "samples_per_s": ...},
//      {"kind": "allreduce", "bytes": 680e6, "dtype": "fp16", "gpus": 64, "time_ms": 2205.9},
//      {"kind": "nccl-tests", "file": "all_reduce_perf.txt", "gpus": 16},
//      {"kind": "clbo-bench-collectives", "file": "collectives-mpi-....json", "gpus": 4}],
//    "fit": ["fabric.achievable_fraction", ...],   // optional: exactly these parameters
//    "explain_pct": 2}                             // optional, see below
//
// The parameters (cluster JSON fields): intra.bandwidth_GBps (the intra-node rate),
// fabric.achievable_fraction (TCP) or fabric.efficiency (InfiniBand) (the achievable
// network rate), fabric.software_latency_us (the per-step latency), and the structural term
// topology.uplink_GBps (a two-level tree, its nodes_per_leaf searched). Without "fit" the
// fewest that explain the data are chosen: the rates the measurements can see (intra-node
// from one-node measurements, network from the others), then the latency and last the
// structural term, each added only while the worst residual exceeds explain_pct and the
// added term lowers the Bayesian information criterion of the fit. Each fit is
// Levenberg-Marquardt on log(simulated / measured), every residual from a simulation.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::sim {

struct CalibrationOptions {
  // Replaces the input's "cluster" (a preset name, a path or an inline object).
  nlohmann::json cluster_override;
  // Called on progress: a short line.
  std::function<void(const std::string&)> progress;
};

struct CalibrationResult {
  nlohmann::json preset;              // the fitted cluster preset ("source": "fitted")
  std::vector<std::string> warnings;  // a poor fit: the worst rows
  double worst_residual_pct = 0;
};

// Validates the input completely (every measurement, referenced files, fit parameters) and
// fits. Errors (InputError naming the file, field and value): a bad field, measurements that
// contradict each other (one setting, two values), an unknown fit parameter, a cluster that
// does not exist or is not a cluster, or a fit that cannot be made.
CalibrationResult calibrate(const nlohmann::json& input, const std::string& file,
                            const CalibrationOptions& options = {});

// The parameters `clbo calibrate` can fit, as cluster JSON fields.
const std::vector<std::string>& calibration_parameters();

}  // namespace clbo::sim
