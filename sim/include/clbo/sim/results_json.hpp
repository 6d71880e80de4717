// The results document of `clbo simulate` (schema clbo.simulate/1, results/SCHEMA.md): its
// config, the environment and inputs, one run per (point, optimizer) in that order, and
// timing. Provenance is structural: numbers under "simulated" come from the simulation,
// under "timing" they are host time. (What `clbo simulate` prints is apps/sim/results_formats.hpp.)
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/sim/projection.hpp"
#include "clbo/sim/spec.hpp"

namespace clbo::sim {

// Host time spent on a run's programs (a timing field).
struct RunTiming {
  double wall_s = 0, cpu_s = 0;
  uint64_t transfers = 0;
};

nlohmann::json step_kind_json(const StepKindResult& k);

// One run: the setting, its step kinds and run metrics; volume_reduction and speedup stay
// null until add_baseline_ratios.
nlohmann::json run_json(const TrainingSetup& s, const OptimizerEntry& opt,
                        const std::vector<StepKindResult>& kinds, const RunMetrics& m,
                        const RunTiming& timing);
void add_baseline_ratios(nlohmann::json& run, const nlohmann::json& baseline_run);

// The whole document, with the spec's "warnings" when it has any.
nlohmann::json results_document(const nlohmann::json& spec_json, const std::string& file,
                                const ExperimentSpec& spec, nlohmann::json runs,
                                nlohmann::json group_timing, double wall_s);

}  // namespace clbo::sim
