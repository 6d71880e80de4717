#include "clbo/validate/repeatability.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "clbo/core/error.hpp"
#include "clbo/validate/compare.hpp"
#include "clbo/validate/spec.hpp"

namespace clbo::validate {

namespace {

using nlohmann::json;

// The first top-level field where two grids differ, for the error message.
std::string first_difference(const json& a, const json& b) {
  if (!a.is_object() || !b.is_object()) return "(root)";
  for (const auto& [key, value] : a.items())
    if (!b.contains(key) || b[key] != value) return key;
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) return key;
  return "(root)";
}

// What identifies a case across runs: every field that says what was measured.
constexpr const char* kKeyFields[] = {"cluster", "op", "algo", "bytes", "optimizer", "phase"};

std::string case_key(const json& k) {
  std::string key;
  for (const char* f : kKeyFields) {
    if (!key.empty()) key += ' ';
    key += k.contains(f) && !k[f].is_null()
               ? (k[f].is_string() ? k[f].get<std::string>() : k[f].dump())
               : "-";
  }
  return key;
}

std::string group_of(const json& k) {
  if (k["op"] == "step") return "steps";
  return op_family(k) + "/" + k["bound"].get<std::string>();
}

double positive_number(const json& k, const char* field, const std::string& file,
                       const std::string& where) {
  const json* v = k.contains(field) ? &k[field] : nullptr;
  if (!v || !v->is_number() || !std::isfinite(v->get<double>()) ||
      (std::string(field) == "measured_s" && v->get<double>() <= 0))
    throw InputError(file, where + "." + field, v ? v->dump() : "missing",
                     std::string("expected a ") +
                         (std::string(field) == "measured_s" ? "positive " : "finite ") +
                         "number (a complete clbo validate result)");
  return v->get<double>();
}

// The other runs' median is the run-to-run noise only where every run was measured on one
// machine: runs of two machines differ by the machines as well (seen: a machine whose
// streaming kernels ran 3-4x faster put 48 of 96 steps outside +-15% of the other machine's
// runs). The runs' machine.facts (CPU model, kernel, idle driver) tell machines apart where
// they differ; equal facts do not prove one machine.
json machine_warnings(const json& runs) {
  std::map<std::string, std::vector<std::string>> by_facts;
  for (const json& r : runs)
    if (!r["machine"].is_null()) by_facts[r["machine"].dump()].push_back(r["file"]);
  json out = json::array();
  if (by_facts.size() > 1) {
    std::string which;
    for (const auto& [facts, files] : by_facts)
      which += fmt::format("{}{} on {}", which.empty() ? "" : "; ", fmt::join(files, ", "), facts);
    out.push_back(fmt::format(
        "the runs come from {} machines (their machine.facts differ: {}): each run's other "
        "runs' median then holds the machines' difference as well as the run-to-run noise; "
        "compare the runs of one machine",
        by_facts.size(), which));
  }
  return out;
}

// One run's cases by key, checked.
std::map<std::string, const json*> cases_by_key(const ValidationRun& run) {
  // The map points into run.doc: `cases` must be the document's own array, not a copy.
  if (!run.doc.contains("cases") || !run.doc["cases"].is_array())
    throw InputError(run.file, "cases",
                     run.doc.contains("cases") ? run.doc["cases"].type_name() : "missing",
                     "expected the array of cases of a complete clbo validate result");
  const json& cases = run.doc["cases"];
  std::map<std::string, const json*> out;
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& k = cases[i];
    const std::string where = fmt::format("cases[{}]", i);
    if (!k.is_object() || !k.contains("op") || !k["op"].is_string() || !k.contains("cluster") ||
        (k["op"] != "step" && !(k.contains("bound") && k["bound"].is_string())))
      throw InputError(run.file, where, k.dump().substr(0, 80),
                       "expected a case with op, cluster and (for an op case) bound");
    positive_number(k, "measured_s", run.file, where);
    positive_number(k, "rel_error", run.file, where);
    if (!out.emplace(case_key(k), &k).second)
      throw InputError(run.file, where, case_key(k), "the same case is in the file twice");
  }
  return out;
}

// The median of every value but the i-th.
double median_without(const std::vector<double>& v, size_t i) {
  std::vector<double> rest;
  for (size_t j = 0; j < v.size(); ++j)
    if (j != i) rest.push_back(v[j]);
  return median(std::move(rest));
}

struct GroupErrors {
  std::vector<double> spread;
  std::vector<std::vector<double>> noise, simulator;  // per run, |error| per case
  std::vector<double> typical;  // per case, |the median over the runs of its rel_error|
  int64_t same_sign = 0;        // cases whose rel_error has one sign in every run
};

