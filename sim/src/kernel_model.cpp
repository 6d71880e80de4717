#include "clbo/sim/kernel_model.hpp"

#include <algorithm>
#include <cmath>
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
                     {"mask_items_per_s", mask_eps},
                     {"scatter_items_per_s", scatter_eps}};
  if (llc_sharers > 0) {
    auto cached = [](const Cached& c) {
      return nlohmann::json{{"items_per_s", c.eps}, {"working_set_bytes", c.working_set_bytes}};
    };
    nlohmann::json server = nlohmann::json::object();
    for (const auto& [p, c] : server_cached_by_p) server[std::to_string(p)] = cached(c);
    j["cache"] = {{"llc_bytes", llc_bytes},
                  {"sharers", llc_sharers},
                  {"compress", cached(compress_cached)},
                  {"unpack", cached(unpack_cached)},
                  {"compact", cached(compact_cached)},
                  {"scatter", cached(scatter_cached)},
                  {"server_by_p", server}};
  }
  return j;
}

namespace {

// Seconds for a slice of c elements decoded from p pieces, from rates by p: the time per
// element linear in p between the measured p, the nearest one outside them.
double by_p_s(const std::map<int, double>& eps_by_p, double c, int p) {
  const auto lo = eps_by_p.begin();
  const auto hi = std::prev(eps_by_p.end());
  if (p <= lo->first) return c / lo->second;
  if (p >= hi->first) return c / hi->second;
  const auto b = eps_by_p.lower_bound(p);
  if (b->first == p) return c / b->second;
  const auto a = std::prev(b);
  const double f = static_cast<double>(p - a->first) / (b->first - a->first);
  return c * (1 / a->second + f * (1 / b->second - 1 / a->second));
}

// n elements at a measured streaming rate eps (> 0) or its in-cache twin, by the cache model.
double measured_s(const KernelModel& k, size_t n, double eps, const KernelModel::Cached& cached,
                  double ws) {
  const double x = static_cast<double>(n);
  return k.kernel_s(x / eps, cached.eps > 0 ? x / cached.eps : 0, cached.working_set_bytes, ws);
}

}  // namespace

double KernelModel::kernel_s(double streaming_s, double cached_s, double cached_ws,
                             double working_set_bytes) const {
  if (llc_sharers <= 0 || llc_bytes <= 0 || cached_s <= 0 || cached_ws <= 0 ||
      working_set_bytes <= 0 || streaming_s <= cached_s)
    return streaming_s;
  const double total = working_set_bytes * llc_sharers;
  if (total <= cached_ws) return cached_s;
  if (total >= llc_bytes || llc_bytes <= cached_ws) return streaming_s;
  const double f = std::log(total / cached_ws) / std::log(llc_bytes / cached_ws);
  return std::exp(std::log(cached_s) + f * (std::log(streaming_s) - std::log(cached_s)));
}

double KernelModel::worker_compress_s(size_t n, double ws) const {
  if (compress_eps > 0) return measured_s(*this, n, compress_eps, compress_cached, ws);
  return seconds(static_cast<double>(n) * compress_Bpe);
}

double KernelModel::server_s(size_t n, int p, double ws) const {
  const double c = static_cast<double>(n) / p;
  if (!server_eps_by_p.empty()) {
    const double streaming = by_p_s(server_eps_by_p, c, p);
    std::map<int, double> cached_eps;
    double cached_ws = 0;
    for (const auto& [q, r] : server_cached_by_p)
      if (r.eps > 0) {
        cached_eps[q] = r.eps;
        // The largest of the in-cache rows' working sets: all of them fit.
        cached_ws = std::max(cached_ws, r.working_set_bytes);
      }
    if (cached_eps.empty()) return streaming;
    return kernel_s(streaming, by_p_s(cached_eps, c, p), cached_ws, ws);
  }
  if (server_eps > 0) return c / server_eps;
  return seconds(static_cast<double>(n) / 8 + c * compress_Bpe);
}

double KernelModel::unpack_s(size_t n, double ws) const {
  if (unpack_eps > 0) return measured_s(*this, n, unpack_eps, unpack_cached, ws);
  return seconds(static_cast<double>(n) * unpack_Bpe);
}

double KernelModel::sparse_compact_s(size_t n, size_t selected, double ws) const {
  if (compact_eps > 0) return measured_s(*this, n, compact_eps, compact_cached, ws);
  return seconds(static_cast<double>(n) * compact_Bpe +
                 static_cast<double>(selected) * compact_selected_Bpe);
}

double KernelModel::sparse_scatter_s(size_t n, double ws) const {
  if (scatter_eps > 0) return measured_s(*this, n, scatter_eps, scatter_cached, ws);
  return compact_eps > 0 ? sparse_compact_s(n, 0, ws) : 0.0;  // the compaction stands in
}

