// The convergence summary table (results/convergence/SUMMARY.md), generated from result
// files only, so it can be rebuilt without rerunning anything.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace clbo::train {

// Markdown: one row per run label of every result, with final test accuracy (mean ± std
// over seeds), the paired gap to the baseline in points, communication per worker and
// relative to the baseline, throughput, and the paper's claim where the experiment cites
// one. `results` holds (path, document) pairs; rows follow the given order.
std::string summary_markdown(const std::vector<std::pair<std::string, nlohmann::json>>& results);

}  // namespace clbo::train
