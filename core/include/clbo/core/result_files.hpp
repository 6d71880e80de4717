// Where an engine's results go by default, and what of a results document two runs of one
// config must agree on. Shared by every engine (simulate, train, validate) so that each
// experiment file maps to one results file by one rule.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace clbo {

// The results file for an experiment file: the path's last folder named "experiments"
// becomes "results" and the rest is kept ("a/experiments/sim/x.json" → "a/results/sim/x.json");
// a path with no such folder goes to "results/<file name>". The last such folder, because
// it is the one the experiment tree starts at ("/home/u/experiments/clbo/experiments/x.json"
// is the clbo checkout's experiment, not the home folder's).
std::string default_results_path(const std::string& experiment_path);

// The document without its "timing" fields at any depth: what the determinism rule says
// two runs of one config and seed give byte for byte.
nlohmann::json without_timing(nlohmann::json results);

}  // namespace clbo
