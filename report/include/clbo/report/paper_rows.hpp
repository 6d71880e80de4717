// Published values beside simulated ones: the rows of a simulation spec may carry
// `"paper": {"allreduce_ms": ..., ...}` (and a `paper_source`), and the results of that
// spec get, per run, the published values under "paper" and the relative error of each
// matching simulated quantity under "simulated.error_pct_vs_paper". The comparison is the
// report's: the simulator only simulates.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::report {

// The quantities a row may state, each compared with the simulated number of the same name
// (allreduce_ms with the step's exposed communication, comm_ms).
const std::vector<std::string>& paper_row_quantities();

// Checks every rows[i].paper of a spec's simulate block: numbers only, known quantities.
// Throws InputError naming `file` and "simulate.rows[i].paper.KEY". A spec without rows
// passes.
void check_paper_rows(const nlohmann::json& spec, const std::string& file);

// Adds the published values and the errors to each run of `results` (a clbo.simulate/1
// document whose config is the spec): each run names its row as "point".
void attach_paper_rows(nlohmann::json& results, const std::string& file);

}  // namespace clbo::report
