// Integer command-line options read as what the user typed. CLI11 2.1 converts with
// strtoull/strtoll in base 0, so "-1" given to an unsigned option becomes 2^64 − 1, "010" is
// octal 8 and values beyond 64 bits saturate. This transform accepts only plain decimal
// integers that fit the option's type (and [lo, hi] when given) and hands CLI11 the canonical
// text, so an option never holds a value the user did not write.
#pragma once
#include <CLI/CLI.hpp>
#include <charconv>
#include <limits>
#include <string>

namespace clbo::cli {

template <class T>
CLI::Validator decimal_integer(T lo = std::numeric_limits<T>::min(),
                               T hi = std::numeric_limits<T>::max()) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        T v{};
        const char* end = text.data() + text.size();
        const auto r = std::from_chars(text.data(), end, v);
        if (r.ec != std::errc() || r.ptr != end || v < lo || v > hi)
          return "'" + text + "' is not an integer in " + range;
        text = std::to_string(v);
        return {};
      },
      "INT in " + range);
}

}  // namespace clbo::cli