int64_t within(const std::vector<double>& v, double band) {
  return static_cast<int64_t>(
      std::count_if(v.begin(), v.end(), [&](double e) { return e <= band; }));
}

json scored(const std::vector<double>& errors, bool steps) {
  json j = error_stats(errors).to_json();
  if (steps) j["within_15pct"] = within(errors, kStepBand);
  return j;
}

}  // namespace

json repeatability(const json& config, const std::vector<ValidationRun>& runs) {
  if (runs.size() < 2)
    throw InputError("clbo validate", "--repeatability", fmt::format("{} file", runs.size()),
                     "needs two or more results of the grid to compare");
  const json grid = measured_grid(config);
  std::vector<std::map<std::string, const json*>> by_key;
  json runs_json = json::array();
  for (const ValidationRun& run : runs) {
    if (!run.doc.is_object())
      throw InputError(run.file, "(root)", run.doc.type_name(),
                       "expected a clbo.validate/1 result (clbo validate's output)");
    const json schema = run.doc.value("schema", json());
    if (schema != "clbo.validate/1")
      throw InputError(run.file, "schema", schema.is_null() ? "missing" : schema.dump(),
                       "expected a clbo.validate/1 result (clbo validate's output)");
    const json their = measured_grid(run.doc.value("config", json()));
    if (their != grid)
      throw InputError(run.file, "config." + first_difference(grid, their),
                       their.is_object() && their.contains(first_difference(grid, their))
                           ? their[first_difference(grid, their)].dump().substr(0, 80)
                           : "missing",
                       "this result is of another grid than the one given (only the "
                       "description may differ)");
    by_key.push_back(cases_by_key(run));
    const json& res = run.doc.value("resimulated", json());
    const json& env = run.doc.contains("environment") ? run.doc["environment"] : json();
    const json& machine = run.doc.contains("machine") ? run.doc["machine"] : json();
    runs_json.push_back(
        {{"file", run.file},
         {"git_hash", env.is_object() ? env.value("git_hash", json()) : json()},
         {"resimulated_from", res.is_object() ? res.value("work_folder", json()) : json()},
         {"machine", machine.is_object() ? machine.value("facts", json()) : json()}});
  }
  const json warnings = machine_warnings(runs_json);

  // Cases in every run, in the first run's order; the others are counted and named.
  std::map<std::string, GroupErrors> groups;
  json cases = json::array(), left_out = json::array();
  std::map<std::string, bool> seen;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const auto& [key, k] : by_key[r]) {
      if (seen[key]) continue;
      seen[key] = true;
      json in = json::array();
      for (size_t q = 0; q < runs.size(); ++q)
        if (by_key[q].count(key)) in.push_back(runs[q].file);
      if (in.size() < runs.size()) left_out.push_back({{"case", key}, {"in_runs", in}});
    }
  for (const json& first : runs[0].doc["cases"]) {
    const std::string key = case_key(first);
    if (!std::all_of(by_key.begin(), by_key.end(), [&](const auto& m) { return m.count(key); }))
      continue;
    std::vector<double> measured, rel;
    for (const auto& m : by_key) {
      measured.push_back(m.at(key)->at("measured_s").get<double>());
      rel.push_back(m.at(key)->at("rel_error").get<double>());
    }
    const std::string group = group_of(first);
    GroupErrors& g = groups[group];
    g.noise.resize(runs.size());
    g.simulator.resize(runs.size());
    const double spread = *std::max_element(measured.begin(), measured.end()) /
                              *std::min_element(measured.begin(), measured.end()) -
                          1;
    g.spread.push_back(spread);
    const double typical = median(rel);
    g.typical.push_back(std::fabs(typical));
    if (std::all_of(rel.begin(), rel.end(), [](double e) { return e > 0; }) ||
        std::all_of(rel.begin(), rel.end(), [](double e) { return e < 0; }))
      ++g.same_sign;
    json noise = json::array();
    for (size_t r = 0; r < runs.size(); ++r) {
      const double e = measured[r] / median_without(measured, r) - 1;
      noise.push_back(e);
      g.noise[r].push_back(std::fabs(e));
      g.simulator[r].push_back(std::fabs(rel[r]));
    }
    json c = {{"group", group},   {"measured_s", measured},
              {"spread", spread}, {"other_runs_median_rel_error", noise},
              {"rel_error", rel}, {"rel_error_median", typical}};
    for (const char* f : kKeyFields) c[f] = first.value(f, json());
    cases.push_back(std::move(c));
  }

  json groups_json = json::object();
  for (const auto& [name, g] : groups) {
    const bool steps = name == "steps";
    json per_run = json::array();
    for (size_t r = 0; r < runs.size(); ++r)
      per_run.push_back({{"file", runs[r].file},
                         {"other_runs_median", scored(g.noise[r], steps)},
                         {"simulator", scored(g.simulator[r], steps)}});
    const ErrorStats sp = error_stats(g.spread);
    json over_runs = scored(g.typical, steps);
    over_runs["same_sign_in_every_run"] = g.same_sign;
    groups_json[name] = {{"cases", sp.n},
                         {"spread", {{"median", sp.median}, {"max", sp.max}}},
                         {"per_run", per_run},
                         {"simulator_over_runs", over_runs}};
  }

  return {{"schema", "clbo.validate.repeatability/1"},
          {"config", config},
          {"runs", runs_json},
          {"warnings", warnings},
          {"cases_in_every_run", cases.size()},
          {"cases_left_out", left_out},
          {"groups", groups_json},
          {"cases", cases},
          {"definition",
           {{"spread", "per case, the largest of its runs' measured_s over the smallest, less 1"},
            {"other_runs_median",
             "per run, |measured_s / (the median of the other runs' measured_s) - 1| over the "
             "group's cases: the error of a predictor that knows each case's typical time from "
             "the other runs and nothing of this run's moment; the run-to-run noise, the least "
             "a model of the typical time can expect on one run"},
            {"simulator", "per run, |rel_error| as that results file holds it"},
            {"simulator_over_runs",
             "per group, |rel_error_median| over its cases (each case's rel_error, median over "
             "the runs: the model against the case's typical measurement, each run's noise "
             "damped), and same_sign_in_every_run, the cases whose rel_error has one sign in "
             "every run (a bias of the model's rather than noise)"},
            {"groups",
             "op cases by family and bound (the bound the first run gave them), steps together; "
             "within_15pct counts the steps within the target's band"},
            {"cases_left_out", "cases not in every run, with the runs that have them"}}},
          {"provenance",
           {{"measured_s", "copied from the runs' results files (measured)"},
            {"rel_error", "copied from the runs' results files (simulated against measured)"},
            {"other_runs_median_rel_error", "computed here from the measured times alone"}}}};
}

