#include "clbo/report/claim_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"

namespace clbo::report {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::vector<std::string> kPapers = {"1-bit Adam", "1-bit LAMB", "SLAMB", "0/1 Adam",
                                          "projection"};
const std::vector<std::string> kKinds = {"throughput", "speedup", "volume",       "rounds",
                                         "efficiency", "time",    "accuracy_gap", "projection"};
const std::vector<std::string> kOps = {"value", "ratio", "reduction", "max", "min", "unavailable"};

// Every field of each object, so an unknown one gets a suggestion even when the field it
// resembles is absent.
const std::vector<std::string> kSpecFields = {"name", "description", "source", "simulate",
                                              "claims"};
const std::vector<std::string> kClaimFields = {
    "id",          "paper",  "table", "headline", "setting",   "quantity", "kind", "unit",
    "paper_value", "source", "up_to", "scale",    "tolerance", "metric",   "note", "deviation"};
const std::vector<std::string> kMetricFields = {"op", "a", "b", "of", "reason"};
const std::vector<std::string> kSelectorFields = {"results", "array", "where", "field"};

void finish_known(ConfigReader& r, const std::vector<std::string>& known) {
  for (const auto& k : known) r.ignore(k);
  r.finish();
}

// A string field: required ones must be present and non-empty.
std::string text(ConfigReader& r, const json& obj, const std::string& key, bool required) {
  r.ignore(key);
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) r.fail(key, "required");
    return "";
  }
  if (!it->is_string()) r.fail(key, "expected a string");
  const std::string s = it->get<std::string>();
  if (required && s.empty()) r.fail(key, "must not be empty");
  return s;
}

bool valid_id(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
  });
}

// "a.b[0].c": names separated by dots, each optionally followed by [index] groups.
bool valid_field_path(const std::string& path) {
  if (path.empty() || path.front() == '.' || path.back() == '.') return false;
  size_t i = 0;
  while (i < path.size()) {
    const size_t start = i;
    while (i < path.size() && path[i] != '.' && path[i] != '[') ++i;
    if (i == start) return false;
    while (i < path.size() && path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos || close == i + 1) return false;
      for (size_t k = i + 1; k < close; ++k)
        if (path[k] < '0' || path[k] > '9') return false;
      i = close + 1;
    }
    if (i < path.size()) {
      if (path[i] != '.') return false;
      ++i;
      if (i == path.size()) return false;
    }
  }
  return true;
}

Selector parse_selector(const json& obj, const std::string& file, const std::string& prefix,
                        const std::string& own_results) {
  ConfigReader r(obj, file, prefix);
  Selector s;
  s.results = text(r, obj, "results", false);
  if (s.results.empty()) {
    s.results = own_results;
  } else if (s.results.size() > 5 && s.results.ends_with(".json")) {
    r.fail("results", "a path under results/ without .json, e.g. \"sim/default-sweep\"");
  } else if (s.results.starts_with("results/") || s.results.starts_with("/")) {
    r.fail("results", "a path relative to the results folder, e.g. \"sim/default-sweep\"");
  }
  const std::string array = text(r, obj, "array", false);
  if (!array.empty()) s.array = array;
  r.ignore("where");
  if (obj.contains("where")) {
    const json& w = obj["where"];
    if (!w.is_object()) r.fail("where", "expected an object of field: value");
    for (auto it = w.begin(); it != w.end(); ++it)
      if (it.value().is_object() || it.value().is_array())
        throw InputError(file, r.field("where") + "." + it.key(), it.value().dump(),
                         "expected a string, number, boolean or null (an exact match)");
    s.where = w;
  }
  s.field = text(r, obj, "field", true);
  if (!valid_field_path(s.field))
    r.fail("field",
           "expected a dotted path such as \"simulated.samples_per_s\" or "
           "\"step_kinds[0].simulated.time_ms\"");
  finish_known(r, kSelectorFields);
  return s;
}

