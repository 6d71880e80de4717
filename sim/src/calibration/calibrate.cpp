#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/sim/calibration.hpp"
#include "clbo/sim/cluster.hpp"
#include "fit.hpp"
#include "measurements.hpp"

namespace clbo::sim {

namespace {

constexpr double kPoorFit = 0.15;  // a residual above this is a poor fit (a warning)

// Candidate nodes per leaf of the structural term: powers of two that leave at least two
// leaves in the largest measured setting.
std::vector<int> leaf_sizes(const ClusterSpec& c, const std::vector<Measurement>& ms) {
  int most = 1;
  for (const auto& m : ms) most = std::max(most, nodes_for(c, m.p));
  std::vector<int> out;
  for (int l = 2; 2 * l <= most && l < c.max_nodes; l *= 2) out.push_back(l);
  return out;
}

nlohmann::json residual_rows(const std::vector<Measurement>& ms, const FitResult& f) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < ms.size(); ++i)
    rows.push_back({{"measurement", ms[i].field},
                    {"setting", ms[i].label},
                    {"gpus", ms[i].p},
                    {"quantity", ms[i].quantity},
                    {"measured", ms[i].measured},
                    {"simulated", f.simulated[i]},
                    {"residual_pct", 100 * f.residual[i]}});
  return rows;
}

}  // namespace

const std::vector<std::string>& calibration_parameters() {
  static const std::vector<std::string> p = {"intra.bandwidth_GBps", "fabric.achievable_fraction",
                                             "fabric.efficiency", "fabric.software_latency_us",
                                             "topology.uplink_GBps"};
  return p;
}

