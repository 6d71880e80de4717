#include "summary_stats.hpp"

#include <cmath>
#include <map>

namespace clbo::train {

namespace {

struct Stats {
  double mean = 0, std = 0;
  size_t n = 0;
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

nlohmann::json stats_json(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  const Stats s = stats(v);
  return {{"mean", s.mean}, {"std", s.std}, {"n", s.n}, {"values", v}};
}

}  // namespace

nlohmann::json summarize_runs(const ExperimentSpec& spec, const nlohmann::json& runs) {
  struct Label {
    std::map<uint64_t, double> acc;  // by seed, completed runs only
    std::vector<double> bytes, samples_per_s, optim_per_step, grad_per_step, train_loss;
    size_t run = 0, diverged = 0;
    std::vector<int64_t> nan_steps;
  };
  std::map<std::string, Label> by_label;
  for (const auto& r : runs) {
    Label& l = by_label[r["label"].get<std::string>()];
    ++l.run;
    if (r["status"] != "complete") {
      ++l.diverged;
      if (r.contains("nan_step")) l.nan_steps.push_back(r["nan_step"].get<int64_t>());
      continue;
    }
    l.acc[r["seed"].get<uint64_t>()] = r["final_test_accuracy"].get<double>();
    l.bytes.push_back(r["comm"]["mean_total_bytes_sent_per_worker"].get<double>());
    l.train_loss.push_back(r["final_train_loss"].get<double>());
    const auto& t = r["timing"];
    l.samples_per_s.push_back(t["samples_per_s"].get<double>());
    l.optim_per_step.push_back(t["optimizer_comm_time_per_step_s"].get<double>());
    l.grad_per_step.push_back(t["gradient_time_per_step_s"].get<double>());
  }
  nlohmann::json out = nlohmann::json::array();
  for (const RunSpec& run : spec.runs) {
    const auto it = by_label.find(run.label);
    if (it == by_label.end()) continue;  // never started (experiment stopped early)
    const Label& l = it->second;
    std::vector<double> acc;
    for (const auto& [seed, a] : l.acc) acc.push_back(a);
    nlohmann::json e;
    e["label"] = run.label;
    e["optimizer_type"] = run.optimizer_type;
    e["baseline"] = run.baseline.empty() ? nlohmann::json() : nlohmann::json(run.baseline);
    e["seeds_run"] = l.run;
    e["seeds_not_complete"] = l.diverged;
    e["nan_steps"] = l.nan_steps;
    e["final_test_accuracy"] = stats_json(acc);
    e["final_train_loss"] = stats_json(l.train_loss);
    const Stats bytes = stats(l.bytes);
    e["mean_bytes_sent_per_worker"] =
        l.bytes.empty() ? nlohmann::json() : nlohmann::json(bytes.mean);
    e["gap_to_baseline_points"] = nullptr;
    e["comm_relative_to_baseline"] = nullptr;
    const auto b = by_label.find(run.baseline);
    if (!run.baseline.empty() && b != by_label.end()) {
      std::vector<double> gaps;  // paired by seed
      for (const auto& [seed, a] : l.acc) {
        const auto bs = b->second.acc.find(seed);
        if (bs != b->second.acc.end()) gaps.push_back(100.0 * (a - bs->second));
      }
      e["gap_to_baseline_points"] = stats_json(gaps);
      const Stats base_bytes = stats(b->second.bytes);
      if (!l.bytes.empty() && base_bytes.n && base_bytes.mean > 0)
        e["comm_relative_to_baseline"] = bytes.mean / base_bytes.mean;
    }
    const auto timing_mean = [](const std::vector<double>& v) {
      return v.empty() ? nlohmann::json() : nlohmann::json(stats(v).mean);
    };
    e["timing"] = {{"samples_per_s_mean", timing_mean(l.samples_per_s)},
                   {"optimizer_comm_time_per_step_s_mean", timing_mean(l.optim_per_step)},
                   {"gradient_time_per_step_s_mean", timing_mean(l.grad_per_step)}};
    out.push_back(e);
  }
  return out;
}

}  // namespace clbo::train
