#include "clbo/validate/kernel_contention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>

#include "clbo/core/error.hpp"
#include "clbo/sim/kernel_model.hpp"
#include "clbo/validate/compare.hpp"

namespace clbo::validate {
namespace {

const nlohmann::json& benchmarks_of(const nlohmann::json& bench, const std::string& file) {
  const nlohmann::json& raw = sim::google_benchmark_of(bench);
  if (!raw.is_object() || !raw.contains("benchmarks") || !raw["benchmarks"].is_array())
    throw InputError(file, "benchmarks", raw.is_object() ? "missing" : raw.dump(),
                     "expected the Google Benchmark JSON of clbo bench kernels");
  return raw["benchmarks"];
}

// A row's name without the "/iterations:N" that a fixed iteration count (bench_kernels_cpu
// --iterations) adds: the copies' rows and the alone benchmark's then name the same case.
std::string without_iterations(std::string name) {
  const std::string tag = "/iterations:";
  const size_t at = name.find(tag);
  if (at == std::string::npos) return name;
  size_t end = at + tag.size();
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  return name.erase(at, end - at);
}

// items_per_second of the iteration row named `name`: of its median repetition where it ran
// more than once (sim::median_iteration_rows).
double rate_of(const nlohmann::json& bench, const std::string& name, const std::string& file) {
  for (const nlohmann::json* b : sim::median_iteration_rows(benchmarks_of(bench, file)))
    if (without_iterations((*b)["name"].get<std::string>()) == name)
      return (*b)["items_per_second"].get<double>();
  throw InputError(file, "benchmarks", name,
                   "no iteration row of this name with a positive items_per_second");
}

// items_per_second of every repetition of the iteration row named `name`, in their order (the
// rows rate_of takes the median of).
std::vector<double> repetition_rates(const nlohmann::json& bench, const std::string& name,
                                     const std::string& file) {
  std::vector<double> rates;
  for (const auto& rows : sim::iteration_rows_by_benchmark(benchmarks_of(bench, file)))
    if (without_iterations(rows.front()->at("name").get<std::string>()) == name)
      for (const nlohmann::json* r : rows) rates.push_back((*r)["items_per_second"].get<double>());
  return rates;
}

}  // namespace

std::string streaming_probe_name(const nlohmann::json& kernel_bench, const std::string& file) {
  // The largest size out of cache: on a machine with a small cache the 1M-element run may be
  // out of cache too, but mostly served from it.
  std::string best;
  long long best_n = -1;
  for (const auto& b : benchmarks_of(kernel_bench, file)) {
    const std::string name = b.value("name", "");
    const std::string family = "BM_compress_fused/";
    const bool cached =
        b.contains("in_cache") && b["in_cache"].is_number() && b["in_cache"].get<double>() == 1.0;
    if (name.rfind(family, 0) != 0 || cached || b.value("run_type", "iteration") != "iteration")
      continue;
    const long long n = std::atoll(name.c_str() + family.size());
    if (n > best_n) best = name, best_n = n;
  }
  if (best.empty())
    throw InputError(file, "benchmarks", "BM_compress_fused",
                     "no run out of cache (in_cache != 1) to measure the streaming contention "
                     "with");
  return best;
}

double streaming_probe_bytes(const nlohmann::json& kernel_bench, const std::string& name,
                             const std::string& file) {
  for (const auto& b : benchmarks_of(kernel_bench, file))
    if (b.value("name", "") == name && b.contains("working_set_bytes") &&
        b["working_set_bytes"].is_number()) {
      // The alone run rotated buffer_sets copies of the buffers; the probe runs one.
      const double sets = b.contains("buffer_sets") && b["buffer_sets"].is_number() &&
                                  b["buffer_sets"].get<double>() >= 1
                              ? b["buffer_sets"].get<double>()
                              : 1.0;
      return b["working_set_bytes"].get<double>() / sets;
    }
  return 0;
}

std::string streaming_probe_filter(const std::string& name) {
  // "BM_compress_fused/67108864/real_time" -> "^BM_compress_fused/67108864/": the family and
  // its size, whatever suffixes Google Benchmark appends.
  const size_t first = name.find('/');
  const size_t second = first == std::string::npos ? first : name.find('/', first + 1);
  std::string filter = "^";
  filter += second == std::string::npos ? name + "$" : name.substr(0, second + 1);
  return filter;
}

int64_t contention_iterations(const nlohmann::json& kernel_bench, const std::string& name,
                              const std::string& file) {
  const double eps = rate_of(kernel_bench, name, file);
  const size_t first = name.find('/');
  const double n = first == std::string::npos ? 0 : std::atof(name.c_str() + first + 1);
  if (!(n > 0))
    throw InputError(file, "benchmarks", name, "expected the element count after the family");
  return std::max<int64_t>(3, static_cast<int64_t>(std::ceil(kContentionAloneTime_s * eps / n /
                                                             kContentionRepetitions)));
}

std::vector<int> contention_rank_counts(const ValidationSpec& spec) {
  std::set<int> counts;
  for (const ClusterConfig& c : spec.clusters)
    if (c.ranks() > 1) counts.insert(c.ranks());
  return {counts.begin(), counts.end()};
}

nlohmann::json streaming_contention_record(const std::string& name, const nlohmann::json& alone,
                                           const std::map<int, std::vector<nlohmann::json>>& copies,
                                           const std::string& file) {
  const double alone_eps = rate_of(alone, name, file);
  nlohmann::json by_ranks = nlohmann::json::object();
  for (const auto& [p, runs] : copies) {
    if (runs.size() != static_cast<size_t>(p))
      throw Error(fmt::format("{}: {} copies recorded for p = {}", file, runs.size(), p));
    std::vector<double> eps;
    nlohmann::json repetitions = nlohmann::json::array();
    for (const auto& r : runs) {
      eps.push_back(rate_of(r, name, file));
      repetitions.push_back(repetition_rates(r, name, file));
    }
    const double mid = median(eps);
    by_ranks[std::to_string(p)] = {{"copies_eps", eps},
                                   {"copies_repetitions_eps", repetitions},
                                   {"median_eps", mid},
                                   {"factor", alone_eps / mid}};
  }
  return {{"benchmark", name},
          {"alone_time_s", kContentionAloneTime_s},
          {"repetitions", kContentionRepetitions},
          {"alone_eps", alone_eps},
          {"alone_repetitions_eps", repetition_rates(alone, name, file)},
          {"by_ranks", by_ranks},
          {"definition",
           "factor = alone_eps / median_eps: how much slower the median of p copies run at once "
           "is than one copy alone; each copy's rate (and alone_eps) is the median of its "
           "repetitions"}};
}

double streaming_contention(const nlohmann::json& record, int ranks, const std::string& file) {
  if (!record.is_object() || !record.contains("by_ranks") || !record["by_ranks"].is_object())
    throw InputError(file, "by_ranks", record.is_object() ? "missing" : record.dump(),
                     "expected the streaming contention record of clbo validate");
  const std::string key = std::to_string(ranks);
  if (!record["by_ranks"].contains(key)) return 0;
  const nlohmann::json& f = record["by_ranks"][key];
  if (!f.contains("factor") || !f["factor"].is_number() || !(f["factor"].get<double>() > 0))
    throw InputError(file, "by_ranks." + key + ".factor",
                     f.contains("factor") ? f["factor"].dump() : "missing",
                     "expected a positive number");
  return f["factor"].get<double>();
}

StreamingFactor streaming_factor(double measured, double time_sharing) {
  if (measured < time_sharing) return {time_sharing, true};
  return {measured, false};
}

}  // namespace clbo::validate
