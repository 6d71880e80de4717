// The JSON `clbo bench kernels` saves: Google Benchmark's own JSON as the binary wrote it
// (what Google Benchmark's tools/compare.py reads: top-level "context" and "benchmarks"),
// with clbo's metadata under context.clbo and the schema at the top, where every clbo
// results file names it (compare.py reads only "benchmarks" and ignores both).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/core/error.hpp"

namespace clbo::bench {

inline constexpr const char* kKernelBenchSchema = "clbo.bench.kernels/2";

// `raw` as Google Benchmark wrote it to `file` for `binary` run with `args`; throws when it is
// not Google Benchmark JSON.
inline nlohmann::json with_clbo_context(nlohmann::json raw, const std::string& binary,
                                        const std::vector<std::string>& args,
                                        const nlohmann::json& environment,
                                        const std::string& file) {
  if (!raw.is_object() || !raw.contains("context") || !raw["context"].is_object() ||
      !raw.contains("benchmarks") || !raw["benchmarks"].is_array())
    throw Error(file + ": " + binary +
                " wrote no Google Benchmark JSON (context and benchmarks expected)");
  raw["schema"] = kKernelBenchSchema;
  nlohmann::json env = environment;
  // The CUDA benchmark names its device in the context; the environment says it too, so a
  // result read on its own shows which GPU measured it.
  if (raw["context"].contains("device") && raw["context"]["device"].is_string())
    env["gpu"] = raw["context"]["device"];
  raw["context"]["clbo"] = {
      {"environment", env}, {"config", {{"binary", binary}, {"args", args}}}, {"measured", true}};
  return raw;
}

}  // namespace clbo::bench
