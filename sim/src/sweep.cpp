#include "clbo/sim/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "clbo/core/error.hpp"
#include "clbo/core/json_reader.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/workload.hpp"

namespace clbo::sim {

namespace {

constexpr const char* kCommandLine = "<command line>";

// One step of a document path: a key, or an index into an array.
struct PathStep {
  std::string key;
  std::optional<size_t> index;
};

[[noreturn]] void set_error(const std::string& text, const std::string& why) {
  throw InputError(kCommandLine, "--set", text, why);
}

std::vector<PathStep> parse_path(const std::string& path, const std::string& text) {
  std::vector<PathStep> steps;
  size_t i = 0;
  while (i < path.size()) {
    size_t end = i;
    while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
    if (end == i)
      set_error(text,
                "expected a field such as micro_batch, cluster.nic.rate_Gbps or "
                "optimizers[1].optimizer.params.freeze_step");
    steps.push_back({path.substr(i, end - i), std::nullopt});
    i = end;
    while (i < path.size() && path[i] == '[') {
      const size_t close = path.find(']', i);
      const std::string digits =
          close == std::string::npos ? "" : path.substr(i + 1, close - i - 1);
      if (digits.empty() || digits.size() > 9 ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        set_error(text, "an array index is written [0], [1], ...");
      steps.push_back({"", static_cast<size_t>(std::stoul(digits))});
      i = close + 1;
    }
    if (i < path.size()) {
      if (path[i] != '.') set_error(text, "expected '.' after an array index");
      ++i;
      if (i == path.size()) set_error(text, "the field ends with '.'");
    }
  }
  if (steps.empty()) set_error(text, "no field before '='");
  return steps;
}

std::string shown_path(const std::vector<PathStep>& steps, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && i < steps.size(); ++i)
    out += steps[i].index ? fmt::format("[{}]", *steps[i].index)
                          : (out.empty() ? "" : ".") + steps[i].key;
  return out;
}

// Sets node at `steps` to value, creating objects on the way; arrays must hold the index.
void set_at(nlohmann::json& root, const std::vector<PathStep>& steps, const nlohmann::json& value,
            const std::string& text) {
  nlohmann::json* node = &root;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PathStep& s = steps[i];
    if (s.index) {
      if (!node->is_array() || *s.index >= node->size())
        set_error(text, fmt::format("'{}' is {}, so it has no element [{}]", shown_path(steps, i),
                                    node->is_array() ? fmt::format("an array of {}", node->size())
                                                     : json_excerpt(*node, 60),
                                    *s.index));
      node = &(*node)[*s.index];
    } else {
      if (node->is_null()) *node = nlohmann::json::object();
      if (!node->is_object())
        set_error(text, fmt::format("'{}' is {}, not an object with fields", shown_path(steps, i),
                                    json_excerpt(*node, 60)));
      node = &(*node)[s.key];
    }
  }
  *node = value;
}

// A cluster reference turned into the object it stands for, so its fields can be edited.
void inline_cluster(nlohmann::json& ref, const std::string& file, const std::string& field) {
  if (ref.is_object()) return;
  ref = cluster_json(ref, file, field);
}

// A --set into the ds_config may name a field the config holds or one DeepSpeed reads (at
// the top level or in its fp16, bf16 and zero_optimization blocks); anything else is a typo
// that DeepSpeed would ignore, so the sweep's points would all be the same.
void check_deepspeed_path(const nlohmann::json& sim, const std::vector<PathStep>& steps,
                          const std::string& text) {
  const nlohmann::json* node = sim.contains("ds_config") ? &sim["ds_config"] : nullptr;
  for (size_t i = 2; i < steps.size() && i < 4; ++i) {
    if (steps[i].index) return;
    const std::vector<std::string> known = deepspeed_known_fields(i == 2 ? "" : steps[2].key);
    if (known.empty()) return;  // a block whose fields clbo does not list (optimizer, ...)
    const bool present = node && node->is_object() && node->contains(steps[i].key);
    if (!present && std::find(known.begin(), known.end(), steps[i].key) == known.end())
      set_error(text, fmt::format("'{}' is not in the ds_config nor a field DeepSpeed reads "
                                  "there{}",
                                  shown_path(steps, i + 1), did_you_mean(steps[i].key, known)));
    node = present ? &(*node)[steps[i].key] : nullptr;
  }
}

void apply_axis(nlohmann::json& doc, const SetAxis& axis, const nlohmann::json& value,
                const std::string& file) {
  if (!doc.is_object()) set_error(axis.text, "the experiment is not a JSON object");
  nlohmann::json& sim = doc["simulate"];
  if (!sim.is_object()) set_error(axis.text, "the experiment has no simulate block");
  if (axis.path.rfind("cluster.", 0) == 0) {
    const std::vector<PathStep> steps = parse_path(axis.path.substr(8), axis.text);
    bool any = false;
    if (sim.contains("clusters") && sim["clusters"].is_array())
      for (size_t i = 0; i < sim["clusters"].size(); ++i) {
        inline_cluster(sim["clusters"][i], file, fmt::format("simulate.clusters[{}]", i));
        set_at(sim["clusters"][i], steps, value, axis.text);
        any = true;
      }
    if (sim.contains("rows") && sim["rows"].is_array())
      for (size_t i = 0; i < sim["rows"].size(); ++i) {
        nlohmann::json& row = sim["rows"][i];
        if (!row.is_object() || !row.contains("cluster")) continue;
        inline_cluster(row["cluster"], file, fmt::format("simulate.rows[{}].cluster", i));
        set_at(row["cluster"], steps, value, axis.text);
        any = true;
      }
    if (!any) set_error(axis.text, "the experiment names no cluster to edit (give --cluster)");
    return;
  }
  const std::vector<PathStep> steps = parse_path(axis.path, axis.text);
  // A workload named by a preset or a path: edit a copy of the object it stands for.
  if (steps.size() > 2 && steps[1].key == "workload" && sim.contains("workload") &&
      sim["workload"].is_string())
    sim["workload"] = workload_json(sim["workload"], file, "simulate.workload");
  // A ds_config named by its path: read it (as DeepSpeed would) and edit the copy.
  if (steps.size() > 2 && steps[1].key == "ds_config" && sim.contains("ds_config") &&
      sim["ds_config"].is_string())
    sim["ds_config"] = load_json_file_named_by(sim["ds_config"].get<std::string>(), file,
                                               "simulate.ds_config", deepspeed_json_options());
  if (steps.size() > 2 && steps[1].key == "ds_config") check_deepspeed_path(sim, steps, axis.text);
  set_at(doc, steps, value, axis.text);
}

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::vector<nlohmann::json> parse_flag_values(const std::string& text, const std::string& flag) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      cur += c;
      if (c == '\\' && i + 1 < text.size())
        cur += text[++i];
      else if (c == '"')
        quoted = false;
      continue;
    }
    if (c == '"') quoted = true;
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  std::vector<nlohmann::json> out;
  for (const std::string& p : parts) {
    if (p.empty())
      throw InputError(kCommandLine, flag, text,
                       "an empty value (values are separated by single commas)");
    try {
      out.push_back(parse_json(p, kCommandLine));
    } catch (const InputError&) {
      out.push_back(p);  // a bare word: fp16, paper-eth-v100, my/cluster.json
    }
  }
  return out;
}

