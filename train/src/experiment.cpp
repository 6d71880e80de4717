// Parsing and validating `clbo train` experiment files (fields: docs/convergence.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <type_traits>
#include <variant>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/optim/optimizer.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "clbo/schedule/schedule.hpp"
#include "clbo/train/augment.hpp"
#include "clbo/train/experiment.hpp"
#include "clbo/train/model.hpp"

namespace clbo::train {

namespace {

constexpr int kMaxWorkers = 64;
// Bounds that keep a run finite: 10 million steps is weeks of CPU time for the smallest model.
constexpr int64_t kMaxSteps = 10'000'000;
constexpr int64_t kMaxBatch = int64_t{1} << 24;

// Reads {"warmup_fraction", "decay", "final_fraction"} over `base`.
LrSchedule read_lr_schedule(const nlohmann::json& obj, const std::string& file,
                            const std::string& prefix, LrSchedule base, int64_t steps) {
  ConfigReader r(obj, file, prefix);
  double warmup_fraction = base.total_steps > 0 && base.warmup_steps > 0
                               ? static_cast<double>(base.warmup_steps) / base.total_steps
                               : 0.0;
  warmup_fraction = r.number_in("warmup_fraction", warmup_fraction, 0.0, true, 1.0, false);
  const LrDecay decay = r.choice("decay", base.decay, kLrDecayNames);
  base.final_fraction = r.number_in("final_fraction", base.final_fraction, 0.0, true, 1.0, true);
  r.finish();
  base.decay = decay;
  base.total_steps = steps;
  base.warmup_steps = static_cast<int64_t>(std::llround(warmup_fraction * steps));
  return base;
}

// The kinds whose compression divides by a variance frozen at freeze_step (a step 0 freezes
// it before any update), and the experiment field that sets each kind's freeze step.
bool has_freeze_step(OptimizerKind k) {
  return k == OptimizerKind::kOneBitAdam || k == OptimizerKind::kOneBitLamb ||
         k == OptimizerKind::kOneBitAdamNoErrorFeedback || k == OptimizerKind::kNaiveOneBitLamb;
}

// The freeze_step field of a config whose kind has one, else null (C: optionally const).
template <class C>
auto freeze_step_field(C& c) {
  using Ptr = std::conditional_t<std::is_const_v<C>, const int64_t*, int64_t*>;
  return std::visit(
      [](auto& x) -> Ptr {
        if constexpr (requires { x.freeze_step; })
          return &x.freeze_step;
        else
          return nullptr;
      },
      c.params);
}

// Where a run's mechanisms fall in the experiment's steps 1 … T. A freeze at step 0 (the
// variance frozen before any update) and a SLAMB sync interval that never syncs after step 1
// are errors; a freeze at or beyond the last step (nothing compressed, see phase_warnings), a
// 0/1 Adam run with no local step, and a last step that leaves the ranks unsynchronised are
// warnings.
void check_run_length(const RunSpec& run, ExperimentSpec& spec, const std::string& file,
                      const std::string& prefix) {
  const int64_t T = spec.steps;
  const OptimizerConfig& c = run.optimizer;
  const auto warn = [&](const std::string& what) {
    spec.warnings.push_back(fmt::format("{}: run '{}': {}", file, run.label, what));
  };
  const auto field = [&](bool from_fraction, const char* fraction, const char* param) {
    return from_fraction ? fmt::format("{}.{}", prefix, fraction)
                         : fmt::format("{}.optimizer.params.{}", prefix, param);
  };
  if (has_freeze_step(c.kind)) {
    if (*freeze_step_field(c) == 0)
      throw InputError(
          file, field(run.freeze_fraction.has_value(), "freeze_fraction", "freeze_step"), "0",
          "freezes the variance before any update, so every compressed step divides "
          "by eps alone; give at least 1");
  }
  if (c.kind == OptimizerKind::kZeroOneAdam) {
    const auto& z = c.as<ZeroOneAdamParams>();
    const std::string f =
        field(run.var_freeze_fraction.has_value(), "var_freeze_fraction", "var_freeze_step");
    if (z.var_freeze_step == 0)
      throw InputError(file, f, "0",
                       "freezes the variance before any update, so every step divides by eps "
                       "alone; give at least 1");
    if (z.var_freeze_step < T) {  // else phase_warnings says the second phase never comes
      int64_t local = 0;
      for (int64_t t = z.var_freeze_step + 1; t <= T; ++t)
        local += !zero_one_adam_step(z, t).sync_step;
      if (local == 0)
        warn(
            fmt::format("takes no local step in its {} phase-2 steps (the local interval first "
                        "doubles after local_step_scaler = {} of them)",
                        T - z.var_freeze_step, z.local_step_scaler));
      else if (!zero_one_adam_step(z, T).sync_step)
        warn(
            fmt::format("the last step {} is a local step: the ranks end unsynchronised and the "
                        "final model is their mean",
                        T));
    }
  }
  if (c.kind == OptimizerKind::kSlamb) {
    const auto& sl = c.as<SlambParams>();
    if (sl.local_steps >= T)
      throw InputError(
          file, prefix + ".optimizer.params.local_steps", std::to_string(sl.local_steps),
          fmt::format("SLAMB averages the parameters when (t − 1) mod local_steps = 0, so a run "
                      "of {} steps would sync only at step 1; give at most {}",
                      T, T - 1));
    if (!slamb_param_sync_step(sl, T))
      warn(
          fmt::format("the last step {} is not a parameter sync (they come at t = 1 + k·{}): the "
                      "ranks end unsynchronised and the final model is their mean",
                      T, sl.local_steps));
  }
  // Phases the run never reaches (a warmup or variance freeze covering it), as the simulator
  // and replay state them.
  for (const std::string& w : phase_warnings(c, T)) warn(w);
}

MomentumMask read_momentum_mask(ConfigReader& r, const OptimizerConfig& c) {
  const MomentumMask rule = r.choice("exp_avg_mask", MomentumMask::kNone, kMomentumMaskNames);
  if (rule == MomentumMask::kNone) return rule;
  if (!has_freeze_step(c.kind) && c.kind != OptimizerKind::kZeroOneAdam)
    r.fail("exp_avg_mask",
           "\"zero_variance\" masks the coordinates whose variance freezes at 0, so it applies "
           "only to the kinds that freeze it (OneBitAdam, OneBitLamb, ZeroOneAdam, "
           "OneBitAdamNoErrorFeedback, NaiveOneBitLamb)");
  return MomentumMask::kZeroVariance;
}

RunSpec read_run(const nlohmann::json& obj, const std::string& file, size_t index,
                 ExperimentSpec& spec, const LrSchedule& base_lr) {
  const std::string prefix = fmt::format("runs[{}]", index);
  ConfigReader r(obj, file, prefix);
  RunSpec run;
  run.label = r.string("label", "");
  if (run.label.empty()) r.fail("label", "every run needs a non-empty label");
  run.baseline = r.string("baseline", "");
  r.string("paper", "");  // free text shown beside our numbers in the summary
  r.ignore("optimizer");
  if (!obj.contains("optimizer") || !obj["optimizer"].is_object())
    r.fail("optimizer", "expected a DeepSpeed-style block {\"type\": ..., \"params\": {...}}");
  require_optimizer_block(obj["optimizer"], file, prefix + ".optimizer", "\"ds_config\"");
  run.optimizer = parse_optimizer_config(obj["optimizer"], file, prefix + ".optimizer");
  const std::string type = run.optimizer.type_name();
  const nlohmann::json params = obj["optimizer"].value("params", nlohmann::json::object());

  // Freeze points as fractions of the run, so one recipe scales with the step count.
  const auto set_fraction = [&](const char* key, const char* param, bool applies,
                                const char* kinds) -> std::optional<std::pair<double, int64_t>> {
    if (!obj.contains(key)) {
      r.ignore(key);
      return std::nullopt;
    }
    const double f = r.number_in(key, 0.0, 0.0, false, 1.0, false);
    if (!applies) r.fail(key, fmt::format("applies only to {} (this run is {})", kinds, type));
    if (params.is_object() && params.contains(param))
      r.fail(key, fmt::format("conflicts with optimizer.params.{}; give one of them", param));
    return std::make_pair(f, std::max<int64_t>(1, std::llround(f * spec.steps)));
  };
  if (const auto f =
          set_fraction("freeze_fraction", "freeze_step", has_freeze_step(run.optimizer.kind),
                       "OneBitAdam, OneBitLamb, OneBitAdamNoErrorFeedback and "
                       "NaiveOneBitLamb")) {
    run.freeze_fraction = f->first;
    *freeze_step_field(run.optimizer) = f->second;
  }
  if (const auto f =
          set_fraction("var_freeze_fraction", "var_freeze_step",
                       run.optimizer.kind == OptimizerKind::kZeroOneAdam, "ZeroOneAdam")) {
    run.var_freeze_fraction = f->first;
    std::get<ZeroOneAdamParams>(run.optimizer.params).var_freeze_step = f->second;
  }
  run.momentum_mask = read_momentum_mask(r, run.optimizer);

  run.lr = base_lr;
  r.ignore("lr_schedule");
  if (obj.contains("lr_schedule"))
    run.lr =
        read_lr_schedule(obj["lr_schedule"], file, prefix + ".lr_schedule", base_lr, spec.steps);
  r.finish();
  check_run_length(run, spec, file, prefix);

  // Build the optimizer once so every parameter is validated before any training starts.
  const ParamLayout probe = ParamLayout::from_sizes({64, 8});
  const std::unique_ptr<Optimizer> opt = make_optimizer(run.optimizer, probe, spec.workers, 0);
  run.lr.peak = opt->lr();
  if (!(run.lr.peak > 0))
    throw InputError(file, prefix + ".optimizer.params.lr", std::to_string(run.lr.peak),
                     "the peak learning rate must be positive");
  return run;
}

// The experiment with a whole DeepSpeed config's settings written out as the experiment's
// own fields, so it goes through the one parse path: its optimizer beside the uncompressed
// twin (the baseline), the batch on `workers` GPUs by DeepSpeed's rule, and its scheduler's
// run length unless the experiment gives one.
nlohmann::json with_deepspeed_config(const nlohmann::json& j, const DeepSpeedConfig& ds,
                                     const std::string& file) {
  nlohmann::json out = j;
  out.erase("ds_config");
  const std::pair<const char*, const char*> owned[] = {
      {"runs", "its optimizer block, beside the uncompressed twin as the baseline"},
      {"batch_size", "train_batch_size"},
      {"micro_batch", "train_micro_batch_size_per_gpu"}};
  for (const auto& [key, there] : owned)
    if (j.contains(key))
      throw InputError(file, key, json_excerpt(j[key], 60),
                       fmt::format("ds_config sets this ({}); change it there or leave ds_config "
                                   "out",
                                   there));
  // The workers are the experiment's, else the GPU count the three batch fields imply.
  int64_t workers = 1;
  std::string where = "workers = 1 (the default)";
  if (j.contains("workers")) {
    workers = json_int64(j["workers"], file, "workers", 1, kMaxWorkers);
    where = fmt::format("workers = {}", workers);
  } else if (const auto w = ds.batch.implied_world_size()) {
    workers = *w;
    where = fmt::format("{} workers (train_batch_size / (micro-batch × accumulation))", workers);
    out["workers"] = workers;
  }
  const DeepSpeedBatch::Resolved b = ds.batch.resolve(workers, where);
  out["batch_size"] = b.micro_batch * b.grad_acc * workers;
  out["micro_batch"] = b.micro_batch;
  if (!j.contains("steps") && !j.contains("epochs") && ds.total_steps)
    out["steps"] = *ds.total_steps;
  nlohmann::json runs = nlohmann::json::array();
  if (ds.baseline)
    runs.push_back({{"label", ds.baseline->type_name()}, {"optimizer", to_json(*ds.baseline)}});
  nlohmann::json run = {{"label", ds.optimizer.type_name()}, {"optimizer", to_json(ds.optimizer)}};
  if (ds.baseline) run["baseline"] = ds.baseline->type_name();
  runs.push_back(std::move(run));
  out["runs"] = std::move(runs);
  return out;
}

}  // namespace

ExperimentSpec parse_experiment(const nlohmann::json& j, const std::string& file,
                                size_t train_examples) {
  if (j.is_object() && j.contains("ds_config")) {
    const DeepSpeedConfig ds = resolve_deepspeed_config(j["ds_config"], file, "ds_config");
    ExperimentSpec s = parse_experiment(with_deepspeed_config(j, ds, file), file, train_examples);
    s.config = j;
    // The transport does not change the numbers (the --backend flag picks it); the rest that
    // the trainer does not model is named.
    std::vector<std::string> w;
    for (const std::string& x : ds.warnings) w.push_back(fmt::format("{}: {}", ds.file, x));
    for (const std::string& x : deepspeed_fields_ignored_by(ds, {"batch", "backend"}, "clbo train"))
      w.push_back(fmt::format("{}: {}", ds.file, x));
    s.warnings.insert(s.warnings.begin(), w.begin(), w.end());
    return s;
  }
  ExperimentSpec s;
  s.file = file;
  s.config = j;
  ConfigReader r(j, file);
  s.description = r.string("description", "");
  r.string("source", "");
  const std::string model = r.string("model", "mlp");
  if (std::find(model_names().begin(), model_names().end(), model) == model_names().end())
    make_model(model, file, "model");  // throws the InputError with a suggestion
  s.model = model;
  s.data_dir = r.string("data_dir", "");

  s.batch_size = r.integer("batch_size", 1024, 1, kMaxBatch);
  s.workers = r.integer<int>("workers", 1, 1, 1 << 20);
  if (s.workers > kMaxWorkers)
    r.fail("workers", fmt::format("at most {} workers are supported", kMaxWorkers));
  if (s.workers > s.batch_size)
    r.fail("workers", fmt::format("p = {} exceeds the batch size {}: every worker needs at "
                                  "least one example",
                                  s.workers, s.batch_size));
  if (s.batch_size % s.workers != 0)
    r.fail("batch_size", fmt::format("must be divisible by workers = {} (each worker takes an "
                                     "equal shard); e.g. {}",
                                     s.workers, s.batch_size / s.workers * s.workers));
  if (static_cast<size_t>(s.batch_size) > train_examples)
    r.fail("batch_size", fmt::format("exceeds the {} training examples", train_examples));

  const bool has_steps = j.contains("steps"), has_epochs = j.contains("epochs");
  if (has_steps == has_epochs) {
    r.ignore("steps");
    r.ignore("epochs");
    if (has_steps) r.fail("epochs", "give either \"steps\" or \"epochs\", not both");
    r.fail("steps", "give the run length as \"steps\" or \"epochs\"");
  }
  if (has_steps) {
    s.steps = r.integer("steps", 1, 1, kMaxSteps);
    r.ignore("epochs");
  } else {
    const double epochs = r.number_in("epochs", 1.0, 0.0, false, 1e6, true);
    r.ignore("steps");
    s.steps = static_cast<int64_t>(
        std::floor(epochs * static_cast<double>(train_examples) / s.batch_size));
    if (s.steps < 1) r.fail("epochs", "gives less than one step");
    if (s.steps > kMaxSteps)
      r.fail("epochs",
             fmt::format("gives {} steps, more than the {} a run may have", s.steps, kMaxSteps));
  }
  s.evaluate = r.boolean("evaluate", true);
  if (!s.evaluate && j.contains("eval_every"))
    r.fail("eval_every", "has no meaning with \"evaluate\": false (nothing is evaluated)");
  s.eval_every = r.integer("eval_every", std::max<int64_t>(1, (s.steps + 9) / 10), 1, kMaxSteps);
  s.micro_batch = r.integer("micro_batch", 256, 1, kMaxBatch);
  // More than 8 of 28 pixels would move about a third of an item out of the picture.
  s.random_shift = r.integer<int>("random_shift", 0, 0, kMaxPixelShift);
  s.continue_after_nan = r.boolean("continue_after_nan", false);

  s.seeds = r.integers<uint64_t>("seeds", s.seeds, 0, UINT64_MAX);
  std::set<uint64_t> seen;
  for (const uint64_t seed : s.seeds)
    if (!seen.insert(seed).second) r.fail("seeds", fmt::format("seed {} repeats", seed));

  LrSchedule base;
  base.total_steps = s.steps;
  base.warmup_steps = static_cast<int64_t>(std::llround(0.1 * s.steps));
  r.ignore("lr_schedule");
  if (j.contains("lr_schedule"))
    base = read_lr_schedule(j["lr_schedule"], file, "lr_schedule", base, s.steps);

  r.ignore("runs");
  if (!j.contains("runs") || !j["runs"].is_array() || j["runs"].empty())
    r.fail("runs", "expected a non-empty array of runs");
  r.finish();
  std::set<std::string> labels;
  for (size_t i = 0; i < j["runs"].size(); ++i) {
    s.runs.push_back(read_run(j["runs"][i], file, i, s, base));
    if (!labels.insert(s.runs.back().label).second)
      throw InputError(file, fmt::format("runs[{}].label", i), "\"" + s.runs.back().label + "\"",
                       "labels must be unique");
  }
  std::vector<std::string> label_list(labels.begin(), labels.end());
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const std::string& b = s.runs[i].baseline;
    if (!b.empty() && !labels.count(b))
      throw InputError(file, fmt::format("runs[{}].baseline", i), "\"" + b + "\"",
                       "names no run of this experiment" + did_you_mean(b, label_list));
    if (b == s.runs[i].label)
      throw InputError(file, fmt::format("runs[{}].baseline", i), "\"" + b + "\"",
                       "a run cannot be its own baseline");
  }
  return s;
}

ExperimentSpec load_experiment(const std::string& path, size_t train_examples) {
  return parse_experiment(load_json_file(path), path, train_examples);
}

}  // namespace clbo::train
