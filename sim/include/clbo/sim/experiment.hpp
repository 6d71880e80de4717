// `clbo simulate` experiments: a JSON spec (spec.hpp) → a results JSON (results_json.hpp)
// with its config, the environment, and every number under a key that states its
// provenance. The published values a spec's rows carry are compared by the report
// (report/paper_rows.hpp), not here.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::sim {

struct SimulateOptions {
  // Called after each (cluster, GPU count) group: done, total, a short label.
  std::function<void(int, int, const std::string&)> progress;
};

// Runs an experiment; `file` names it in errors. Returns the results document, which holds
// "warnings" (a list of sentences) when some optimizer's phase lies beyond the run.
nlohmann::json simulate_experiment(const nlohmann::json& spec, const std::string& file,
                                   const SimulateOptions& options = {});

// Validates an experiment completely (every field, presets, referenced files) without
// simulating anything: what `clbo simulate --check` and `clbo reproduce` run first. Returns
// the warnings the run would record (phases it never reaches, see phase_warnings).
std::vector<std::string> validate_experiment(const nlohmann::json& spec, const std::string& file);

}  // namespace clbo::sim
