// What `clbo simulate --format table|csv|json|md` prints: one row per run, with a labelled
// column per step kind ("<phase>_ms", the simulated time of one step of that kind) and one
// per --set field. Column names carry the units, so CSV cells are plain numbers that any
// CSV reader takes as numbers; a value a run does not have is an empty cell ("-" in the
// text table). The table renderers are the report's (report/document.hpp).
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/report/document.hpp"

namespace clbo::cli {

inline const std::vector<std::string>& simulate_formats() {
  static const std::vector<std::string> f = {"table", "csv", "json", "md"};
  return f;
}

// The step kinds of a run with their column labels: the phase, and "<phase>_2" for its
// second kind of the same phase.
inline std::vector<std::pair<std::string, const nlohmann::json*>> labelled_kinds(
    const nlohmann::json& run) {
  std::vector<std::pair<std::string, const nlohmann::json*>> out;
  std::vector<std::string> seen;
  for (const auto& k : run["step_kinds"]) {
    const std::string phase = k.value("phase", "step");
    const auto n = std::count(seen.begin(), seen.end(), phase);
    seen.push_back(phase);
    out.emplace_back(n == 0 ? phase : fmt::format("{}_{}", phase, n + 1), &k);
  }
  return out;
}

inline report::Table simulate_results_table(const nlohmann::json& results, bool plain_numbers) {
  const nlohmann::json& runs = results["runs"];
  std::vector<std::string> set_fields, kinds, paper_keys;
  auto add = [](std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  for (const auto& run : runs) {
    if (run.contains("set"))
      for (auto it = run["set"].begin(); it != run["set"].end(); ++it) add(set_fields, it.key());
    for (const auto& [label, k] : labelled_kinds(run)) add(kinds, label);
    if (run["simulated"].contains("error_pct_vs_paper"))
      for (auto it = run["simulated"]["error_pct_vs_paper"].begin();
           it != run["simulated"]["error_pct_vs_paper"].end(); ++it)
        add(paper_keys, it.key());
  }
  report::Table t;
  t.header = {"cluster", "gpus", "nodes", "gpu", "optimizer", "implementation"};
  for (const auto& f : set_fields) t.header.push_back(f);
  for (const char* h :
       {"batch_size", "micro_batch", "grad_acc", "samples_per_s", "time_h", "run_GB_per_gpu",
        "volume_reduction_x", "speedup_x", "scaling_efficiency_pct"})
    t.header.push_back(h);
  for (const auto& k : kinds) t.header.push_back(k + "_ms");
  for (const auto& k : paper_keys) t.header.push_back("vs_paper_" + k + "_pct");
  t.right_align.assign(t.header.size(), true);
  for (size_t c = 0; c < 6; ++c) t.right_align[c] = c == 1 || c == 2;

  const std::string missing = plain_numbers ? "" : "-";
  auto num = [&](const nlohmann::json& v, int decimals, double scale = 1) {
    if (!v.is_number()) return missing;
    const double x = v.get<double>() * scale;
    return plain_numbers ? fmt::format("{}", x) : fmt::format("{:.{}f}", x, decimals);
  };
  auto text = [](const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string() : v.dump();
  };
  for (const auto& run : runs) {
    const nlohmann::json& s = run["simulated"];
    std::vector<std::string> row = {text(run["cluster"]),   text(run["gpus"]),
                                    text(run["nodes"]),     text(run["gpu"]),
                                    text(run["optimizer"]), run.value("implementation", "clbo")};
    for (const auto& f : set_fields)
      row.push_back(run.contains("set") && run["set"].contains(f) ? text(run["set"][f]) : "");
    row.push_back(text(run["batch_size"]));
    row.push_back(text(run["micro_batch"]));
    row.push_back(text(run["grad_acc"]));
    row.push_back(num(s["samples_per_s"], 1));
    row.push_back(num(s["time_h"], 3));
    row.push_back(num(s["total_bytes_per_gpu"], 2, 1e-9));
    row.push_back(num(s["volume_reduction"], 2));
    row.push_back(num(s["speedup"], 2));
    row.push_back(num(s["scaling_efficiency"], 1, 100));
    const auto labelled = labelled_kinds(run);
    for (const auto& k : kinds) {
      const auto it = std::find_if(labelled.begin(), labelled.end(),
                                   [&](const auto& e) { return e.first == k; });
      row.push_back(it == labelled.end() ? missing : num((*it->second)["simulated"]["time_ms"], 1));
    }
    for (const auto& k : paper_keys) {
      const nlohmann::json& e = s.value("error_pct_vs_paper", nlohmann::json::object());
      row.push_back(e.contains(k) ? num(e[k], 1) : missing);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The results in one of simulate_formats().
inline std::string format_simulate_results(const nlohmann::json& results,
                                           const std::string& format) {
  if (format == "json") return results.dump(2) + "\n";
  const report::Table t = simulate_results_table(results, format == "csv");
  if (format == "csv") return report::render_csv(t);
  if (format == "md") return report::render_markdown_table(t);
  return report::render_text(t);
}

}  // namespace clbo::cli
