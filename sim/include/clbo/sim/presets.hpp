// Presets compiled into the binary from experiments/clusters/*.json and
// experiments/workloads/*.json, so a preset name works from any working directory.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::sim {

struct EmbeddedPreset {
  const char* kind;  // "clusters", "workloads" or "sim" (experiments/sim)
  const char* name;  // file stem, e.g. "paper-eth-v100"
  const char* path;  // repository path it was compiled from
  const char* json;
};

const std::vector<EmbeddedPreset>& embedded_presets();

// Names of the presets of one kind, sorted.
std::vector<std::string> preset_names(const std::string& kind);

// The preset's JSON. An unknown name throws InputError(where, field, name) with the nearest
// known name suggested.
nlohmann::json preset_json(const std::string& kind, const std::string& name,
                           const std::string& where, const std::string& field);

// The repository path a preset came from (for results and error messages).
std::string preset_path(const std::string& kind, const std::string& name);

}  // namespace clbo::sim
