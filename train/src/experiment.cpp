// Parsing and validating `clbo train` experiment files (fields: docs/convergence.md).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/optim/optimizer.hpp"
#include "clbo/schedule/schedule.hpp"
#include "clbo/train/broken_optimizers.hpp"
#include "clbo/train/model.hpp"
#include "clbo/train/trainer.hpp"

namespace clbo::train {

namespace {

constexpr int kMaxWorkers = 64;
// Bounds that keep a run finite: 10 million steps is weeks of CPU time for the smallest model.
constexpr int64_t kMaxSteps = 10'000'000;
constexpr int64_t kMaxBatch = int64_t{1} << 24;

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Reads {"warmup_fraction", "decay", "final_fraction"} over `base`.
LrSchedule read_lr_schedule(const nlohmann::json& obj, const std::string& file,
                            const std::string& prefix, LrSchedule base, int64_t steps) {
  ConfigReader r(obj, file, prefix);
  double warmup_fraction = base.total_steps > 0 && base.warmup_steps > 0
                               ? static_cast<double>(base.warmup_steps) / base.total_steps
                               : 0.0;
  warmup_fraction = r.number_in("warmup_fraction", warmup_fraction, 0.0, true, 1.0, false);
  const std::string decay =
      r.choice("decay", to_string(base.decay), {"linear", "cosine", "constant"});
  base.final_fraction = r.number_in("final_fraction", base.final_fraction, 0.0, true, 1.0, true);
  r.finish();
  base.decay = decay == "linear"   ? LrDecay::kLinear
               : decay == "cosine" ? LrDecay::kCosine
                                   : LrDecay::kConstant;
  base.total_steps = steps;
  base.warmup_steps = static_cast<int64_t>(std::llround(warmup_fraction * steps));
  return base;
}

// The canonical type name, or an InputError with the full list and a suggestion.
std::string canonical_type(const nlohmann::json& block, const std::string& file,
                           const std::string& field) {
  const auto it = block.find("type");
  if (it == block.end() || !it->is_string())
    throw InputError(file, field, it == block.end() ? "missing" : it->dump(),
                     "expected the optimizer's type name, e.g. \"OneBitAdam\"");
  const std::string type = it->get<std::string>();
  std::vector<std::string> known = optimizer_types();
  for (const auto& b : broken_optimizer_types()) known.push_back(b);
  for (const auto& k : known)
    if (iequals(k, type)) return k;
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  throw InputError(file, field, "\"" + type + "\"",
                   fmt::format("unknown optimizer; known: {}{}", list, did_you_mean(type, known)));
}

RunSpec read_run(const nlohmann::json& obj, const std::string& file, size_t index,
                 const ExperimentSpec& spec, const LrSchedule& base_lr) {
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
  run.optimizer = obj["optimizer"];
  run.optimizer_type = canonical_type(run.optimizer, file, prefix + ".optimizer.type");
  run.optimizer["type"] = run.optimizer_type;
  if (run.optimizer.contains("params") && !run.optimizer["params"].is_object())
    throw InputError(file, prefix + ".optimizer.params", run.optimizer["params"].dump(),
                     "expected an object");
  nlohmann::json& params = run.optimizer["params"];
  if (params.is_null()) params = nlohmann::json::object();

  // Freeze points as fractions of the run, so one recipe scales with the step count.
  const auto set_fraction = [&](const char* key, const char* param,
                                const std::vector<std::string>& types) {
    if (!obj.contains(key)) {
      r.ignore(key);
      return std::optional<double>();
    }
    const double f = r.number_in(key, 0.0, 0.0, false, 1.0, false);
    if (std::find(types.begin(), types.end(), run.optimizer_type) == types.end())
      r.fail(key, fmt::format("applies only to {}", fmt::join(types, ", ")));
    if (params.contains(param))
      r.fail(key, fmt::format("conflicts with optimizer.params.{}; give one of them", param));
    params[param] = std::max<int64_t>(1, static_cast<int64_t>(std::llround(f * spec.steps)));
    return std::optional<double>(f);
  };
  run.freeze_fraction = set_fraction(
      "freeze_fraction", "freeze_step",
      {"OneBitAdam", "OneBitLamb", "OneBitAdamNoErrorFeedback", "OneBitAdamUnfrozenVariance"});
  run.var_freeze_fraction = set_fraction("var_freeze_fraction", "var_freeze_step", {"ZeroOneAdam"});

  run.lr = base_lr;
  r.ignore("lr_schedule");
  if (obj.contains("lr_schedule"))
    run.lr =
        read_lr_schedule(obj["lr_schedule"], file, prefix + ".lr_schedule", base_lr, spec.steps);
  r.finish();

  // Build the optimizer once so every parameter is validated before any training starts.
  const std::string where = fmt::format("{} ({})", file, prefix);
  const ParamLayout probe = ParamLayout::from_sizes({64, 8});
  std::unique_ptr<Optimizer> opt =
      broken_optimizer_canonical(run.optimizer_type).empty()
          ? make_optimizer(run.optimizer, where, probe, spec.workers, 0)
          : make_broken_optimizer(run.optimizer, where, probe, spec.workers, 0);
  run.lr.peak = opt->lr();
  if (!(run.lr.peak > 0))
    throw InputError(where, "optimizer.params.lr", std::to_string(run.lr.peak),
                     "the peak learning rate must be positive");
  for (const std::string& w : phase_warnings(opt->config(), spec.steps))
    run.warnings.push_back(fmt::format("run '{}': {}", run.label, w));
  return run;
}

}  // namespace

ExperimentSpec parse_experiment(const nlohmann::json& j, const std::string& file,
                                size_t train_examples) {
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
  s.eval_every = r.integer("eval_every", std::max<int64_t>(1, (s.steps + 9) / 10), 1, kMaxSteps);
  s.micro_batch = r.integer("micro_batch", 256, 1, kMaxBatch);
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

std::string default_result_path(const std::string& experiment_path) {
  namespace fs = std::filesystem;
  const fs::path p(experiment_path);
  std::vector<std::string> parts;
  for (const auto& part : p.parent_path()) parts.push_back(part.string());
  // .../experiments/<sub...>/X.json -> .../results/<sub...>/X.json
  for (size_t i = parts.size(); i-- > 0;) {
    if (parts[i] == "experiments") {
      fs::path out;
      for (size_t k = 0; k < i; ++k) out /= parts[k];
      out /= "results";
      for (size_t k = i + 1; k < parts.size(); ++k) out /= parts[k];
      return (out / p.filename()).string();
    }
  }
  return (fs::path("results") / p.stem()).string() + ".json";
}

}  // namespace clbo::train