SetAxis parse_set_flag(const std::string& text) {
  SetAxis a;
  a.text = text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    set_error(text, "expected FIELD=V1,V2,... (for example micro_batch=8,16)");
  a.field = text.substr(0, eq);
  if (text.size() == eq + 1) set_error(text, "no value after '='");
  a.values = parse_flag_values(text.substr(eq + 1), "--set");
  std::string f = a.field;
  if (f.rfind("simulate.", 0) == 0) f = f.substr(9);
  if (f.rfind("clusters.", 0) == 0) f = "cluster." + f.substr(9);
  a.path = f.rfind("cluster.", 0) == 0 ? f : "simulate." + f;
  parse_path(a.path.rfind("cluster.", 0) == 0 ? a.path.substr(8) : a.path, text);  // check
  return a;
}

nlohmann::json apply_flags(nlohmann::json doc, const CommandLineFlags& flags,
                           const std::string& file) {
  if (!doc.is_object()) return doc;  // the parser names what is wrong with it
  nlohmann::json& sim = doc["simulate"];
  if (sim.is_null()) sim = nlohmann::json::object();
  if (!sim.is_object()) return doc;
  if (!flags.ds_config.empty()) {
    sim["ds_config"] = flags.ds_config;
    // The config sets these; the command line's config replaces the experiment's.
    for (const char* k : {"optimizers", "micro_batch", "batch_size", "grad_acc", "backend",
                          "mpi_cuda_aware", "grad_dtype"})
      sim.erase(k);
    if (sim.contains("rows") && sim["rows"].is_array())
      for (auto& row : sim["rows"])
        if (row.is_object())
          for (const char* k : {"micro_batch", "batch_size", "grad_acc"}) row.erase(k);
  }
  if (!flags.workload.empty()) sim["workload"] = flags.workload;
  if ((!flags.clusters.empty() || !flags.gpus.empty()) && sim.contains("rows"))
    throw InputError(file, "simulate.rows", fmt::format("{} rows", sim["rows"].size()),
                     "this experiment lists its points as rows (each with its cluster, GPUs and "
                     "batch); --cluster and --gpus set clusters × gpus instead: edit the rows, "
                     "or leave the flags out");
  if (!flags.clusters.empty()) {
    sim["clusters"] = nlohmann::json::array();
    for (const std::string& c : flags.clusters) sim["clusters"].push_back(c);
  }
  if (!flags.gpus.empty()) sim["gpus"] = parse_flag_values(flags.gpus, "--gpus");
  if (!flags.steps.empty()) {
    const auto v = parse_flag_values(flags.steps, "--steps");
    if (v.size() != 1)
      throw InputError(kCommandLine, "--steps", flags.steps,
                       "one step count (sweep several with --set total_steps=N1,N2)");
    sim["total_steps"] = v.front();
  }
  return doc;
}

