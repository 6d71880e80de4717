// Evaluating claims against loaded results: clbo value = metric x scale, relative error
// against the paper's value, the target band, and where the numbers came from.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clbo/report/claim_spec.hpp"
#include "clbo/report/results_store.hpp"

namespace clbo::report {

enum class Band { kWithin, kOutside, kNotApplicable };

struct ClaimRow {
  const ClaimSpec* spec = nullptr;
  const Claim* claim = nullptr;
  std::optional<double> clbo_value;  // none for unavailable metrics
  std::optional<double> rel_error;   // (clbo - paper) / paper, when both exist
  Band band = Band::kNotApplicable;
  std::string provenance;          // "simulated", "measured", "measured+simulated" or "published"
  std::string winner;              // max/min: which element gave the value ("gpus=64")
  std::string reason;              // unavailable: why there is no clbo value
  std::vector<std::string> files;  // results keys read, in first-read order
  // Simulated runs say whose code they model ("implementation": clbo or deepspeed). A
  // selector that names no implementation reads each file's primary one (the first of its
  // inputs.settings.implementation); clbo_value is that one's. by_implementation holds the
  // value under every implementation all the simulation files read have run, when more
  // than one.
  std::string implementation;
  std::vector<std::pair<std::string, double>> by_implementation;
};

// Throws clbo::Error naming the spec file, the claim id and the selector on any selector
// problem, and on stale own results.
ClaimRow evaluate_claim(const ClaimSpec& spec, const Claim& claim, const ResultsStore& store);

std::vector<ClaimRow> evaluate_all(const std::vector<ClaimSpec>& specs, const ResultsStore& store);

struct Counts {
  size_t rows = 0, within = 0, outside = 0, not_computed = 0;
  size_t no_band = 0;  // a clbo value but no band: projections, accuracy gaps, no paper value
};
Counts count_rows(const std::vector<ClaimRow>& rows);

}  // namespace clbo::report
