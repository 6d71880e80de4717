// Workloads: a model's per-tensor parameter layout (so per-tensor rules such as SLAMB's
// small-tensor set and 1-bit LAMB's per-layer coefficients see real shapes) and its compute
// time per micro-batch on each GPU type.
//
// Compute model (docs/simulator.md, "Compute"): forward and backward time of one
// micro-batch of m samples is max(floor, per_sample × m): a launch/latency floor at small
// m, compute-bound above it. Profiles measured on a GPU come from the workload JSON
// (V100 values are fitted to Table 1 of docs/reference/published.md); another GPU gets the
// profile of the workload's reference GPU scaled by its datasheet figures (compute_for), or,
// for a workload that states its FLOPs per sample and an efficiency ("from_flops"), the time
// those FLOPs take at that fraction of the GPU's peak.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/core/layout.hpp"
#include "clbo/sim/gpu.hpp"

namespace clbo::sim {

struct ComputeProfile {
  std::string gpu;
  double fwd_floor_s = 0, fwd_per_sample_s = 0;
  double bwd_floor_s = 0, bwd_per_sample_s = 0;
  double optimizer_s = 0;  // one optimizer step over all parameters
  std::string origin;      // "measured: ...", "derived: ..." or "scaled: ..."

  double fwd_s(int micro_batch) const;
  double bwd_s(int micro_batch) const;
  nlohmann::json to_json() const;
};

// Compute from FLOPs per sample ("compute": {"from_flops": {...}}): forward time per sample
// is fwd_flops_per_sample / (dense FP16 peak × efficiency), backward bwd_over_fwd times
// that, no launch floor; the optimizer step streams optimizer_bytes_per_param bytes per
// parameter at memory_efficiency of HBM bandwidth.
struct FlopsCompute {
  double efficiency = 0;  // fraction of the dense peak forward and backward reach; 0: unused
  double bwd_over_fwd = 2;
  double optimizer_bytes_per_param = 0;  // default: kFusedStepBytes (implementation.hpp)
  double memory_efficiency = 0.85;       // docs/reference/published.md §5.1
  std::string source;
  bool enabled() const { return efficiency > 0; }
};

struct Workload {
  std::string name, description, source, file;
  ParamLayout layout;
  int seq_len = 0;                       // tokens per sample (0 for images)
  double fwd_flops_per_sample = 0;       // used to derive compute for other models
  int layers = 0;                        // repeated blocks, for the launch-floor scaling
  std::vector<ComputeProfile> profiles;  // measured or derived, by GPU
  std::string reference_gpu;             // profile that other GPUs are scaled from
  // Share of the reference's forward/backward time that is bound by memory bandwidth rather
  // than tensor throughput, for the roofline split of scaling (0: all tensor-bound).
  double memory_bound_fraction = 0;
  FlopsCompute from_flops;  // instead of scaling a reference, when enabled

  // The profile for `gpu`: its own measured one when present, else computed from FLOPs or
  // the reference's scaled by datasheet figures (see .cpp). Throws InputError(where, field)
  // when the GPU lacks a figure that needs.
  ComputeProfile compute_for(const GpuInfo& gpu, const std::string& where,
                             const std::string& field) const;
  // The same for a GPU preset name.
  ComputeProfile compute_for(const std::string& gpu, const std::string& where,
                             const std::string& field) const;
  // Whether `gpu` has a profile of its own (measured or derived for it).
  bool has_profile(const std::string& gpu) const;
  nlohmann::json to_json() const;  // summary: name, params, tensors, flops, profiles
};

// The object a workload reference stands for: an inline object as it is, a preset's JSON, or
// a JSON file's (its relative layout path made relative to the working directory, so the
// object means the same wherever it is placed). `from` gets the file it came from.
nlohmann::json workload_json(const nlohmann::json& ref, const std::string& where,
                             const std::string& field, std::string* from = nullptr);
// A preset name, a JSON path or an inline object. `derive_from` references resolve
// recursively through the presets.
Workload resolve_workload(const nlohmann::json& ref, const std::string& where,
                          const std::string& field);
Workload parse_workload(const nlohmann::json& obj, const std::string& file,
                        const std::string& prefix = "");

// Overrides (or adds) a profile from user-measured JSON, e.g. clbo bench output converted
// to {"gpu": ..., "fwd_floor_ms": ..., ...}; see docs/simulator.md.
ComputeProfile parse_profile(const nlohmann::json& obj, const std::string& gpu,
                             const std::string& file, const std::string& prefix);

// Architecture generators behind "layout": {"bert": {...}} and friends (layouts.cpp).
// Each returns the tensors in the order the model's parameters() lists them.
ParamLayout bert_layout(int layers, int hidden, int intermediate, int vocab, int max_position,
                        int type_vocab, bool pretraining_heads);
ParamLayout gpt2_layout(int layers, int hidden, int vocab, int context);
ParamLayout swin_layout(int embed_dim, const std::vector<int>& depths,
                        const std::vector<int>& heads, int window, int patch, int in_chans,
                        int num_classes);

}  // namespace clbo::sim
