// `clbo simulate` experiments: a JSON spec (experiments/sim/*.json) → a results JSON with
// its config, the environment, and every number under a key that states its provenance
// ("simulated", or "paper" for the published values kept beside ours).
//
// Spec (every field is validated; errors name file, field and value):
//   {"name": ..., "description": ..., "source": ...,
//    "simulate": {
//      "workload": "<preset>|<file.json>|{...}",
//      "clusters": ["<preset>"|"<file.json>"|{...}, ...],
//      "gpus": [1, 8, 64, ...],
//      "optimizers": [{"label": "Adam", "optimizer": {DeepSpeed block}},
//                     {"label": "1-bit Adam", "optimizer": {...}, "baseline": "Adam"}],
//      "micro_batch": 16, "batch_size": 4096 | "grad_acc": 1, "total_steps": 152500,
//      "grad_dtype": "fp16", "backend": "nccl"|"mpi", "mpi_cuda_aware": false,
//      "allreduce": "auto"|"ring"|"tree"|"hierarchical", "protocol": "auto"|"LL"|...,
//      "overlap_backward": false, "bucket_mb": 25, "fidelity": "fast"|"exact",
//      "compute": {"<gpu>": {profile} | "<profile.json>"}, "kernel_efficiency": 0.85,
//      "kernel_bench": "<clbo bench kernels JSON>", "max_flows_per_round": 1024,
//      "target_rounds": 48,
//      "rows": [{"cluster": ..., "gpus": ..., "micro_batch": ..., "batch_size": ...,
//                "paper": {...}}]     // explicit points instead of clusters × gpus
//    }}
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::sim {

struct SimulateOptions {
  // Called after each (cluster, GPU count) group: done, total, a short label.
  std::function<void(int, int, const std::string&)> progress;
};

// Runs an experiment; `file` names it in errors. Returns the results document, which holds
// "warnings" (a list of sentences) when some optimizer's phase lies beyond the run.
nlohmann::json run_experiment(const nlohmann::json& spec, const std::string& file,
                              const SimulateOptions& options = {});

// Validates an experiment completely (every field, presets, referenced files) without
// simulating anything: what `clbo simulate --check` and `clbo reproduce` run first. Returns
// the warnings the run would record (phases it never reaches, see phase_warnings).
std::vector<std::string> validate_experiment(const nlohmann::json& spec, const std::string& file);

// The table printed at the end of a run (plain text, one row per run).
std::string results_table(const nlohmann::json& results);

// results/<path under experiments/>: "experiments/sim/x.json" → "results/sim/x.json".
std::string default_results_path(const std::string& experiment_path);

// Removes the timing fields, so two runs of one config compare byte for byte.
nlohmann::json without_timing(nlohmann::json results);

}  // namespace clbo::sim