std::string repeatability_table(const json& r) {
  std::string out;
  if (r.contains("warnings"))
    for (const json& w : r["warnings"]) out += "warning: " + w.get<std::string>() + "\n";
  out += fmt::format(
      "the grid measured {} times: {} cases in every run, {} left out\n"
      "{:<28} {:>5} {:>16}  {:<34} {:>22} {:>22}\n",
      r["runs"].size(), r["cases_in_every_run"].get<size_t>(), r["cases_left_out"].size(), "group",
      "cases", "spread med/max", "run", "other runs' median", "simulator");
  auto cell = [](const json& s) {
    if (s["cases"].get<size_t>() == 0) return std::string("-");
    std::string c = fmt::format("{:.1f}%/{:.1f}%", 100 * s["median_abs_rel_error"].get<double>(),
                                100 * s["max_abs_rel_error"].get<double>());
    if (s.contains("within_15pct"))
      c += fmt::format(" ({}/{})", s["within_15pct"].get<int64_t>(), s["cases"].get<size_t>());
    return c;
  };
  for (const auto& [name, g] : r["groups"].items()) {
    bool first = true;
    for (const json& pr : g["per_run"]) {
      std::string file = pr["file"].get<std::string>();
      if (file.size() > 34) file = "..." + file.substr(file.size() - 31);
      out += fmt::format(
          "{:<28} {:>5} {:>16}  {:<34} {:>22} {:>22}\n", first ? name : "",
          first ? std::to_string(g["cases"].get<size_t>()) : "",
          first ? fmt::format("{:.1f}%/{:.1f}%", 100 * g["spread"]["median"].get<double>(),
                              100 * g["spread"]["max"].get<double>())
                : "",
          file, cell(pr["other_runs_median"]), cell(pr["simulator"]));
      first = false;
    }
    const json& o = g["simulator_over_runs"];
    out += fmt::format("{:<28} {:>5} {:>16}  {:<34} {:>22} {:>22}\n", "", "", "",
                       fmt::format("median over the runs ({} one sign)",
                                   o["same_sign_in_every_run"].get<int64_t>()),
                       "", cell(o));
  }
  return out;
}

}  // namespace clbo::validate