std::vector<SweepPoint> sweep_points(const nlohmann::json& doc, const std::vector<SetAxis>& axes,
                                     const std::string& file) {
  size_t total = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (axes[j].path == axes[i].path)
        throw InputError(kCommandLine, "--set", axes[i].text,
                         fmt::format("sets '{}' again (first: --set {}); give one --set per "
                                     "field with all its values",
                                     axes[i].field, axes[j].text));
    total *= axes[i].values.size();
    if (total > kMaxSweepPoints)
      throw InputError(kCommandLine, "--set", axes[i].text,
                       fmt::format("the sweep would have more than {} points", kMaxSweepPoints));
  }
  std::vector<SweepPoint> points;
  std::vector<size_t> at(axes.size(), 0);
  for (size_t n = 0; n < total; ++n) {
    SweepPoint p;
    p.doc = doc;
    for (size_t i = 0; i < axes.size(); ++i) {
      const nlohmann::json& v = axes[i].values[at[i]];
      apply_axis(p.doc, axes[i], v, file);
      p.set[axes[i].field] = v;
      p.label += (p.label.empty() ? "" : " ") + axes[i].field + "=" + value_text(v);
    }
    points.push_back(std::move(p));
    for (size_t i = axes.size(); i-- > 0;) {  // the last axis fastest
      if (++at[i] < axes[i].values.size()) break;
      at[i] = 0;
    }
  }
  return points;
}

nlohmann::json flags_record(const CommandLineFlags& flags, const std::vector<SetAxis>& axes) {
  nlohmann::json r = nlohmann::json::object();
  if (!flags.ds_config.empty()) r["ds_config"] = flags.ds_config;
  if (!flags.workload.empty()) r["workload"] = flags.workload;
  if (!flags.clusters.empty()) r["clusters"] = flags.clusters;
  if (!flags.gpus.empty()) r["gpus"] = parse_flag_values(flags.gpus, "--gpus");
  if (!flags.steps.empty()) r["steps"] = parse_flag_values(flags.steps, "--steps").front();
  if (!axes.empty()) {
    r["set"] = nlohmann::json::array();
    for (const SetAxis& a : axes)
      r["set"].push_back({{"field", a.field}, {"path", a.path}, {"values", a.values}});
  }
  return r;
}

nlohmann::json merge_sweep_results(const nlohmann::json& doc, const std::vector<SweepPoint>& points,
                                   std::vector<nlohmann::json> results) {
  if (results.empty() || results.size() != points.size())
    throw Error("merge_sweep_results: one results document per sweep point is needed");
  nlohmann::json merged = results.front();
  merged["config"] = doc;
  nlohmann::json runs = nlohmann::json::array(), listed = nlohmann::json::array(),
                 groups = nlohmann::json::array(), warnings = nlohmann::json::array();
  double wall = 0;
  for (size_t k = 0; k < results.size(); ++k) {
    nlohmann::json& res = results[k];
    for (auto& run : res["runs"]) {
      run["sweep_point"] = k;
      run["set"] = points[k].set;
      runs.push_back(std::move(run));
    }
    listed.push_back({{"set", points[k].set},
                      {"label", points[k].label},
                      {"config", std::move(res["config"])},
                      {"inputs", std::move(res["inputs"])}});
    for (const auto& w : res.value("warnings", nlohmann::json::array()))
      if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
    wall += res["timing"].value("wall_s", 0.0);
    for (auto& g : res["timing"]["groups"]) {
      g["sweep_point"] = k;
      groups.push_back(std::move(g));
    }
  }
  merged["runs"] = std::move(runs);
  merged["sweep"] = {{"points", std::move(listed)}};
  merged.erase("warnings");
  if (!warnings.empty()) merged["warnings"] = std::move(warnings);
  merged["timing"] = {{"wall_s", wall}, {"groups", std::move(groups)}};
  return merged;
}

}  // namespace clbo::sim
