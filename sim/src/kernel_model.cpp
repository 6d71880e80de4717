#include "clbo/sim/kernel_model.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string>
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
  nlohmann::json by_p = nlohmann::json::object();
  for (const auto& [p, eps] : server_eps_by_p) by_p[std::to_string(p)] = eps;
  if (!measured_from.empty())
    j["measured"] = {{"file", measured_from},
                     {"compress_items_per_s", compress_eps},
                     {"unpack_items_per_s", unpack_eps},
                     {"server_items_per_s", server_eps},
                     {"server_items_per_s_by_p", by_p},
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
  if (!server_eps_by_p.empty()) {
    // Time per element of the slice, linear in the pieces decoded.
    const auto lo = server_eps_by_p.begin();
    const auto hi = std::prev(server_eps_by_p.end());
    if (p <= lo->first) return c / lo->second;
    if (p >= hi->first) return c / hi->second;
    const auto b = server_eps_by_p.lower_bound(p);
    if (b->first == p) return c / b->second;
    const auto a = std::prev(b);
    const double f = static_cast<double>(p - a->first) / (b->first - a->first);
    return c * (1 / a->second + f * (1 / b->second - 1 / a->second));
  }
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

namespace {

// A benchmark name's size and p: "BM_x/1048576/real_time" → 1048576, and Google Benchmark's
// named arguments, "BM_server_step/c:1048576/p:4/real_time" → c and p. The first unnamed
// number is the size; "real_time", "iterations:30" and the like are not arguments.
struct BenchArgs {
  long size = 0, p = 0;  // p = 0: not named
};
BenchArgs bench_args(const std::string& name) {
  BenchArgs a;
  bool sized = false;
  for (size_t at = name.find('/'); at != std::string::npos;) {
    const size_t next = name.find('/', at + 1);
    const std::string tok =
        name.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    at = next;
    const size_t colon = tok.find(':');
    const std::string key = colon == std::string::npos ? "" : tok.substr(0, colon);
    const std::string digits = colon == std::string::npos ? tok : tok.substr(colon + 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long v = std::strtol(digits.c_str(), nullptr, 10);
    if (key == "p") {
      a.p = v;
    } else if (key == "c" || (key.empty() && !sized)) {
      a.size = v;
      sized = true;
    }
  }
  return a;
}

}  // namespace

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
  std::map<int, long> server_size_by_p;
  for (const Want& w : wants) {
    long best_size = -1;
    for (const auto& b : bench["benchmarks"]) {
      if (!b.is_object() || !b.contains("name") || !b["name"].is_string()) continue;
      if (b.value("run_type", "iteration") != "iteration" || !b.contains("items_per_second") ||
          !b["items_per_second"].is_number())
        continue;
      const std::string name = b["name"].get<std::string>();
      const std::string base = name.substr(0, name.find('/'));
      if (std::find(w.names.begin(), w.names.end(), base) == w.names.end()) continue;
      const BenchArgs a = bench_args(name);
      const double eps = b["items_per_second"].get<double>();
      if (a.size > best_size) {
        best_size = a.size;
        *w.rate = eps;
      }
      if (w.rate == &k.server_eps && a.p > 0) {
        const int p = static_cast<int>(a.p);
        if (!server_size_by_p.count(p) || a.size > server_size_by_p[p]) {
          server_size_by_p[p] = a.size;
          k.server_eps_by_p[p] = eps;
        }
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
