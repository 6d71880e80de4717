#include "clbo/sim/kernel_model.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "clbo/core/error.hpp"

namespace clbo::sim {

nlohmann::json KernelModel::to_json() const {
  nlohmann::json j = {{"hbm_GBps", hbm_Bps / 1e9},
                      {"efficiency", efficiency},
                      {"compress_bytes_per_elem", compress_Bpe},
                      {"unpack_bytes_per_elem", unpack_Bpe},
                      {"compact_bytes_per_elem", compact_Bpe},
                      {"compact_selected_bytes", compact_selected_Bpe}};
  if (!measured_from.empty())
    j["measured"] = {{"file", measured_from},
                     {"compress_items_per_s", compress_eps},
                     {"unpack_items_per_s", unpack_eps},
                     {"server_items_per_s", server_eps},
                     {"compact_items_per_s", compact_eps},
                     {"mask_items_per_s", mask_eps}};
  return j;
}

double KernelModel::worker_compress_s(size_t n) const {
  if (compress_eps > 0) return static_cast<double>(n) / compress_eps;
  return seconds(static_cast<double>(n) * compress_Bpe);
}

double KernelModel::server_s(size_t n, int p) const {
  const double c = static_cast<double>(n) / p;
  if (server_eps > 0) return c / server_eps;
  return seconds(static_cast<double>(n) / 8 + c * compress_Bpe);
}

double KernelModel::unpack_s(size_t n) const {
  if (unpack_eps > 0) return static_cast<double>(n) / unpack_eps;
  return seconds(static_cast<double>(n) * unpack_Bpe);
}

double KernelModel::compaction_s(size_t n, size_t selected) const {
  if (compact_eps > 0 && mask_eps > 0)
    return static_cast<double>(n) / mask_eps + static_cast<double>(n) / compact_eps;
  return seconds(static_cast<double>(n) * compact_Bpe +
                 static_cast<double>(selected) * compact_selected_Bpe);
}

void load_kernel_bench(KernelModel& k, const nlohmann::json& bench, const std::string& file) {
  // `clbo bench kernels` writes Google Benchmark's JSON as it is (clbo.bench.kernels/2);
  // earlier versions wrapped it in a clbo.bench.kernels/1 envelope (results/SCHEMA.md).
  if (bench.is_object() && bench.contains("schema") && bench["schema"] == "clbo.bench.kernels/1" &&
      bench.contains("benchmark"))
    return load_kernel_bench(k, bench["benchmark"], file);
  if (!bench.is_object() || !bench.contains("benchmarks") || !bench["benchmarks"].is_array())
    throw InputError(file, "benchmarks", bench.is_object() ? "missing" : bench.dump().substr(0, 80),
                     "expected Google Benchmark JSON (clbo bench kernels --out ...)");
  struct Want {
    std::vector<std::string> names;
    double* rate;
  };
  const std::vector<Want> wants = {{{"BM_compress_fused", "BM_Compress"}, &k.compress_eps},
                                   {{"BM_unpack_scale", "BM_Unpack"}, &k.unpack_eps},
                                   {{"BM_server_step", "BM_ServerStep"}, &k.server_eps},
                                   {{"BM_compact", "BM_MaskCompact"}, &k.compact_eps},
                                   {{"BM_random_mask", "BM_RandomMask"}, &k.mask_eps}};
  int found = 0;
  for (const Want& w : wants) {
    long best_size = -1;
    for (const auto& b : bench["benchmarks"]) {
      if (!b.is_object() || !b.contains("name") || !b["name"].is_string()) continue;
      if (b.value("run_type", "iteration") != "iteration" || !b.contains("items_per_second"))
        continue;
      const std::string name = b["name"].get<std::string>();
      const size_t slash = name.find('/');
      const std::string base = name.substr(0, slash);
      if (std::find(w.names.begin(), w.names.end(), base) == w.names.end()) continue;
      const long size =
          slash == std::string::npos ? 0 : std::strtol(name.c_str() + slash + 1, nullptr, 10);
      if (size > best_size) {
        best_size = size;
        *w.rate = b["items_per_second"].get<double>();
      }
    }
    found += best_size >= 0 ? 1 : 0;
  }
  if (found == 0)
    throw InputError(file, "benchmarks", "(no compression kernels)",
                     "found none of BM_compress_fused, BM_unpack_scale, BM_server_step, "
                     "BM_compact, BM_random_mask (or their CUDA names)");
  k.measured_from = file;
}

}  // namespace clbo::sim
