#include "clbo/schedule/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/layout.hpp"

namespace clbo {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A DeepSpeed parameter clbo accepts only at one value (its behaviour is not implemented, or
// is fixed); any other value is an error rather than being silently ignored.
void require_bool(ConfigReader& r, const std::string& key, bool only, const std::string& why) {
  if (r.boolean(key, only) != only) r.fail(key, why);
}

// DeepSpeed parameters that describe its transport (CUDA-aware MPI, NCCL vs MPI backend).
// clbo picks the backend from the engine, so these are accepted and do not change numbers.
void accept_transport_params(ConfigReader& r) {
  r.boolean("cuda_aware", false);
  r.choice("comm_backend_name", "nccl", {"nccl", "mpi", "hccl", "compressed"});
}

CommonParams read_common(ConfigReader& r, double default_eps) {
  CommonParams c;
  c.lr = r.fp32_number("lr", c.lr);
  if (!(c.lr > 0)) r.fail("lr", "the learning rate must be > 0");
  const auto betas = r.betas("betas", {c.beta1, c.beta2});
  c.beta1 = betas.first;
  c.beta2 = betas.second;
  c.eps = r.fp32_number("eps", default_eps);
  if (!(c.eps > 0)) r.fail("eps", "must be > 0 (it keeps m/(sqrt(v)+eps) finite)");
  c.weight_decay = r.fp32_number("weight_decay", c.weight_decay);
  if (c.weight_decay < 0) r.fail("weight_decay", "must be >= 0");
  c.nonfinite = r.choice("nonfinite", NonfinitePolicy::kError, kNonfinitePolicyNames);
  return c;
}

void read_trust_clamp(ConfigReader& r, double& min_coeff, double& max_coeff) {
  min_coeff = r.fp32_number("min_coeff", min_coeff);
  if (min_coeff < 0) r.fail("min_coeff", "must be >= 0");
  max_coeff = r.fp32_number("max_coeff", max_coeff);
  if (max_coeff < min_coeff)
    r.fail("max_coeff", fmt::format("must be >= min_coeff ({})", min_coeff));
}

// A decay rate in [0, 1) that the kernels use in fp32, where it must stay below 1.
double read_decay(ConfigReader& r, const std::string& key, double def) {
  const double d = r.number_in(key, def, 0, true, 1, false);
  if (static_cast<float>(d) >= 1.0f)
    r.fail(key, fmt::format("rounds to 1 in fp32, in which it is used; the largest fp32 value "
                            "below 1 is {:.9g}",
                            static_cast<double>(std::nextafter(1.0f, 0.0f))));
  return d;
}

CommGranularity read_granularity(ConfigReader& r) {
  return r.choice("comm_granularity", CommGranularity::kFlat, kCommGranularityNames);
}

// Parameters DeepSpeed's 1-bit optimizers take but never use in their update (bias
// correction is off in both phases; max_grad_norm is stored and unused; eps sits outside
// the square root).
void accept_onebit_deepspeed_params(ConfigReader& r) {
  r.boolean("bias_correction", true);
  r.number("max_grad_norm", 0.0);
  require_bool(r, "eps_inside_sqrt", false,
               "clbo adds eps outside the square root, as DeepSpeed's 1-bit optimizers do");
  require_bool(r, "amsgrad", false, "the AMSGrad variant is not supported (nor by DeepSpeed)");
  accept_transport_params(r);
}

AdamParams read_adam(ConfigReader& r) {
  AdamParams a;
  a.bias_correction = r.boolean("bias_correction", a.bias_correction);
  a.adam_w_mode = r.boolean("adam_w_mode", a.adam_w_mode);
  require_bool(r, "amsgrad", false, "the AMSGrad variant is not supported");
  r.boolean("torch_adam", false);  // DeepSpeed: which implementation runs; same math
  return a;
}

LambParams read_lamb(ConfigReader& r) {
  LambParams l;
  l.bias_correction = r.boolean("bias_correction", l.bias_correction);
  read_trust_clamp(r, l.min_coeff, l.max_coeff);
  require_bool(r, "amsgrad", false, "the AMSGrad variant is not supported");
  require_bool(r, "eps_inside_sqrt", false, "clbo adds eps outside the square root");
  if (r.number("max_grad_norm", 0.0) != 0.0)
    r.fail("max_grad_norm", "global gradient clipping is not implemented; use 0");
  return l;
}

OneBitAdamParams read_onebit_adam(ConfigReader& r) {
  OneBitAdamParams o;
  o.freeze_step = r.integer("freeze_step", o.freeze_step, 0, kMaxStepCount);
  o.comm_granularity = read_granularity(r);
  o.compat_deepspeed_step_count = r.boolean("compat_deepspeed_step_count", false);
  accept_onebit_deepspeed_params(r);
  return o;
}

OneBitLambParams read_onebit_lamb(ConfigReader& r) {
  OneBitLambParams o;
  o.freeze_step = r.integer("freeze_step", o.freeze_step, 0, kMaxStepCount);
  read_trust_clamp(r, o.min_coeff, o.max_coeff);
  o.coeff_beta = read_decay(r, "coeff_beta", o.coeff_beta);
  o.factor_min = r.number_in("factor_min", o.factor_min, 0, false, kInf, false);
  o.factor_max = r.fp32_number("factor_max", o.factor_max);
  if (o.factor_max < o.factor_min)
    r.fail("factor_max", fmt::format("must be >= factor_min ({})", o.factor_min));
  o.factor_threshold = r.number_in("factor_threshold", o.factor_threshold, 0, true, kInf, false);
  o.comm_granularity = read_granularity(r);
  o.compat_deepspeed_step_count = r.boolean("compat_deepspeed_step_count", false);
  o.compat_keep_padding_tail = r.boolean("compat_keep_padding_tail", false);
  if (o.compat_keep_padding_tail && o.comm_granularity != CommGranularity::kFlat)
    r.fail("compat_keep_padding_tail",
           "needs comm_granularity \"flat\" (DeepSpeed's tail belongs to the fused buffer)");
  accept_onebit_deepspeed_params(r);
  return o;
}

ZeroOneAdamParams read_zero_one_adam(ConfigReader& r) {
  ZeroOneAdamParams z;
  z.var_freeze_step = r.integer("var_freeze_step", z.var_freeze_step, 0, kMaxStepCount);
  z.var_update_scaler = r.integer("var_update_scaler", z.var_update_scaler, 1, kMaxStepCount);
  z.local_step_scaler = r.integer("local_step_scaler", z.local_step_scaler, 1, kMaxStepCount);
  z.local_step_clipper = r.integer("local_step_clipper", z.local_step_clipper, 1, kMaxStepCount);
  z.comm_granularity = read_granularity(r);
  z.compat_deepspeed_step_count = r.boolean("compat_deepspeed_step_count", false);
  accept_onebit_deepspeed_params(r);
  return z;
}

SlambParams read_slamb(ConfigReader& r) {
  SlambParams s;
  s.compress_ratio = r.number_in("compress_ratio", s.compress_ratio, 0, false, 1, true);
  s.beta3 = read_decay(r, "beta3", s.beta3);
  s.local_steps = r.integer("local_steps", s.local_steps, 1, kMaxStepCount);
  s.grad_size_thr =
      r.integer("grad_size_thr", s.grad_size_thr, 0, static_cast<int64_t>(kMaxLayoutElements));
  read_trust_clamp(r, s.min_coeff, s.max_coeff);
  s.comm_dtype = r.choice("comm_dtype", DType::kF16, kDTypeNames, {DType::kF16, DType::kF32});
  s.seed = r.integer<uint64_t>("seed", 0, 0, UINT64_MAX);
  return s;
}

OneBitAdamNoErrorFeedbackParams read_onebit_adam_no_ef(ConfigReader& r) {
  OneBitAdamNoErrorFeedbackParams o;
  o.freeze_step = r.integer("freeze_step", o.freeze_step, 0, kMaxStepCount);
  o.comm_granularity = read_granularity(r);
  accept_onebit_deepspeed_params(r);
  return o;
}

NaiveOneBitAdamParams read_naive_onebit_adam(ConfigReader& r) {
  NaiveOneBitAdamParams o;
  o.dense_steps = r.integer("dense_steps", o.dense_steps, 0, kMaxStepCount);
  o.comm_granularity = read_granularity(r);
  accept_onebit_deepspeed_params(r);
  return o;
}

NaiveOneBitLambParams read_naive_onebit_lamb(ConfigReader& r) {
  NaiveOneBitLambParams o;
  o.freeze_step = r.integer("freeze_step", o.freeze_step, 0, kMaxStepCount);
  read_trust_clamp(r, o.min_coeff, o.max_coeff);
  o.comm_granularity = read_granularity(r);
  accept_onebit_deepspeed_params(r);
  return o;
}

OptimizerKind read_kind(const nlohmann::json& opt, const std::string& file,
                        const std::string& field) {
  const auto it = opt.find("type");
  if (it == opt.end())
    throw InputError(file, field, "missing",
                     fmt::format("an optimizer block needs \"type\", one of {}",
                                 fmt::join(optimizer_type_names(), ", ")));
  if (!it->is_string()) throw InputError(file, field, it->dump(), "expected a string");
  const std::string name = it->get<std::string>();
  // DeepSpeed matches the type case-insensitively ("onebitadam" works there).
  for (const auto& e : kOptimizerKindNames.entries)
    if (lower(e.name) == lower(name)) return e.value;
  const auto& names = optimizer_type_names();
  throw InputError(file, field, it->dump(),
                   fmt::format("unknown optimizer type{} (known: {})", did_you_mean(name, names),
                               fmt::join(names, ", ")));
}

}  // namespace

const std::vector<std::string>& optimizer_type_names() {
  static const std::vector<std::string> names = kOptimizerKindNames.names();
  return names;
}

const std::string& type_name(OptimizerKind kind) {
  // The table lists the kinds in enum order, so the kind is its own index.
  static_assert([] {
    for (size_t i = 0; i < kOptimizerKindNames.entries.size(); ++i)
      if (static_cast<size_t>(kOptimizerKindNames.entries[i].value) != i) return false;
    return true;
  }());
  return optimizer_type_names()[static_cast<size_t>(kind)];
}

const std::string& OptimizerConfig::type_name() const {
  return clbo::type_name(kind);
}

OptimizerConfig parse_optimizer_config(const nlohmann::json& block, const std::string& file,
                                       const std::string& block_prefix) {
  if (!block.is_object())
    throw InputError(file, block_prefix.empty() ? "(root)" : block_prefix, block.dump(),
                     "expected a JSON object");
  // A whole DeepSpeed config carries the block under "optimizer"; its other sections
  // (batch sizes, fp16, ZeRO, ...) belong to other engines and are not read here.
  const bool whole_config = block.contains("optimizer");
  const nlohmann::json& opt = whole_config ? block.at("optimizer") : block;
  const std::string inner = whole_config ? "optimizer" : "";
  const std::string prefix = block_prefix.empty() ? inner
                             : inner.empty()      ? block_prefix
                                                  : block_prefix + "." + inner;
  ConfigReader top(opt, file, prefix);

  OptimizerConfig c;
  c.kind = read_kind(opt, file, top.field("type"));
  top.ignore("type");

  static const nlohmann::json kEmpty = nlohmann::json::object();
  const auto pit = opt.find("params");
  const nlohmann::json& params = pit == opt.end() || pit->is_null() ? kEmpty : *pit;
  top.ignore("params");
  top.finish();

  ConfigReader r(params, file, top.field("params"));
  c.common = read_common(r, c.kind == OptimizerKind::kSlamb ? 1e-6 : 1e-8);
  switch (c.kind) {
    case OptimizerKind::kAdam:
      c.params = read_adam(r);
      break;
    case OptimizerKind::kLamb:
      c.params = read_lamb(r);
      break;
    case OptimizerKind::kOneBitAdam:
      c.params = read_onebit_adam(r);
      break;
    case OptimizerKind::kOneBitLamb:
      c.params = read_onebit_lamb(r);
      break;
    case OptimizerKind::kZeroOneAdam:
      c.params = read_zero_one_adam(r);
      break;
    case OptimizerKind::kSlamb:
      c.params = read_slamb(r);
      break;
    case OptimizerKind::kOneBitAdamNoErrorFeedback:
      c.params = read_onebit_adam_no_ef(r);
      break;
    case OptimizerKind::kNaiveOneBitAdam:
      c.params = read_naive_onebit_adam(r);
      break;
    case OptimizerKind::kNaiveOneBitLamb:
      c.params = read_naive_onebit_lamb(r);
      break;
  }
  r.finish();
  return c;
}

nlohmann::json to_json(const OptimizerConfig& c) {
  nlohmann::json p;
  p["lr"] = c.common.lr;
  p["betas"] = {c.common.beta1, c.common.beta2};
  p["eps"] = c.common.eps;
  p["weight_decay"] = c.common.weight_decay;
  p["nonfinite"] = kNonfinitePolicyNames.name(c.common.nonfinite);
  std::visit(
      [&p](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, AdamParams>) {
          p["bias_correction"] = x.bias_correction;
          p["adam_w_mode"] = x.adam_w_mode;
        } else if constexpr (std::is_same_v<T, LambParams>) {
          p["bias_correction"] = x.bias_correction;
          p["max_coeff"] = x.max_coeff;
          p["min_coeff"] = x.min_coeff;
        } else if constexpr (std::is_same_v<T, OneBitAdamParams>) {
          p["freeze_step"] = x.freeze_step;
          p["comm_granularity"] = kCommGranularityNames.name(x.comm_granularity);
          p["compat_deepspeed_step_count"] = x.compat_deepspeed_step_count;
        } else if constexpr (std::is_same_v<T, OneBitLambParams>) {
          p["freeze_step"] = x.freeze_step;
          p["max_coeff"] = x.max_coeff;
          p["min_coeff"] = x.min_coeff;
          p["coeff_beta"] = x.coeff_beta;
          p["factor_max"] = x.factor_max;
          p["factor_min"] = x.factor_min;
          p["factor_threshold"] = x.factor_threshold;
          p["comm_granularity"] = kCommGranularityNames.name(x.comm_granularity);
          p["compat_deepspeed_step_count"] = x.compat_deepspeed_step_count;
          p["compat_keep_padding_tail"] = x.compat_keep_padding_tail;
        } else if constexpr (std::is_same_v<T, ZeroOneAdamParams>) {
          p["var_freeze_step"] = x.var_freeze_step;
          p["var_update_scaler"] = x.var_update_scaler;
          p["local_step_scaler"] = x.local_step_scaler;
          p["local_step_clipper"] = x.local_step_clipper;
          p["comm_granularity"] = kCommGranularityNames.name(x.comm_granularity);
          p["compat_deepspeed_step_count"] = x.compat_deepspeed_step_count;
        } else if constexpr (std::is_same_v<T, OneBitAdamNoErrorFeedbackParams>) {
          p["freeze_step"] = x.freeze_step;
          p["comm_granularity"] = kCommGranularityNames.name(x.comm_granularity);
        } else if constexpr (std::is_same_v<T, NaiveOneBitAdamParams>) {
          p["dense_steps"] = x.dense_steps;
          p["comm_granularity"] = kCommGranularityNames.name(x.comm_granularity);
        } else if constexpr (std::is_same_v<T, NaiveOneBitLambParams>) {
          p["freeze_step"] = x.freeze_step;
          p["max_coeff"] = x.max_coeff;
          p["min_coeff"] = x.min_coeff;
          p["comm_granularity"] = kCommGranularityNames.name(x.comm_granularity);
        } else {
          static_assert(std::is_same_v<T, SlambParams>);
          p["compress_ratio"] = x.compress_ratio;
          p["beta3"] = x.beta3;
          p["local_steps"] = x.local_steps;
          p["grad_size_thr"] = x.grad_size_thr;
          p["max_coeff"] = x.max_coeff;
          p["min_coeff"] = x.min_coeff;
          p["comm_dtype"] = to_string(x.comm_dtype);
          p["seed"] = x.seed;
        }
      },
      c.params);
  return nlohmann::json{{"type", c.type_name()}, {"params", p}};
}

