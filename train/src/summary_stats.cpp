#include "summary_stats.hpp"

#include <algorithm>
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

// Two-sided 95% quantiles of Student's t with 1 … 10 degrees of freedom.
double t95(size_t dof) {
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571,
                                  2.447,  2.365, 2.306, 2.262, 2.228};
  return dof == 0 ? 0.0 : dof <= 10 ? kT[dof - 1] : 1.96;
}

nlohmann::json stats_json(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  const Stats s = stats(v);
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {{"mean", s.mean},
          {"std", s.std},
          {"n", s.n},
          {"min", *lo},
          {"max", *hi},
          // Half-width of the 95% confidence interval of the mean (Student's t; 0 for n = 1).
          {"ci95", s.n > 1 ? t95(s.n - 1) * s.std / std::sqrt(static_cast<double>(s.n)) : 0.0},
          {"values", v}};
}

// Paired by seed: scale·(a − b) for every seed both completed.
std::vector<double> paired(const std::map<uint64_t, double>& a, const std::map<uint64_t, double>& b,
                           double scale) {
  std::vector<double> d;
  for (const auto& [seed, x] : a) {
    const auto it = b.find(seed);
    if (it != b.end()) d.push_back(scale * (x - it->second));
  }
  return d;
}

}  // namespace

nlohmann::json summarize_runs(const ExperimentSpec& spec, const nlohmann::json& runs) {
  struct Label {
    std::map<uint64_t, double> acc, train_set_loss;  // by seed, completed runs only
    std::vector<double> bytes, samples_per_s, optim_per_step, grad_per_step, train_loss;
    size_t run = 0, diverged = 0;
    std::vector<int64_t> nan_steps;
  };
  std::map<std::string, Label> by_label;
  for (const auto& r : runs) {
    Label& l = by_label[r.at("label").get<std::string>()];
    ++l.run;
    if (r.at("status") != "complete") {
      ++l.diverged;
      if (r.contains("nan_step")) l.nan_steps.push_back(r.at("nan_step").get<int64_t>());
      continue;
    }
    if (!r.at("final_test_accuracy").is_null())  // null: an experiment with "evaluate": false
      l.acc[r.at("seed").get<uint64_t>()] = r.at("final_test_accuracy").get<double>();
    l.bytes.push_back(r.at("comm").at("mean_total_bytes_sent_per_worker").get<double>());
    l.train_loss.push_back(r.at("final_train_loss").get<double>());
    if (r.contains("final_train_set_loss") && !r.at("final_train_set_loss").is_null())
      l.train_set_loss[r.at("seed").get<uint64_t>()] = r.at("final_train_set_loss").get<double>();
    const auto& t = r.at("timing");
    l.samples_per_s.push_back(t.at("samples_per_s").get<double>());
    l.optim_per_step.push_back(t.at("optimizer_comm_time_per_step_s").get<double>());
    l.grad_per_step.push_back(t.at("gradient_time_per_step_s").get<double>());
  }
  nlohmann::json out = nlohmann::json::array();
  for (const RunSpec& run : spec.runs) {
    const auto it = by_label.find(run.label);
    if (it == by_label.end()) continue;  // never started (experiment stopped early)
    const Label& l = it->second;
    std::vector<double> acc, set_loss;
    for (const auto& [seed, a] : l.acc) acc.push_back(a);
    for (const auto& [seed, x] : l.train_set_loss) set_loss.push_back(x);
    nlohmann::json e;
    e["label"] = run.label;
    e["optimizer_type"] = run.optimizer.type_name();
    e["baseline"] = run.baseline.empty() ? nlohmann::json() : nlohmann::json(run.baseline);
    e["seeds_run"] = l.run;
    e["seeds_not_complete"] = l.diverged;
    e["nan_steps"] = l.nan_steps;
    e["final_test_accuracy"] = stats_json(acc);
    e["final_train_loss"] = stats_json(l.train_loss);
    e["final_train_set_loss"] = stats_json(set_loss);
    const Stats bytes = stats(l.bytes);
    e["mean_bytes_sent_per_worker"] =
        l.bytes.empty() ? nlohmann::json() : nlohmann::json(bytes.mean);
    e["gap_to_baseline_points"] = nullptr;
    e["train_set_loss_gap_to_baseline"] = nullptr;
    e["comm_relative_to_baseline"] = nullptr;
    const auto b = by_label.find(run.baseline);
    if (!run.baseline.empty() && b != by_label.end()) {
      e["gap_to_baseline_points"] = stats_json(paired(l.acc, b->second.acc, 100.0));
      e["train_set_loss_gap_to_baseline"] =
          stats_json(paired(l.train_set_loss, b->second.train_set_loss, 1.0));
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
