// The JSON `clbo bench kernels` saves is Google Benchmark's own with clbo's metadata added:
// everything tools/compare.py reads (top-level "benchmarks" with name, real_time, cpu_time,
// time_unit, run_type) stays as Google Benchmark wrote it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "clbo/core/error.hpp"
#include "gbench_json.hpp"

namespace {

// The shape of Google Benchmark 1.7.1's JSON reporter output (two benchmarks).
nlohmann::json google_benchmark_output() {
  return nlohmann::json::parse(R"({
    "context": {"date": "2026-12-01T19:00:00+00:00", "host_name": "h", "executable": "x",
                "num_cpus": 2, "mhz_per_cpu": 2000, "cpu_scaling_enabled": false,
                "caches": [], "load_avg": [1.0], "library_build_type": "release",
                "copy_bytes_per_second": "1.5e10"},
    "benchmarks": [
      {"name": "BM_ef_sumsq/1048576/real_time", "family_index": 0,
       "per_family_instance_index": 0, "run_name": "BM_ef_sumsq/1048576/real_time",
       "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
       "iterations": 100, "real_time": 140.5, "cpu_time": 139.9, "time_unit": "us",
       "bytes_per_second": 5.9e10, "items_per_second": 7.4e9, "min_bytes_per_elem": 8.0},
      {"name": "BM_ef_sumsq/67108864/real_time", "family_index": 1,
       "per_family_instance_index": 0, "run_name": "BM_ef_sumsq/67108864/real_time",
       "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
       "iterations": 3, "real_time": 40.2, "cpu_time": 40.0, "time_unit": "ms",
       "bytes_per_second": 1.3e10, "items_per_second": 1.6e9, "min_bytes_per_elem": 8.0}]
  })");
}

TEST(BenchKernelsJson, IsGoogleBenchmarksOwnWithClboMetadataInTheContext) {
  const nlohmann::json raw = google_benchmark_output();
  const nlohmann::json env = {{"host", "h"}, {"clbo_version", "0"}};
  const auto out = clbo::bench::with_clbo_context(raw, "bench_kernels_cpu",
                                                  {"--benchmark_filter=sumsq"}, env, "k.json");
  EXPECT_EQ(out["schema"], "clbo.bench.kernels/2");
  EXPECT_EQ(out["benchmarks"], raw["benchmarks"]);  // what compare.py reads, untouched
  nlohmann::json context = out["context"];
  const nlohmann::json clbo = context["clbo"];
  context.erase("clbo");
  EXPECT_EQ(context, raw["context"]);
  EXPECT_EQ(clbo["environment"], env);
  EXPECT_EQ(clbo["config"]["binary"], "bench_kernels_cpu");
  EXPECT_EQ(clbo["config"]["args"], nlohmann::json::array({"--benchmark_filter=sumsq"}));
  EXPECT_EQ(clbo["measured"], true);
  // Exactly the top-level keys compare.py and clbo's readers use.
  EXPECT_EQ(out.size(), 3u);
}

TEST(BenchKernelsJson, AnythingElseIsAnError) {
  for (const char* bad : {R"([])", R"({"benchmarks": []})", R"({"context": {}})",
                          R"({"context": [], "benchmarks": []})"})
    EXPECT_THROW(clbo::bench::with_clbo_context(nlohmann::json::parse(bad), "b", {}, {}, "f"),
                 clbo::Error)
        << bad;
}

// With --benchmark_repetitions, Google Benchmark 1.7.1 writes the cv of a counter that is 0 in
// every repetition as a bare NaN: the file must still read, the value as null, and a string
// that spells NaN must stay as it is.
TEST(BenchKernelsJson, NonFiniteNumbersReadAsNull) {
  const std::string text = R"({"benchmarks": [{"name": "BM_x/NaN\"Infinity", "in_cache": NaN,
    "a": -NaN, "b": Infinity, "c": [-Infinity, 1.5], "d": "NaN"}]})";
  const auto j = nlohmann::json::parse(clbo::bench::with_nonfinite_as_null(text));
  const auto& b = j["benchmarks"][0];
  EXPECT_EQ(b["name"], "BM_x/NaN\"Infinity");
  EXPECT_TRUE(b["in_cache"].is_null());
  EXPECT_TRUE(b["a"].is_null());
  EXPECT_TRUE(b["b"].is_null());
  EXPECT_EQ(b["c"], nlohmann::json::parse("[null, 1.5]"));
  EXPECT_EQ(b["d"], "NaN");
  EXPECT_FALSE(nlohmann::json::accept(text)) << "Google Benchmark's text is not JSON as written";
}

}  // namespace
