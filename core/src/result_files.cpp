#include "clbo/core/result_files.hpp"

#include <filesystem>
#include <vector>

namespace clbo {

std::string default_results_path(const std::string& experiment_path) {
  namespace fs = std::filesystem;
  const fs::path p = fs::path(experiment_path).lexically_normal();
  const fs::path parent = p.parent_path();
  const std::vector<fs::path> folders(parent.begin(), parent.end());
  for (size_t i = folders.size(); i-- > 0;) {
    if (folders[i] != "experiments") continue;
    fs::path out;
    for (size_t k = 0; k < folders.size(); ++k) out /= k == i ? fs::path("results") : folders[k];
    return (out / p.filename()).string();
  }
  return (fs::path("results") / p.filename()).string();
}

nlohmann::json without_timing(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("timing");
    for (auto& [key, value] : j.items()) value = without_timing(std::move(value));
  } else if (j.is_array()) {
    for (auto& value : j) value = without_timing(std::move(value));
  }
  return j;
}

}  // namespace clbo