int64_t onebit_warmup_steps(const OptimizerConfig& c) {
  switch (c.kind) {
    case OptimizerKind::kOneBitAdam: {
      const auto& o = c.as<OneBitAdamParams>();
      return o.compat_deepspeed_step_count ? std::max<int64_t>(0, o.freeze_step - 1)
                                           : o.freeze_step;
    }
    case OptimizerKind::kOneBitLamb: {
      const auto& o = c.as<OneBitLambParams>();
      return o.compat_deepspeed_step_count ? std::max<int64_t>(0, o.freeze_step - 1)
                                           : o.freeze_step;
    }
    case OptimizerKind::kOneBitAdamNoErrorFeedback:
      return c.as<OneBitAdamNoErrorFeedbackParams>().freeze_step;
    case OptimizerKind::kNaiveOneBitAdam:
      return c.as<NaiveOneBitAdamParams>().dense_steps;
    case OptimizerKind::kNaiveOneBitLamb:
      return c.as<NaiveOneBitLambParams>().freeze_step;
    default:
      throw Error("onebit_warmup_steps: " + c.type_name() +
                  " does not switch from dense to 1-bit compression");
  }
}

CommGranularity comm_granularity(const OptimizerConfig& c) {
  return std::visit(
      [](const auto& x) {
        if constexpr (requires { x.comm_granularity; })
          return x.comm_granularity;
        else
          return CommGranularity::kFlat;
      },
      c.params);
}

}  // namespace clbo
