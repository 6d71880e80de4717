#include "clbo/sim/presets.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "clbo/core/error.hpp"
#include "clbo/core/json_reader.hpp"

namespace clbo::sim {

std::vector<std::string> preset_names(const std::string& kind) {
  std::vector<std::string> names;
  for (const auto& p : embedded_presets())
    if (kind == p.kind) names.emplace_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json preset_json(const std::string& kind, const std::string& name,
                           const std::string& where, const std::string& field) {
  for (const auto& p : embedded_presets()) {
    if (kind != p.kind || name != p.name) continue;
    return parse_json(p.json, p.path);
  }
  const auto names = preset_names(kind);
  const std::string what = kind == "clusters" ? "cluster preset" : "workload";
  throw InputError(where, field, name,
                   fmt::format("unknown {}{} (known: {})", what, did_you_mean(name, names),
                               fmt::join(names, ", ")));
}

std::string preset_path(const std::string& kind, const std::string& name) {
  for (const auto& p : embedded_presets())
    if (kind == p.kind && name == p.name) return p.path;
  return "";
}

}  // namespace clbo::sim
