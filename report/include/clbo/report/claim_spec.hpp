// The paper-claim specs of experiments/paper/ (format: docs/report.md): loading and
// validation. Every field is checked, unknown fields are rejected with a suggestion, and
// claim ids are unique across all specs, so a spec that loads is one the report can evaluate.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace clbo::report {

// Picks one number from one results file.
struct Selector {
  std::string results;  // key under the results folder, "paper/<spec name>" by default
  std::string array = "runs";
  nlohmann::json where = nlohmann::json::object();  // exact matches on top-level fields
  std::string field;                                // dotted path, "a.b[0].c"
};

struct Metric {
  enum class Op { kValue, kRatio, kReduction, kMax, kMin, kUnavailable };
  Op op = Op::kValue;
  Selector a, b;           // value: a; ratio and reduction: a and b
  std::vector<Metric> of;  // max and min
  std::string reason;      // unavailable
};

struct Claim {
  std::string id, paper, table, setting, quantity, kind, unit, source, note, deviation;
  bool headline = false, up_to = false;
  std::optional<double> paper_value;
  double scale = 1.0;
  std::optional<double> tolerance;  // after the per-kind default; none for projections
  Metric metric;
};

struct ClaimSpec {
  std::string file;  // as given, for errors
  std::string name, description, source;
  nlohmann::json simulate;  // null when the spec has no simulation of its own
  std::vector<Claim> claims;
  std::string own_results() const { return "paper/" + name; }
};

// The default tolerance of a kind, or none (projection, accuracy_gap).
std::optional<double> default_tolerance(const std::string& kind);

ClaimSpec load_claim_spec(const std::string& path);
ClaimSpec parse_claim_spec(const nlohmann::json& doc, const std::string& file,
                           const std::string& stem);

// Every *.json directly in `dir`, in file-name order; duplicate claim ids across files are
// an error naming both. A missing folder is an error; an empty one gives no specs.
std::vector<ClaimSpec> load_claim_specs(const std::string& dir);

// The results keys the spec's claims read (every selector, nested max/min included), in
// first-read order; empty when every claim is unavailable.
std::vector<std::string> results_read(const ClaimSpec& spec);

// "Metric op" names, for messages.
std::string to_string(Metric::Op op);

}  // namespace clbo::report
