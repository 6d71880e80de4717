// Per-label aggregation of an experiment's runs (private to clbo_train).
#pragma once
#include <nlohmann/json.hpp>

#include "clbo/train/trainer.hpp"

namespace clbo::train {

// One entry per run label, in the experiment's order: final test accuracy mean ± sample std
// over the seeds that completed, the paired gap to the baseline in percentage points,
// communication per worker and its ratio to the baseline's, and timing means.
nlohmann::json summarize_runs(const ExperimentSpec& spec, const nlohmann::json& runs);

}  // namespace clbo::train
