// Per-label aggregation of an experiment's runs (private to clbo_train).
#pragma once
#include <nlohmann/json.hpp>

#include "clbo/train/trainer.hpp"

namespace clbo::train {

// One entry per run label, in the experiment's order: final test accuracy and training-set
// loss, mean ± sample std over the seeds that completed (with min, max and the 95% interval
// of the mean), their gaps to the baseline paired by seed (accuracy in percentage points),
// communication per worker and its ratio to the baseline's, and timing means.
nlohmann::json summarize_runs(const ExperimentSpec& spec, const nlohmann::json& runs);

}  // namespace clbo::train
