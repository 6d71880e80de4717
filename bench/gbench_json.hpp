// The JSON `clbo bench kernels` saves: Google Benchmark's own JSON as the binary wrote it
// (what Google Benchmark's tools/compare.py reads: top-level "context" and "benchmarks"),
// with clbo's metadata under context.clbo and the schema at the top, where every clbo
// results file names it (compare.py reads only "benchmarks" and ignores both).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "clbo/core/error.hpp"

namespace clbo::bench {

inline constexpr const char* kKernelBenchSchema = "clbo.bench.kernels/2";

// Google Benchmark's JSON reporter (1.7.1) writes a non-finite number as a bare NaN, -NaN,
// Infinity or -Infinity, which no JSON parser takes: with --benchmark_repetitions the cv
// aggregate of a counter that is 0 in every repetition is 0/0. `text` with each such value
// (outside strings) written as null, which is what it is: no number.
inline std::string with_nonfinite_as_null(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (std::string_view token : {"-Infinity", "Infinity", "-NaN", "NaN"})
      if (text.substr(i, token.size()) == token) {
        out += "null";
        i += token.size() - 1;
        replaced = true;
        break;
      }
    if (!replaced) out += c;
  }
  return out;
}

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
