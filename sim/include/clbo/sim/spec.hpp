// A `clbo simulate` experiment spec (experiments/sim/*.json, experiments/paper/*.json) read
// into typed form: every field validated, presets and referenced files resolved, errors
// naming the file, the dotted field and the value. Nothing is simulated here.
//
//   {"name": ..., "description": ..., "source": ..., "claims": [...],
//    "simulate": {
//      "workload": "<preset>|<file.json>|{...}",
//      "clusters": ["<preset>"|"<file.json>"|{...}, ...],
//      "gpus": [1, 8, 64, ...],
//      "optimizers": [{"label": "Adam", "optimizer": {DeepSpeed block}},
//                     {"label": "1-bit Adam", "optimizer": {...}, "baseline": "Adam",
//                      "implementation": "deepspeed"}],   // fixes this entry's profile
//      "micro_batch": 16, "batch_size": 4096 | "grad_acc": 1, "total_steps": 152500,
//      "grad_dtype": "fp16", "backend": "nccl"|"mpi", "mpi_cuda_aware": false,
//      "allreduce": "auto"|"ring"|"tree"|"hierarchical", "protocol": "auto"|"LL"|...,
//      "overlap_backward": false, "bucket_mb": 25, "fidelity": "fast"|"exact",
//      "compute": {"<gpu>": {profile} | "<profile.json>"}, "kernel_efficiency": 0.85,
//      "kernel_bench": "<clbo bench kernels JSON>", "max_flows_per_round": 1024,
//      "target_rounds": 48,
//      "implementation": "clbo"|"deepspeed"|["deepspeed", "clbo"],  // the first is primary
//      "launch_us": 10, "host_sync_us": 10,       // host costs of the deepspeed profile
//      "ds_config": "<ds_config.json>"|{...},   // instead of optimizers, batch, backend, dtype
//      "rows": [{"cluster": ..., "gpus": ..., "micro_batch": ..., "batch_size": ...,
//                "paper": {...}, "paper_source": "..."}]  // points instead of clusters × gpus
//    }}
// The `claims` and each row's `paper` values belong to the report (report/), which checks
// and compares them; here they are only checked for shape.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clbo/core/schedule.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/expansion/options.hpp"
#include "clbo/sim/kernel_model.hpp"
#include "clbo/sim/lowering.hpp"
#include "clbo/sim/workload.hpp"

namespace clbo::sim {

// The largest micro-batch, global batch or accumulation count a spec (or a calibration
// measurement) may state: every product of them with a GPU count stays far inside int64.
inline constexpr int64_t kMaxBatch = int64_t{1} << 24;

struct OptimizerEntry {
  std::string label, baseline;  // baseline: the label of another entry, or empty
  OptimizerConfig config;
  // The profiles this entry runs under: its own "implementation", else the block's.
  std::vector<Implementation> implementations;
};

// One simulated setting: a cluster (index into ExperimentSpec::clusters), a GPU count and
// the batch shape. Every optimizer runs at every point.
struct RunPoint {
  size_t cluster = 0;
  int p = 1;
  int64_t micro_batch = 1, grad_acc = 1;
};

struct ExperimentSpec {
  std::string file;
  std::shared_ptr<Workload> workload;
  std::vector<ClusterSpec> clusters;
  std::vector<OptimizerEntry> optimizers;
  std::vector<RunPoint> points;  // rows in order, or clusters × gpus
  int64_t total_steps = 1;
  DType grad_dtype = DType::kF16;
  bool overlap = false;
  double bucket_bytes = 25e6;
  double kernel_efficiency = 0.85;
  nlohmann::json kernel_bench;  // `clbo bench kernels` output, or null
  std::string kernel_bench_file;
  ExpandOptions expand;  // its `implementation` is the primary one
  // Every profile the block runs (the first is primary); entries may fix their own.
  std::vector<Implementation> implementations = {Implementation::kClbo};
  SessionOptions session;
  std::map<std::string, ComputeProfile> compute;  // user-measured profiles by GPU
  // "ds_config": a whole DeepSpeed config standing for the optimizers (its optimizer and
  // the uncompressed twin as baseline), the batch (DeepSpeed's rule at each GPU count), the
  // backend, the gradient dtype and, unless total_steps is given, the run length.
  std::optional<DeepSpeedConfig> deepspeed;
  // Phases the run never reaches, and the ds_config fields that are not modelled.
  std::vector<std::string> warnings;

  // The compute profile of a cluster's GPU: the experiment's measured one, else the
  // workload's (its own profile, from FLOPs, or scaled).
  ComputeProfile profile_for(const ClusterSpec& c) const;
};

// Reads and validates a whole spec; `file` names it in errors.
ExperimentSpec parse_experiment_spec(const nlohmann::json& spec, const std::string& file);

}  // namespace clbo::sim
