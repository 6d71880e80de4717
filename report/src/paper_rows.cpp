#include "clbo/report/paper_rows.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "clbo/core/error.hpp"

namespace clbo::report {

namespace {

// The simulated number a published quantity is compared with: the first step kind's
// breakdown (the rows are single-kind settings, as Table 1's) or the run's metrics.
double simulated_value(const nlohmann::json& run, const std::string& key) {
  const nlohmann::json& k0 = run["step_kinds"][0]["simulated"];
  const nlohmann::json& sim = run["simulated"];
  if (key == "fwd_ms" || key == "bwd_ms" || key == "optimizer_ms" || key == "compression_ms")
    return k0[key].get<double>();
  if (key == "allreduce_ms" || key == "comm_ms") return k0["comm_ms"].get<double>();
  if (key == "step_ms") return k0["time_ms"].get<double>();
  return sim[key].is_null() ? 0.0 : sim[key].get<double>();
}

const nlohmann::json& rows_of(const nlohmann::json& spec) {
  static const nlohmann::json none = nlohmann::json::array();
  if (!spec.is_object() || !spec.contains("simulate") || !spec["simulate"].is_object()) return none;
  const nlohmann::json& sim = spec["simulate"];
  return sim.contains("rows") && sim["rows"].is_array() ? sim["rows"] : none;
}

}  // namespace

const std::vector<std::string>& paper_row_quantities() {
  static const std::vector<std::string> q = {
      "fwd_ms",       "bwd_ms",           "optimizer_ms",      "compression_ms",
      "allreduce_ms", "comm_ms",          "step_ms",           "samples_per_s",
      "speedup",      "volume_reduction", "scaling_efficiency"};
  return q;
}

void check_paper_rows(const nlohmann::json& spec, const std::string& file) {
  const nlohmann::json& rows = rows_of(spec);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].is_object() || !rows[i].contains("paper") || !rows[i]["paper"].is_object())
      continue;  // the simulator's spec check reports a bad shape
    for (auto it = rows[i]["paper"].begin(); it != rows[i]["paper"].end(); ++it) {
      const std::string f = fmt::format("simulate.rows[{}].paper.{}", i, it.key());
      const auto& known = paper_row_quantities();
      if (std::find(known.begin(), known.end(), it.key()) == known.end())
        throw InputError(file, f, it.key(),
                         "unknown published quantity" + did_you_mean(it.key(), known));
      if (!it.value().is_number())
        throw InputError(file, f, it.value().dump(), "expected a number");
    }
  }
}

void attach_paper_rows(nlohmann::json& results, const std::string& file) {
  const nlohmann::json& spec = results["config"];
  check_paper_rows(spec, file);
  const nlohmann::json& rows = rows_of(spec);
  if (rows.empty()) return;
  nlohmann::json& runs = results["runs"];
  for (size_t r = 0; r < runs.size(); ++r) {
    if (!runs[r].contains("point") || !runs[r]["point"].is_number_unsigned() ||
        runs[r]["point"].get<size_t>() >= rows.size())
      throw InputError(file, fmt::format("runs[{}].point", r),
                       runs[r].value("point", nlohmann::json(nullptr)).dump(),
                       "every run must name the row it simulated");
    const nlohmann::json& row = rows[runs[r]["point"].get<size_t>()];
    if (!row.contains("paper")) continue;
    nlohmann::json& run = runs[r];
    nlohmann::json err = nlohmann::json::object();
    nlohmann::json paper = row["paper"];
    for (auto it = row["paper"].begin(); it != row["paper"].end(); ++it) {
      const double published = it.value().get<double>();
      err[it.key()] = 100.0 * (simulated_value(run, it.key()) - published) / published;
    }
    if (row.contains("paper_source") && row["paper_source"].is_string() &&
        !row["paper_source"].get<std::string>().empty())
      paper["source"] = row["paper_source"];
    run["paper"] = paper;
    run["simulated"]["error_pct_vs_paper"] = err;
  }
}

}  // namespace clbo::report
