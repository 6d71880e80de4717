// Fitting cluster parameters to measurements by simulation (calibration.hpp): one
// Levenberg-Marquardt fit of a set of parameters, and the choice of the fewest parameters
// that explain the data.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "measurements.hpp"

namespace clbo::sim {

// What a fit varies: cluster JSON fields (each fitted as a positive number) and, for the
// structural term, the nodes per leaf of a two-level tree (0: the base topology).
struct FitSet {
  std::vector<std::string> fields;
  int nodes_per_leaf = 0;
  std::string describe() const;
};

struct FitResult {
  FitSet set;
  std::vector<double> values;     // of set.fields, rounded to 4 significant digits
  nlohmann::json cluster;         // the base with the values applied
  std::vector<double> simulated;  // per measurement
  std::vector<double> residual;   // (simulated − measured) / measured
  double worst = 0;               // max |residual|
  double bic = 0;                 // n·ln(RSS/n) + k·ln(n), RSS of log(simulated/measured)
  int evaluations = 0;
};

// The base cluster with `values` of `set` applied.
nlohmann::json apply_fit(const nlohmann::json& base, const FitSet& set,
                         const std::vector<double>& values);

// Fits `set` to the measurements, starting from the values in `start` (the base cluster,
// or an earlier fit's cluster) and applying them to `base`. `where` names the input in
// errors; a parameter no measurement depends on is an InputError.
FitResult fit_parameters(const nlohmann::json& base, const nlohmann::json& start, const FitSet& set,
                         const std::vector<Measurement>& ms, const std::string& where,
                         const std::function<void(const std::string&)>& progress);

// The parameters of this base cluster a fit may name, and the one per role: intra-node rate,
// network rate, latency, structural uplink.
std::vector<std::string> fittable_fields(const nlohmann::json& base);
std::string network_rate_field(const nlohmann::json& base);

}  // namespace clbo::sim