CalibrationResult calibrate(const nlohmann::json& input, const std::string& file,
                            const CalibrationOptions& options) {
  ConfigReader r(input, file);
  r.ignore("name");
  if (!input.contains("name") || !input["name"].is_string() ||
      input["name"].get<std::string>().empty())
    r.fail("name", "required: the fitted preset's name");
  const std::string name = input["name"].get<std::string>();
  for (const char* k : {"description", "source"}) {
    r.ignore(k);
    if (input.contains(k) && !input[k].is_string()) r.fail(k, "expected a string");
  }
  // The base cluster: everything the fit does not touch.
  r.ignore("cluster");
  const bool overridden = !options.cluster_override.is_null();
  if (!overridden && !input.contains("cluster"))
    r.fail("cluster", "required: a preset name, a cluster JSON path or an inline cluster");
  const nlohmann::json& ref = overridden ? options.cluster_override : input["cluster"];
  const std::string ref_where = overridden ? "<command line>" : file;
  const std::string ref_field = overridden ? "--cluster" : "cluster";
  const ClusterSpec base_spec = resolve_cluster(ref, ref_where, ref_field);
  nlohmann::json base = cluster_json(ref, ref_where, ref_field);
  base.erase("calibration");

  r.ignore("measurements");
  const std::vector<Measurement> ms = parse_measurements(input, file);
  for (const auto& m : ms) check_gpu_count(base_spec, m.p, file, m.field + ".gpus");

  const double explain = r.number_in("explain_pct", 2, 0, false, 100, true) / 100;
  r.ignore("fit");
  std::vector<std::string> forced;
  if (input.contains("fit")) {
    if (!input["fit"].is_array() || input["fit"].empty())
      r.fail("fit", "expected a non-empty array of parameter names");
    const auto known = fittable_fields(base);
    for (size_t i = 0; i < input["fit"].size(); ++i) {
      const nlohmann::json& v = input["fit"][i];
      const std::string f = fmt::format("fit[{}]", i);
      if (!v.is_string()) throw InputError(file, f, v.dump(), "expected a parameter name");
      const std::string s = v.get<std::string>();
      if (std::find(known.begin(), known.end(), s) == known.end())
        throw InputError(file, f, s,
                         "no such fit parameter for this cluster" + did_you_mean(s, known) +
                             " (known: intra.bandwidth_GBps, " + network_rate_field(base) +
                             ", fabric.software_latency_us" +
                             (base.contains("xml") ? "" : ", topology.uplink_GBps") + ")");
      if (std::find(forced.begin(), forced.end(), s) != forced.end())
        throw InputError(file, f, s, "listed twice");
      forced.push_back(s);
    }
  }
  r.finish();

  bool single = false, multi = false;
  for (const auto& m : ms) (nodes_for(base_spec, m.p) > 1 ? multi : single) = true;
  auto say = [&](const std::string& s) {
    if (options.progress) options.progress(s);
  };
  // Each fit starts from the values of the best fit so far (the base at first).
  nlohmann::json start = base;
  auto fit = [&](const FitSet& set) { return fit_parameters(base, start, set, ms, file, say); };
  // The structural term: a two-level tree, fitted jointly with `set` at each candidate leaf
  // size; the leaf size with the lowest BIC wins. A leaf size that changes no simulated time
  // is not a candidate.
  // Later rounds of the selection keep the leaf size the first search chose.
  int chosen_leaf = 0;
  auto fit_structural = [&](FitSet set) {
    if (base_spec.is_xml())
      throw InputError(file, "fit", "topology.uplink_GBps",
                       "an XML platform describes its own topology");
    if (base_spec.topology == TopologyKind::kTwoLevel) return fit(set);
    std::optional<FitResult> best;
    const std::vector<int> leaves =
        chosen_leaf > 0 ? std::vector<int>{chosen_leaf} : leaf_sizes(base_spec, ms);
    for (int l : leaves) {
      set.nodes_per_leaf = l;
      try {
        FitResult f = fit(set);
        if (!best || f.bic < best->bic) best = std::move(f);
      } catch (const InputError& e) {
        say(std::string("skipped: ") + e.what());
      }
    }
    if (!best)
      throw InputError(file, "fit", "topology.uplink_GBps",
                       "cannot be fitted: no leaf size changes any simulated time");
    chosen_leaf = best->set.nodes_per_leaf;
    return *best;
  };

  // Every fit tried, in order; `chosen` indexes the one the preset takes.
  std::vector<FitResult> tried;
  size_t chosen_at = 0;
  if (!forced.empty()) {
    FitSet set;
    bool structural = false;
    for (const auto& f : forced) {
      set.fields.push_back(f);
      structural |= f == "topology.uplink_GBps";
    }
    tried.push_back(structural ? fit_structural(set) : fit(set));
  } else {
    // The fewest parameters that explain the data: the rates the measurements see, then the
    // latency, then the structural term, each only while the worst residual exceeds
    // explain_pct and only when it lowers the fit's BIC.
    FitSet set;
    if (single) set.fields.push_back("intra.bandwidth_GBps");
    if (multi) set.fields.push_back(network_rate_field(base));
    tried.push_back(fit(set));
    // Forward selection over the terms the residuals may demand: each round tries adding
    // each remaining term to the best fit so far and keeps the one that lowers the BIC most.
    // A term the measurements cannot see is skipped, not fitted.
    std::vector<std::string> terms;
    if (multi) terms.push_back("fabric.software_latency_us");
    if (multi && !base_spec.is_xml() && !leaf_sizes(base_spec, ms).empty())
      terms.push_back("topology.uplink_GBps");
    while (!terms.empty() && tried[chosen_at].worst > explain) {
      start = tried[chosen_at].cluster;
      bool found = false;
      size_t best = 0, best_term = 0;
      for (size_t t = 0; t < terms.size(); ++t) {
        FitSet with = tried[chosen_at].set;
        with.fields.push_back(terms[t]);
        try {
          tried.push_back(terms[t] == "topology.uplink_GBps" ? fit_structural(with) : fit(with));
        } catch (const InputError& e) {
          say(std::string("skipped: ") + e.what());
          continue;
        }
        if (!found || tried.back().bic < tried[best].bic) {
          found = true;
          best = tried.size() - 1;
          best_term = t;
        }
      }
      if (!found || tried[best].bic >= tried[chosen_at].bic) break;
      chosen_at = best;
      terms.erase(terms.begin() + static_cast<long>(best_term));
    }
  }
  const FitResult& chosen = tried[chosen_at];
  nlohmann::json ladder = nlohmann::json::array();
  for (size_t i = 0; i < tried.size(); ++i)
    ladder.push_back({{"parameters", tried[i].set.fields},
                      {"nodes_per_leaf", tried[i].set.nodes_per_leaf > 0
                                             ? nlohmann::json(tried[i].set.nodes_per_leaf)
                                             : nlohmann::json(nullptr)},
                      {"worst_residual_pct", 100 * tried[i].worst},
                      {"bic", tried[i].bic},
                      {"chosen", i == chosen_at}});
  if (!std::isfinite(chosen.worst))
    throw InputError(file, "measurements", "(all)", "the fit did not converge to finite times");

  CalibrationResult out;
  out.worst_residual_pct = 100 * chosen.worst;
  if (chosen.worst > kPoorFit) {
    std::vector<size_t> order(ms.size());
    for (size_t i = 0; i < ms.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::abs(chosen.residual[a]) > std::abs(chosen.residual[b]);
    });
    std::string rows;
    for (size_t j = 0; j < order.size() && j < 3; ++j) {
      const size_t i = order[j];
      if (std::abs(chosen.residual[i]) <= kPoorFit) break;
      rows += fmt::format("{}{} ({}: {:+.1f}%)", rows.empty() ? "" : "; ", ms[i].field, ms[i].label,
                          100 * chosen.residual[i]);
    }
    out.warnings.push_back(fmt::format("poor fit: residuals above {:.0f}% with {}: {}",
                                       100 * kPoorFit, chosen.set.describe(), rows));
  }

  nlohmann::json preset = chosen.cluster;
  preset["name"] = name;
  if (input.contains("description")) preset["description"] = input["description"];
  preset["source"] = "fitted";
  nlohmann::json params = nlohmann::json::array();
  for (size_t i = 0; i < chosen.set.fields.size(); ++i) {
    const std::string& f = chosen.set.fields[i];
    params.push_back({{"field", f}, {"value", chosen.values[i]}});
    const std::string sec = f.substr(0, f.find('.'));
    preset[sec]["source"] = fmt::format("fitted by clbo calibrate {} ({})", file, f);
  }
  if (chosen.set.nodes_per_leaf > 0)
    params.push_back({{"field", "topology.nodes_per_leaf"},
                      {"value", chosen.set.nodes_per_leaf},
                      {"structural", true}});
  nlohmann::json given = nlohmann::json::array();
  for (const auto& m : input["measurements"]) given.push_back(m);
  preset["calibration"] = {
      {"input", file},
      {"source", input.value("source", "")},
      {"method",
       "Levenberg-Marquardt on log(simulated / measured) with clbo simulate's own model; the "
       "fewest parameters that explain the data (docs/calibration.md)"},
      {"explain_pct", 100 * explain},
      {"parameters", params},
      {"fitted_fields", chosen.set.fields},
      {"ladder", ladder},
      {"measurements", given},
      {"residuals", residual_rows(ms, chosen)},
      {"worst_residual_pct", 100 * chosen.worst},
      {"warnings", out.warnings}};
  // The fitted preset must read back as a cluster.
  (void)parse_cluster(preset, file);
  out.preset = std::move(preset);
  return out;
}

}  // namespace clbo::sim
