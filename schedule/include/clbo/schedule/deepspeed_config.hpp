// A whole DeepSpeed config (ds_config.json) read as DeepSpeed reads it, into the typed form
// that `clbo simulate`, `clbo train` and `clbo replay` consume: the optimizer block (and its
// uncompressed twin, the baseline a projection is compared against), the batch triple with
// DeepSpeed's rule, the precision, the 1-bit optimizers' communication backend and the
// scheduler's run length.
//
// DeepSpeed parses configs with hjson, so comments and trailing commas are accepted
// (deepspeed_json_options). What DeepSpeed itself refuses is an error naming the field and
// value: a 1-bit optimizer with ZeRO (stage > 0), inconsistent batch fields, a bad optimizer
// block. Every field that changes the answer and that clbo does not model is a warning
// naming it, never silence; a field clbo does not know is a warning too (DeepSpeed ignores
// unknown fields).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clbo/core/names.hpp"
#include "clbo/schedule/config.hpp"

namespace clbo {

// The engine's compute precision; the spellings are DeepSpeed's block names (and the
// "precision" field of a resolved config in results).
enum class Precision { kFp32, kFp16, kBf16 };
inline constexpr auto kPrecisionNames = name_table<Precision>(
    {{Precision::kFp32, "fp32"}, {Precision::kFp16, "fp16"}, {Precision::kBf16, "bf16"}});

// DeepSpeed's three batch fields as the config states them; any two determine the third.
struct DeepSpeedBatch {
  std::optional<int64_t> train_batch_size, micro_batch, grad_acc;
  // Field names in errors, e.g. "train_batch_size" or "simulate.ds_config.train_batch_size".
  std::string file, prefix;

  // Micro-batch and accumulation steps on `world_size` GPUs, as DeepSpeed derives them
  // (deepspeed/runtime/config.py, _set_batch_related_parameters and _batch_assertion): a
  // missing field follows from the other two (train_batch_size alone: one accumulation
  // step; micro-batch alone: likewise), and train_batch_size = micro × gas × world_size must
  // hold exactly. `where` says which GPU count is meant (e.g. "simulate.gpus[2] = 64").
  struct Resolved {
    int64_t micro_batch = 1, grad_acc = 1;
  };
  Resolved resolve(int64_t world_size, const std::string& where) const;
  // The world size all three fields imply, when all three are given.
  std::optional<int64_t> implied_world_size() const;
};

struct DeepSpeedConfig {
  std::string file;    // where it was read from (errors, results)
  nlohmann::json raw;  // as read
  OptimizerConfig optimizer;
  // The optimizer's uncompressed twin (OneBitAdam, ZeroOneAdam → Adam; OneBitLamb, Slamb →
  // Lamb; their ablations likewise), or nullopt when the optimizer is uncompressed.
  std::optional<OptimizerConfig> baseline;
  DeepSpeedBatch batch;
  // fp16.enabled / bf16.enabled, as DeepSpeed's engine selects.
  Precision precision = Precision::kFp32;
  // The dtype gradients are averaged in: 2-byte under fp16 or bf16 (kF16 stands for both:
  // the bytes on the wire are what the simulator counts), fp32 otherwise or with
  // fp32_allreduce / communication_data_type "fp32".
  DType grad_dtype = DType::kF32;
  // The 1-bit optimizers' optimizer.params.comm_backend_name ("nccl" or "mpi") and
  // cuda_aware; "nccl" for the others, which allreduce through the engine's NCCL group.
  std::string comm_backend = "nccl";
  bool cuda_aware = false;
  // The scheduler's total steps (WarmupDecayLR, WarmupCosineLR: total_num_steps) and the
  // field that states them; nullopt when the config has no scheduler with a run length.
  std::optional<int64_t> total_steps;
  std::string total_steps_field;
  std::string scheduler_type;  // "" without a scheduler
  // Sentences naming each field that changes the answer and is not modelled by any engine,
  // and each unknown field. Every consumer prints and records them, with its own additions
  // for the typed fields above that it does not use (deepspeed_fields_ignored_by).
  std::vector<std::string> warnings;

  // A summary for results: the file and every typed field as resolved.
  nlohmann::json to_json() const;
};

// Reads a whole DeepSpeed config; `file` names it in errors and `prefix` its place in a
// larger document ("simulate.ds_config"), so fields read "simulate.ds_config.fp16.enabled".
DeepSpeedConfig parse_deepspeed_config(const nlohmann::json& config, const std::string& file,
                                       const std::string& prefix = "");
// Reads the file with hjson's leniencies (comments, trailing commas).
DeepSpeedConfig load_deepspeed_config(const std::string& path);
// A reference as documents write it: a path (read with the leniencies; `where`/`field`
// name the reference when the file cannot be read) or an inline object.
DeepSpeedConfig resolve_deepspeed_config(const nlohmann::json& ref, const std::string& where,
                                         const std::string& field);

// A file given where an engine's own experiment is expected: read strictly, unless it is a
// whole DeepSpeed config, which is read as DeepSpeed reads it (then *is_deepspeed is set), so
// `clbo train ds.json` and `clbo simulate ds.json ...` take a ds_config as it is.
nlohmann::json load_experiment_or_deepspeed_config(const std::string& path, bool* is_deepspeed);

// The fields clbo knows DeepSpeed to read at the config's top level (block "") or inside its
// "fp16", "bf16" and "zero_optimization" blocks; empty for any other block (the optimizer's
// params are checked by the optimizer's own parser).
std::vector<std::string> deepspeed_known_fields(const std::string& block);

// True when `doc` is a whole DeepSpeed config rather than a bare optimizer block: it holds
// an "optimizer" object, or any of DeepSpeed's top-level batch or precision fields.
bool is_whole_deepspeed_config(const nlohmann::json& doc);

// Where an optimizer block is expected (an experiment's optimizer entry), a whole config
// would have its other fields ignored; this refuses it, naming them and pointing at
// `instead` (e.g. "simulate.ds_config"). A bare block, or {"optimizer": {...}} alone, passes.
void require_optimizer_block(const nlohmann::json& block, const std::string& file,
                             const std::string& field, const std::string& instead);

// The uncompressed twin of a compressed kind, with the common parameters (lr, betas, eps,
// weight decay) kept; nullopt for Adam and Lamb.
std::optional<OptimizerConfig> uncompressed_twin(const OptimizerConfig& c);

// The typed fields an engine does not use, as warnings: `uses` lists the ones it models, of
// "batch", "precision", "backend", "scheduler" (a scheduler changes the learning rate over
// the run; total steps are the run length). Only the fields the config states are named.
std::vector<std::string> deepspeed_fields_ignored_by(const DeepSpeedConfig& c,
                                                     const std::vector<std::string>& uses,
                                                     const std::string& engine);

}  // namespace clbo