double KernelModel::compaction_s(size_t n, size_t selected) const {
  if (compact_eps > 0 && mask_eps > 0)
    return static_cast<double>(n) / mask_eps + sparse_compact_s(n, selected) + sparse_scatter_s(n);
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

std::vector<std::vector<const nlohmann::json*>> iteration_rows_by_benchmark(
    const nlohmann::json& benchmarks) {
  std::vector<std::vector<const nlohmann::json*>> groups;
  std::map<std::string, size_t> group_of;
  if (!benchmarks.is_array()) return groups;
  for (const auto& b : benchmarks) {
    if (!b.is_object() || !b.contains("name") || !b["name"].is_string()) continue;
    if (b.value("run_type", "iteration") != "iteration" || !b.contains("items_per_second") ||
        !b["items_per_second"].is_number() || !(b["items_per_second"].get<double>() > 0))
      continue;
    const auto [at, added] = group_of.emplace(b["name"].get<std::string>(), groups.size());
    if (added) groups.emplace_back();
    groups[at->second].push_back(&b);
  }
  return groups;
}

std::vector<const nlohmann::json*> median_iteration_rows(const nlohmann::json& benchmarks) {
  std::vector<const nlohmann::json*> out;
  for (std::vector<const nlohmann::json*> rows : iteration_rows_by_benchmark(benchmarks)) {
    auto rate = [](const nlohmann::json* r) { return (*r)["items_per_second"].get<double>(); };
    // Ties keep the repetitions' order, so the choice does not depend on the sort.
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const auto* a, const auto* b) { return rate(a) < rate(b); });
    out.push_back(rows[(rows.size() - 1) / 2]);
  }
  return out;
}

double bench_context_number(const nlohmann::json& bench, const std::string& key,
                            const std::string& file) {
  if (!bench.is_object() || !bench.contains("context") || !bench["context"].is_object() ||
      !bench["context"].contains(key))
    return 0.0;
  const nlohmann::json& v = bench["context"][key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return x;
  }
  throw InputError(file, "context." + key, v.dump(), "expected a number");
}

const nlohmann::json& google_benchmark_of(const nlohmann::json& bench) {
  if (bench.is_object() && bench.contains("schema") && bench["schema"] == "clbo.bench.kernels/1" &&
      bench.contains("benchmark"))
    return bench["benchmark"];
  return bench;
}

void load_kernel_bench(KernelModel& k, const nlohmann::json& wrapped, const std::string& file) {
  const nlohmann::json& bench = google_benchmark_of(wrapped);
  if (!bench.is_object() || !bench.contains("benchmarks") || !bench["benchmarks"].is_array())
    throw InputError(file, "benchmarks", bench.is_object() ? "missing" : bench.dump().substr(0, 80),
                     "expected Google Benchmark JSON (clbo bench kernels --out ...)");
  struct Want {
    std::vector<std::string> names;
    double* rate;
    KernelModel::Cached* cached;  // nullptr: no in-cache rate kept
  };
  const std::vector<Want> wants = {
      {{"BM_compress_fused", "BM_Compress"}, &k.compress_eps, &k.compress_cached},
      {{"BM_unpack_scale", "BM_Unpack"}, &k.unpack_eps, &k.unpack_cached},
      {{"BM_server_step", "BM_ServerStep"}, &k.server_eps, nullptr},
      {{"BM_compact", "BM_MaskCompact"}, &k.compact_eps, &k.compact_cached},
      {{"BM_scatter"}, &k.scatter_eps, &k.scatter_cached},
      {{"BM_random_mask", "BM_RandomMask"}, &k.mask_eps, nullptr}};
  int found = 0;
  std::map<int, long> server_size_by_p, cached_size_by_p;
  const std::vector<const nlohmann::json*> rows = median_iteration_rows(bench["benchmarks"]);
  for (const Want& w : wants) {
    long best_size = -1, cached_size = -1;
    for (const nlohmann::json* row : rows) {
      const nlohmann::json& b = *row;
      const std::string name = b["name"].get<std::string>();
      const std::string base = name.substr(0, name.find('/'));
      if (std::find(w.names.begin(), w.names.end(), base) == w.names.end()) continue;
      const BenchArgs a = bench_args(name);
      const double eps = b["items_per_second"].get<double>();
      if (a.size > best_size) {
        best_size = a.size;
        *w.rate = eps;
      }
      // The CPU binary's counters: in_cache = 1 when the run's working set fit the cache.
      const bool in_cache = b.contains("in_cache") && b["in_cache"].is_number() &&
                            b["in_cache"].get<double>() == 1.0 && b.contains("working_set_bytes") &&
                            b["working_set_bytes"].is_number();
      const KernelModel::Cached cached{eps, in_cache ? b["working_set_bytes"].get<double>() : 0};
      if (in_cache && w.cached && a.size > cached_size) {
        cached_size = a.size;
        *w.cached = cached;
      }
      if (w.rate == &k.server_eps && a.p > 0) {
        const int p = static_cast<int>(a.p);
        if (!server_size_by_p.count(p) || a.size > server_size_by_p[p]) {
          server_size_by_p[p] = a.size;
          k.server_eps_by_p[p] = eps;
        }
        if (in_cache && (!cached_size_by_p.count(p) || a.size > cached_size_by_p[p])) {
          cached_size_by_p[p] = a.size;
          k.server_cached_by_p[p] = cached;
        }
      }
    }
    found += best_size >= 0 ? 1 : 0;
  }
  // The cache a CPU's cores share: sysfs's index3 size; sysconf's can be the whole socket's.
  for (const char* key : {"llc_bytes_sysfs", "llc_bytes"}) {
    const double bytes = bench_context_number(bench, key, file);
    if (bytes > 0) {
      k.llc_bytes = bytes;
      break;
    }
  }
  if (found == 0)
    throw InputError(file, "benchmarks", "(no compression kernels)",
                     "found none of BM_compress_fused, BM_unpack_scale, BM_server_step, "
                     "BM_compact, BM_random_mask (or their CUDA names)");
  k.measured_from = file;
}

}  // namespace clbo::sim