Metric parse_metric(const json& obj, const std::string& file, const std::string& prefix,
                    const std::string& own_results) {
  ConfigReader r(obj, file, prefix);
  Metric m;
  if (!obj.contains("op"))
    r.fail("op",
           "required: one of value, ratio, reduction, max, min, "
           "unavailable");
  const std::string op = r.choice("op", "value", kOps);
  m.op = op == "value"       ? Metric::Op::kValue
         : op == "ratio"     ? Metric::Op::kRatio
         : op == "reduction" ? Metric::Op::kReduction
         : op == "max"       ? Metric::Op::kMax
         : op == "min"       ? Metric::Op::kMin
                             : Metric::Op::kUnavailable;
  auto selector = [&](const std::string& key) {
    r.ignore(key);
    if (!obj.contains(key)) r.fail(key, fmt::format("required for op \"{}\"", op));
    return parse_selector(obj[key], file, r.field(key), own_results);
  };
  switch (m.op) {
    case Metric::Op::kValue:
      m.a = selector("a");
      break;
    case Metric::Op::kRatio:
    case Metric::Op::kReduction:
      m.a = selector("a");
      m.b = selector("b");
      break;
    case Metric::Op::kMax:
    case Metric::Op::kMin: {
      r.ignore("of");
      if (!obj.contains("of") || !obj["of"].is_array() || obj["of"].empty())
        r.fail("of", fmt::format("op \"{}\" needs a non-empty array of metrics", op));
      for (size_t i = 0; i < obj["of"].size(); ++i) {
        Metric sub =
            parse_metric(obj["of"][i], file, fmt::format("{}[{}]", r.field("of"), i), own_results);
        if (sub.op == Metric::Op::kUnavailable)
          throw InputError(file, fmt::format("{}[{}].op", r.field("of"), i), "\"unavailable\"",
                           "cannot be an element of max/min");
        m.of.push_back(std::move(sub));
      }
      break;
    }
    case Metric::Op::kUnavailable:
      m.reason = text(r, obj, "reason", true);
      break;
  }
  // Fields of another op are unknown here: "b" on a value metric is an error.
  const std::vector<std::string> used =
      m.op == Metric::Op::kValue ? std::vector<std::string>{"a"}
      : m.op == Metric::Op::kRatio || m.op == Metric::Op::kReduction
          ? std::vector<std::string>{"a", "b"}
      : m.op == Metric::Op::kUnavailable ? std::vector<std::string>{"reason"}
                                         : std::vector<std::string>{"of"};
  for (const auto& k : {"a", "b", "of", "reason"})
    if (obj.contains(k) && std::find(used.begin(), used.end(), k) == used.end())
      r.fail(k, fmt::format("not used by op \"{}\"", op));
  finish_known(r, kMetricFields);
  return m;
}

Claim parse_claim(const json& obj, const std::string& file, const std::string& prefix,
                  const std::string& own_results) {
  ConfigReader r(obj, file, prefix);
  Claim c;
  c.id = text(r, obj, "id", true);
  if (!valid_id(c.id)) r.fail("id", "only a-z, 0-9, '.' and '-' are allowed");
  if (!obj.contains("paper")) r.fail("paper", "required");
  c.paper = r.choice("paper", "", kPapers);
  c.table = text(r, obj, "table", true);
  c.headline = r.boolean("headline", false);
  c.setting = text(r, obj, "setting", true);
  c.quantity = text(r, obj, "quantity", true);
  if (!obj.contains("kind")) r.fail("kind", "required");
  c.kind = r.choice("kind", "", kKinds);
  r.ignore("unit");
  if (!obj.contains("unit") || !obj["unit"].is_string())
    r.fail("unit", "required: a string shown after numbers (\"x\", \"%\", \"h\", or \"\")");
  c.unit = obj["unit"].get<std::string>();
  r.ignore("paper_value");
  if (!obj.contains("paper_value"))
    r.fail("paper_value", "required: the published number, or null when there is none");
  if (!obj["paper_value"].is_null()) {
    c.paper_value = r.number("paper_value", 0);
    if (*c.paper_value == 0) r.fail("paper_value", "must be nonzero (the error is relative)");
    if (c.kind == "projection")
      r.fail("paper_value", "projection rows have no published value: use null");
  }
  c.source = text(r, obj, "source", true);
  c.up_to = r.boolean("up_to", false);
  c.scale = r.number("scale", 1.0);
  if (c.scale == 0) r.fail("scale", "must be nonzero");
  c.tolerance = default_tolerance(c.kind);
  if (obj.contains("tolerance")) {
    if (!c.tolerance) r.fail("tolerance", fmt::format("kind \"{}\" has no target band", c.kind));
    c.tolerance = r.number_in("tolerance", 0, 0, true, 10, true);
  }
  r.ignore("metric");
  if (!obj.contains("metric")) r.fail("metric", "required");
  c.metric = parse_metric(obj["metric"], file, r.field("metric"), own_results);
  c.note = text(r, obj, "note", false);
  c.deviation = text(r, obj, "deviation", false);
  finish_known(r, kClaimFields);
  return c;
}

}  // namespace

