// Typed optimizer configurations parsed from DeepSpeed-style JSON blocks.
//
// Accepted input: {"type": "OneBitAdam", "params": {...}} or a whole DeepSpeed config holding
// "optimizer": {...}. Type names are case-insensitive; parameter names are DeepSpeed's, plus
// the clbo extensions listed in docs/optimizers.md (nonfinite, comm_granularity, the compat_*
// flags). Every field is validated before any work; errors are InputError naming the file,
// the dotted field (`optimizer.params.lr`) and the value, with a suggestion for unknown names.
//
// This header and its library (clbo_schedule) depend on core only, so the simulator can
// read configs and schedules without linking kernels or collectives.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "clbo/core/names.hpp"
#include "clbo/core/schedule.hpp"

namespace clbo {

// The largest step count any step field (freeze_step, local_steps, ...) may name: far beyond
// any run, and small enough that step arithmetic never overflows.
inline constexpr int64_t kMaxStepCount = 1'000'000'000'000;

// The six optimizers of the papers, then three ablations the papers argue against
// (docs/reference/algorithms.md §9): they exist to show what breaks.
enum class OptimizerKind {
  kAdam,
  kLamb,
  kOneBitAdam,
  kOneBitLamb,
  kZeroOneAdam,
  kSlamb,
  kOneBitAdamNoErrorFeedback,
  kNaiveOneBitAdam,
  kNaiveOneBitLamb,
};

// DeepSpeed's spellings ("type" of an optimizer block), in enum order.
inline constexpr auto kOptimizerKindNames = name_table<OptimizerKind>({
    {OptimizerKind::kAdam, "Adam"},
    {OptimizerKind::kLamb, "Lamb"},
    {OptimizerKind::kOneBitAdam, "OneBitAdam"},
    {OptimizerKind::kOneBitLamb, "OneBitLamb"},
    {OptimizerKind::kZeroOneAdam, "ZeroOneAdam"},
    {OptimizerKind::kSlamb, "Slamb"},
    {OptimizerKind::kOneBitAdamNoErrorFeedback, "OneBitAdamNoErrorFeedback"},
    {OptimizerKind::kNaiveOneBitAdam, "NaiveOneBitAdam"},
    {OptimizerKind::kNaiveOneBitLamb, "NaiveOneBitLamb"},
});

// What a step does when some rank's gradient holds NaN or Inf.
enum class NonfinitePolicy {
  kError,  // throw clbo::Error naming rank, step and the first bad element (default)
  kSkip,   // all ranks agree through a 1-element flag allreduce, then skip the step
};

// How the 1-bit optimizers split their compressed allreduce.
enum class CommGranularity {
  kFlat,    // one call over the whole flat buffer (default)
  kTensor,  // one call per tensor of the layout (each with its own error buffers)
};

inline constexpr auto kNonfinitePolicyNames = name_table<NonfinitePolicy>(
    {{NonfinitePolicy::kError, "error"}, {NonfinitePolicy::kSkip, "skip"}});
inline constexpr auto kCommGranularityNames = name_table<CommGranularity>(
    {{CommGranularity::kFlat, "flat"}, {CommGranularity::kTensor, "tensor"}});

// Fields every optimizer has. Betas, eps and the rates are kept in double as parsed; the
// optimizers round them to fp32 once (see docs/optimizers.md, "Arithmetic").
struct CommonParams {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  NonfinitePolicy nonfinite = NonfinitePolicy::kError;
  bool operator==(const CommonParams&) const = default;
};

struct AdamParams {
  bool bias_correction = true;
  bool adam_w_mode = true;  // decoupled (AdamW) weight decay; false: L2 added to the gradient
  bool operator==(const AdamParams&) const = default;
};

struct LambParams {
  bool bias_correction = true;
  double max_coeff = 10.0, min_coeff = 0.01;
  bool operator==(const LambParams&) const = default;
};

struct OneBitAdamParams {
  int64_t freeze_step = 100000;
  CommGranularity comm_granularity = CommGranularity::kFlat;
  // DeepSpeed counts its initialisation call as step 1, so it runs freeze_step − 1 dense steps.
  bool compat_deepspeed_step_count = false;
  bool operator==(const OneBitAdamParams&) const = default;
};

struct OneBitLambParams {
  int64_t freeze_step = 100000;
  double max_coeff = 10.0, min_coeff = 0.01;
  double coeff_beta = 0.9;
  double factor_max = 4.0, factor_min = 0.5, factor_threshold = 0.1;
  CommGranularity comm_granularity = CommGranularity::kFlat;
  bool compat_deepspeed_step_count = false;
  // DeepSpeed leaves the fused buffer's padding tail holding the previous output; clbo
  // zeroes it unless this is set (flat granularity only).
  bool compat_keep_padding_tail = false;
  bool operator==(const OneBitLambParams&) const = default;
};

struct ZeroOneAdamParams {
  int64_t var_freeze_step = 100000;
  int64_t var_update_scaler = 16;     // κ: var_interval doubles every κ variance steps
  int64_t local_step_scaler = 32768;  // DeepSpeed's default is the typo 32678; both accepted
  int64_t local_step_clipper = 16;    // H: the cap of local_interval
  CommGranularity comm_granularity = CommGranularity::kFlat;
  // Shifts the step clock used by `step % var_interval` and `step % local_interval` by one,
  // as DeepSpeed's initialisation call does; the phase boundary is unchanged.
  bool compat_deepspeed_step_count = false;
  bool operator==(const ZeroOneAdamParams&) const = default;
};

struct SlambParams {
  double compress_ratio = 0.1;   // k: Bernoulli keep probability of the shared mask
  double beta3 = 0.99;           // freshness decay
  int64_t local_steps = 100;     // H: dense parameter sync when (t − 1) mod H == 0
  int64_t grad_size_thr = 9000;  // tensors with fewer elements (or 1-D) are always synced
  double max_coeff = 1000.0, min_coeff = 0.01;
  DType comm_dtype = DType::kF16;  // wire type of the compacted momentum allreduce
  uint64_t seed = 0;  // Philox key of the shared mask (docs/reference/algorithms.md §7b)
  bool operator==(const SlambParams&) const = default;
};

// 1-bit Adam with the compression error thrown away: both error buffers are zeroed before
// every compressed call. Otherwise exactly 1-bit Adam (warmup, frozen v, 1-bit momentum).
struct OneBitAdamNoErrorFeedbackParams {
  int64_t freeze_step = 100000;
  CommGranularity comm_granularity = CommGranularity::kFlat;
  bool operator==(const OneBitAdamNoErrorFeedbackParams&) const = default;
};

// The naive error-compensated 1-bit Adam of the 1-bit Adam paper's motivation: every step the
// *gradient* is 1-bit allreduced with error feedback and Adam (no bias correction, as 1-bit
// Adam) updates both m and v from it. dense_steps > 0 runs that many dense 1-bit-Adam warmup
// steps first (a variant, not the paper's scheme, which compresses from step 1).
struct NaiveOneBitAdamParams {
  int64_t dense_steps = 0;
  CommGranularity comm_granularity = CommGranularity::kFlat;
  bool operator==(const NaiveOneBitAdamParams&) const = default;
};

// The naive 1-bit LAMB the 1-bit LAMB paper motivates its design with: 1-bit Adam's scheme
// (dense LAMB warmup without bias correction, then v frozen and the momentum 1-bit allreduced
// with error feedback) with LAMB's trust ratio clamp(‖θ‖/‖u‖) recomputed every step from the
// compressed momentum: no frozen coefficient, no variance-based factor.
struct NaiveOneBitLambParams {
  int64_t freeze_step = 100000;
  double max_coeff = 10.0, min_coeff = 0.01;
  CommGranularity comm_granularity = CommGranularity::kFlat;
  bool operator==(const NaiveOneBitLambParams&) const = default;
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  CommonParams common;
  // Alternative i holds the params of OptimizerKind i.
  std::variant<AdamParams, LambParams, OneBitAdamParams, OneBitLambParams, ZeroOneAdamParams,
               SlambParams, OneBitAdamNoErrorFeedbackParams, NaiveOneBitAdamParams,
               NaiveOneBitLambParams>
      params;

