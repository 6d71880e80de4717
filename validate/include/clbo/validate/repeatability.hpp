// The same grid measured more than once: how far each case's measured time moves from run to
// run on this machine, and what that leaves for any model to reach on one run.
//
// Input: two or more clbo.validate/1 results of one grid (their `config` equal but for its
// description). A case is matched across runs by its cluster, op, algorithm, bytes,
// optimizer and phase; only cases every run measured are compared, the rest are counted.
// Cases are grouped as in the run's summary: op cases by family and bound (the bound the
// first run gave them; it is the simulator's, from that run's shares), steps together.
//
// Per case: every run's measured_s, and the spread max/min − 1. Per group and run, two
// predictors scored like the target (median and max |rel_error|; steps: how many within
// ±15%):
//   - other_runs_median: the median of the *other* runs' measurements of the case. It knows
//     the case's typical time exactly (as far as the other runs tell it) and nothing of this
//     run's moment, so its error is the run-to-run noise alone: the least error a model of
//     the case's typical time can expect on one run;
//   - simulator: the run's own rel_error, as the file holds it (resimulate old work folders
//     first to score one model on every run).
// And per group, the simulator over the runs: each case's rel_error, median over the runs
// (the model against the case's typical measurement), scored the same way, with the count of
// cases whose error has one sign in every run (a bias of the model's, not noise).
// Each run records its machine.facts; runs whose facts differ were measured on different
// machines, and `warnings` says so: their other runs' median is not the noise alone.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::validate {

// One results file read back: its path (for the output and for errors) and its document.
struct ValidationRun {
  std::string file;
  nlohmann::json doc;
};

inline constexpr double kStepBand = 0.15;  // the steps' target band, as summarize() scores it

// Checks that every run is a complete clbo.validate/1 result of the grid `config` (the
// grid's JSON; descriptions may differ) and returns the comparison (schema
// clbo.validate.repeatability/1, less environment and experiment_file, which the command
// adds). Throws InputError naming the file and field for fewer than two runs, another
// schema, another grid, or a case without a positive measured_s.
nlohmann::json repeatability(const nlohmann::json& config, const std::vector<ValidationRun>& runs);

// The plain-text table printed after a comparison.
std::string repeatability_table(const nlohmann::json& r);

}  // namespace clbo::validate