std::string to_string(Metric::Op op) {
  switch (op) {
    case Metric::Op::kValue:
      return "value";
    case Metric::Op::kRatio:
      return "ratio";
    case Metric::Op::kReduction:
      return "reduction";
    case Metric::Op::kMax:
      return "max";
    case Metric::Op::kMin:
      return "min";
    case Metric::Op::kUnavailable:
      return "unavailable";
  }
  return "?";
}

std::optional<double> default_tolerance(const std::string& kind) {
  if (kind == "volume" || kind == "rounds") return 0.05;
  if (kind == "throughput" || kind == "speedup" || kind == "efficiency" || kind == "time")
    return 0.15;
  return std::nullopt;
}

ClaimSpec parse_claim_spec(const json& doc, const std::string& file, const std::string& stem) {
  ConfigReader r(doc, file);
  ClaimSpec s;
  s.file = file;
  s.name = text(r, doc, "name", true);
  // The simulator writes results/paper/<file stem>.json and selectors default to
  // paper/<name>: the two must agree.
  if (s.name != stem)
    r.fail("name", fmt::format("must equal the file name without .json (\"{}\"), which names "
                               "its results file results/paper/{}.json",
                               stem, stem));
  s.description = text(r, doc, "description", true);
  s.source = text(r, doc, "source", true);
  r.ignore("simulate");
  if (doc.contains("simulate")) {
    if (!doc["simulate"].is_object())
      r.fail("simulate", "expected the simulator's settings object (see experiments/sim/)");
    s.simulate = doc["simulate"];
  }
  r.ignore("claims");
  if (!doc.contains("claims") || !doc["claims"].is_array() || doc["claims"].empty())
    r.fail("claims", "required: a non-empty array of claims");
  std::map<std::string, size_t> ids;
  for (size_t i = 0; i < doc["claims"].size(); ++i) {
    const std::string prefix = fmt::format("claims[{}]", i);
    Claim c = parse_claim(doc["claims"][i], file, prefix, s.own_results());
    if (const auto it = ids.find(c.id); it != ids.end())
      throw InputError(file, prefix + ".id", "\"" + c.id + "\"",
                       fmt::format("duplicate id (also claims[{}])", it->second));
    ids[c.id] = i;
    s.claims.push_back(std::move(c));
  }
  finish_known(r, kSpecFields);
  return s;
}

ClaimSpec load_claim_spec(const std::string& path) {
  return parse_claim_spec(load_json_file(path), path, fs::path(path).stem().string());
}

std::vector<ClaimSpec> load_claim_specs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(dir, "(specs folder)", dir,
                     fs::exists(dir, ec) ? "is not a folder" : "does not exist");
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") paths.push_back(e.path());
  if (ec) throw Error(fmt::format("{}: cannot list the specs folder: {}", dir, ec.message()));
  std::sort(paths.begin(), paths.end());
  std::vector<ClaimSpec> specs;
  std::map<std::string, std::string> id_file;
  for (const auto& p : paths) {
    ClaimSpec s = load_claim_spec(p.string());
    for (size_t i = 0; i < s.claims.size(); ++i) {
      const auto [it, fresh] = id_file.emplace(s.claims[i].id, s.file);
      if (!fresh)
        throw InputError(s.file, fmt::format("claims[{}].id", i), "\"" + s.claims[i].id + "\"",
                         "duplicate id: " + it->second + " has a claim with the same id");
    }
    specs.push_back(std::move(s));
  }
  return specs;
}

namespace {
void collect_results(const Metric& m, std::vector<std::string>& out) {
  for (const Selector* sel : {&m.a, &m.b})
    if (!sel->results.empty() && std::find(out.begin(), out.end(), sel->results) == out.end())
      out.push_back(sel->results);
  for (const Metric& sub : m.of) collect_results(sub, out);
}
}  // namespace

std::vector<std::string> results_read(const ClaimSpec& spec) {
  std::vector<std::string> out;
  for (const Claim& c : spec.claims)
    if (c.metric.op != Metric::Op::kUnavailable) collect_results(c.metric, out);
  return out;
}

}  // namespace clbo::report