  const std::string& type_name() const;  // canonical DeepSpeed spelling, e.g. "OneBitAdam"
  template <class T>
  const T& as() const {
    return std::get<T>(params);
  }
  bool operator==(const OptimizerConfig&) const = default;
};

// Parses and validates; `file` names the source in errors and `prefix` the block's place in
// it (e.g. "runs[2].optimizer": errors then name "runs[2].optimizer.params.lr").
OptimizerConfig parse_optimizer_config(const nlohmann::json& block, const std::string& file,
                                       const std::string& prefix = "");

// The canonical block {"type": ..., "params": {...}} with every default filled in, so results
// record exactly what ran. parse_optimizer_config(to_json(c)) == c.
nlohmann::json to_json(const OptimizerConfig& c);

// Canonical type names, in the order of OptimizerKind.
const std::vector<std::string>& optimizer_type_names();
const std::string& type_name(OptimizerKind kind);

// The number of uncompressed warmup steps of the kinds that start dense and switch to 1-bit
// compression (1-bit Adam and LAMB, their naive and no-error-feedback variants): freeze_step
// (NaiveOneBitAdam: dense_steps), or freeze_step − 1 (never below 0) with
// compat_deepspeed_step_count. Throws clbo::Error for the other kinds.
int64_t onebit_warmup_steps(const OptimizerConfig& c);

// The comm_granularity of a kind that has one (the 1-bit kinds), else kFlat.
CommGranularity comm_granularity(const OptimizerConfig& c);

}  // namespace clbo
