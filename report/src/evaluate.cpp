#include "clbo/report/evaluate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "clbo/core/error.hpp"
#include "clbo/core/json_reader.hpp"

namespace clbo::report {

using nlohmann::json;

namespace {

struct Context {
  const ClaimSpec& spec;
  const Claim& claim;
  const ResultsStore& store;
  std::vector<std::string> files;  // keys read, first-read order
  std::string implementation;      // forced on runs that state one; empty: each file's primary
};

// The implementations a simulation results file ran, primary first (files written before
// the profiles existed ran clbo's).
std::vector<std::string> implementations_of(const ResultsFile& f) {
  if (f.schema != "clbo.simulate/1") return {};
  const json* list = nullptr;
  if (f.doc.contains("inputs") && f.doc["inputs"].contains("settings") &&
      f.doc["inputs"]["settings"].contains("implementation"))
    list = &f.doc["inputs"]["settings"]["implementation"];
  if (!list || !list->is_array() || list->empty()) return {"clbo"};
  std::vector<std::string> out;
  for (const auto& v : *list)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

[[noreturn]] void fail(const Context& cx, const Selector& sel, const std::string& why) {
  const json shown = {
      {"results", sel.results}, {"array", sel.array}, {"where", sel.where}, {"field", sel.field}};
  throw Error(
      fmt::format("{}: claim '{}': selector {}: {}", cx.spec.file, cx.claim.id, shown.dump(), why));
}

// The distinct values each `where` key takes in the array, to help fix a selector that
// matched nothing.
std::string values_hint(const json& array, const json& where) {
  std::string out;
  for (auto it = where.begin(); it != where.end(); ++it) {
    std::vector<std::string> seen;
    for (const auto& e : array) {
      if (!e.is_object() || !e.contains(it.key())) continue;
      const std::string v = e[it.key()].dump();
      if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
    }
    std::string list;
    for (size_t i = 0; i < seen.size() && i < 12; ++i) list += (i ? ", " : "") + seen[i];
    if (seen.size() > 12) list += ", ...";
    out += fmt::format("; \"{}\" takes {}", it.key(), seen.empty() ? "no value" : list);
  }
  return out;
}

const json* walk(const json& root, const std::string& path, std::string& missing) {
  const json* cur = &root;
  size_t i = 0;
  while (i < path.size()) {
    size_t end = i;
    while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
    const std::string name = path.substr(i, end - i);
    if (!cur->is_object() || !cur->contains(name)) {
      missing = path.substr(0, end);
      return nullptr;
    }
    cur = &(*cur)[name];
    i = end;
    while (i < path.size() && path[i] == '[') {
      const size_t close = path.find(']', i);
      const size_t idx = std::stoul(path.substr(i + 1, close - i - 1));
      if (!cur->is_array() || idx >= cur->size()) {
        missing = path.substr(0, close + 1);
        return nullptr;
      }
      cur = &(*cur)[idx];
      i = close + 1;
    }
    if (i < path.size() && path[i] == '.') ++i;
  }
  return cur;
}

// Results whose own spec changed since they were simulated must not be reported.
void check_fresh(const Context& cx, const ResultsFile& f) {
  if (f.key != cx.spec.own_results() || cx.spec.simulate.is_null()) return;
  const json* sim = nullptr;
  if (f.doc.contains("config") && f.doc["config"].is_object() &&
      f.doc["config"].contains("simulate"))
    sim = &f.doc["config"]["simulate"];
  if (!sim || *sim != cx.spec.simulate)
    throw Error(fmt::format(
        "{} is stale: its config.simulate differs from the \"simulate\" block of {} (claim '{}'); "
        "rerun `clbo simulate {}`",
        f.path, cx.spec.file, cx.claim.id, cx.spec.file));
  // Flags (--set, --cluster, --gpus, ...) change what ran without changing config.simulate.
  if (f.doc.contains("command_line"))
    throw Error(fmt::format(
        "{} was simulated with command-line changes to {} ({}), so it does not hold the runs "
        "claim '{}' reads; rerun `clbo simulate {}` without them, or give such a sweep its own "
        "-o file",
        f.path, cx.spec.file, json_excerpt(f.doc["command_line"], 120), cx.claim.id, cx.spec.file));
}

double select(Context& cx, const Selector& sel, json* chosen_where = nullptr) {
  const ResultsFile* f = cx.store.find(sel.results);
  if (!f) {
    std::string hint;
    if (sel.results == cx.spec.own_results() && !cx.spec.simulate.is_null())
      hint = fmt::format(" (run `clbo simulate {}`)", cx.spec.file);
    fail(cx, sel,
         fmt::format("results file {} does not exist{}", cx.store.path_of(sel.results), hint));
  }
  check_fresh(cx, *f);
  if (std::find(cx.files.begin(), cx.files.end(), f->key) == cx.files.end())
    cx.files.push_back(f->key);
  if (!f->doc.contains(sel.array) || !f->doc[sel.array].is_array())
    fail(cx, sel, fmt::format("{} has no top-level array \"{}\"", f->path, sel.array));
  const json& array = f->doc[sel.array];
  // Runs of several implementations sit side by side: one the selector does not name is
  // the one being evaluated (the file's primary by default).
  std::string implementation;
  if (!sel.where.contains("implementation")) {
    const auto listed = implementations_of(*f);
    implementation = !cx.implementation.empty() ? cx.implementation
                     : listed.empty()           ? std::string()
                                                : listed.front();
  }
  std::vector<const json*> matches;
  for (const auto& e : array) {
    if (!e.is_object()) continue;
    bool ok = true;
    for (auto it = sel.where.begin(); it != sel.where.end() && ok; ++it)
      ok = e.contains(it.key()) && e[it.key()] == it.value();
    if (ok && !implementation.empty() && e.contains("implementation"))
      ok = e["implementation"] == implementation;
    if (ok) matches.push_back(&e);
  }
  if (matches.empty())
    fail(cx, sel,
         fmt::format("matches no element of {} in {}{}", sel.array, f->path,
                     values_hint(array, sel.where)));
  if (matches.size() > 1)
    fail(cx, sel,
         fmt::format("matches {} elements of {} in {}; add fields to \"where\" so it matches "
                     "exactly one",
                     matches.size(), sel.array, f->path));
  std::string missing;
  const json* v = walk(*matches.front(), sel.field, missing);
  if (!v) fail(cx, sel, fmt::format("the matched element of {} has no \"{}\"", f->path, missing));
  if (!v->is_number())
    fail(cx, sel,
         fmt::format("\"{}\" in {} is {}, not a number", sel.field, f->path,
                     v->is_null() ? "null" : v->dump().substr(0, 60)));
  const double d = v->get<double>();
  if (!std::isfinite(d)) fail(cx, sel, fmt::format("\"{}\" is not finite", sel.field));
  if (chosen_where) *chosen_where = sel.where;
  return d;
}

double metric_value(Context& cx, const Metric& m, json* where_of_a = nullptr);

// Where-fields that differ between the elements of a max/min, shown as "gpus=64".
std::string describe_winner(const std::vector<json>& wheres, size_t best) {
  std::vector<std::string> parts;
  for (auto it = wheres[best].begin(); it != wheres[best].end(); ++it) {
    bool differs = false;
    for (const auto& w : wheres)
      if (!w.contains(it.key()) || w[it.key()] != it.value()) differs = true;
    if (differs)
      parts.push_back(
          fmt::format("{}={}", it.key(),
                      it.value().is_string() ? it.value().get<std::string>() : it.value().dump()));
  }
  return parts.empty() ? fmt::format("element {}", best + 1)
                       : fmt::format("{}", fmt::join(parts, ", "));
}

double metric_value(Context& cx, const Metric& m, json* where_of_a) {
  switch (m.op) {
    case Metric::Op::kValue:
      return select(cx, m.a, where_of_a);
    case Metric::Op::kRatio:
    case Metric::Op::kReduction: {
      const double a = select(cx, m.a, where_of_a), b = select(cx, m.b);
      if (b == 0) fail(cx, m.b, fmt::format("is zero, so the {} is undefined", to_string(m.op)));
      return m.op == Metric::Op::kRatio ? a / b : 1.0 - a / b;
    }
    default:
      throw Error("metric_value: max/min/unavailable are handled by the caller");
  }
}

}  // namespace

// One evaluation with the given implementation forced on runs that state one (empty: each
// file's primary).
static ClaimRow evaluate_with(const ClaimSpec& spec, const Claim& claim, const ResultsStore& store,
                              const std::string& implementation) {
  Context cx{spec, claim, store, {}, implementation};
  ClaimRow row;
  row.spec = &spec;
  row.claim = &claim;
  const Metric& m = claim.metric;
  if (m.op == Metric::Op::kUnavailable) {
    row.provenance = "published";
    row.reason = m.reason;
    return row;
  }
  double value = 0;
  if (m.op == Metric::Op::kMax || m.op == Metric::Op::kMin) {
    std::vector<double> values;
    std::vector<json> wheres;
    for (const Metric& sub : m.of) {
      json w = json::object();
      if (sub.op == Metric::Op::kMax || sub.op == Metric::Op::kMin) {
        // Nested max/min: evaluate recursively through a one-claim copy.
        Claim c = claim;
        c.metric = sub;
        c.scale = 1.0;
        ClaimRow r = evaluate_with(spec, c, store, implementation);
        for (const auto& k : r.files)
          if (std::find(cx.files.begin(), cx.files.end(), k) == cx.files.end())
            cx.files.push_back(k);
        values.push_back(*r.clbo_value);
      } else {
        values.push_back(metric_value(cx, sub, &w));
      }
      wheres.push_back(w);
    }
    const auto it = m.op == Metric::Op::kMax ? std::max_element(values.begin(), values.end())
                                             : std::min_element(values.begin(), values.end());
    const size_t best = static_cast<size_t>(it - values.begin());
    value = *it;
    row.winner = describe_winner(wheres, best);
  } else {
    value = metric_value(cx, m);
  }
  row.clbo_value = value * claim.scale;
  row.files = cx.files;
  if (claim.paper_value) {
    row.rel_error = (*row.clbo_value - *claim.paper_value) / *claim.paper_value;
    // The epsilon keeps a value exactly on the band's edge inside despite rounding.
    if (claim.tolerance)
      row.band =
          std::abs(*row.rel_error) <= *claim.tolerance + 1e-12 ? Band::kWithin : Band::kOutside;
  }
  bool any_sim = false, any_measured = false;
  for (const auto& k : row.files)
    (store.find(k)->schema == "clbo.simulate/1" ? any_sim : any_measured) = true;
  row.provenance = any_sim && any_measured ? "measured+simulated"
                   : any_sim               ? "simulated"
                                           : "measured";
  return row;
}

ClaimRow evaluate_claim(const ClaimSpec& spec, const Claim& claim, const ResultsStore& store) {
  ClaimRow row = evaluate_with(spec, claim, store, "");
  if (!row.clbo_value) return row;
  // The implementations every simulation file the claim read has run, in the first file's
  // order; the first file's primary is the row's.
  std::vector<std::string> common;
  bool first = true;
  for (const auto& k : row.files) {
    const auto listed = implementations_of(*store.find(k));
    if (listed.empty()) continue;
    if (first) {
      common = listed;
      row.implementation = listed.front();
      first = false;
      continue;
    }
    std::vector<std::string> kept;
    for (const auto& i : common)
      if (std::find(listed.begin(), listed.end(), i) != listed.end()) kept.push_back(i);
    common = kept;
  }
  if (common.size() < 2) return row;
  for (const auto& im : common)
    row.by_implementation.push_back({im, *evaluate_with(spec, claim, store, im).clbo_value});
  return row;
}

std::vector<ClaimRow> evaluate_all(const std::vector<ClaimSpec>& specs, const ResultsStore& store) {
  std::vector<ClaimRow> rows;
  for (const auto& s : specs)
    for (const auto& c : s.claims) rows.push_back(evaluate_claim(s, c, store));
  return rows;
}

Counts count_rows(const std::vector<ClaimRow>& rows) {
  Counts c;
  c.rows = rows.size();
  for (const auto& r : rows) {
    if (!r.clbo_value)
      ++c.not_computed;
    else if (r.band == Band::kNotApplicable)
      ++c.no_band;
    if (r.band == Band::kWithin) ++c.within;
    if (r.band == Band::kOutside) ++c.outside;
  }
  return c;
}

}  // namespace clbo::report
