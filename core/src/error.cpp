#include "clbo/core/error.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace clbo {

InputError::InputError(std::string where, std::string field, std::string value, std::string why)
    : Error(fmt::format("{}: field '{}' = {}: {}", where, field, value, why)),
      where_(std::move(where)),
      field_(std::move(field)),
      value_(std::move(value)) {}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest_name(const std::string& bad, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(bad, c);
    if (d < best_d) best_d = d, best = c;
  }
  // Suggest only when the typo is small relative to the name's length.
  const size_t limit = std::max<size_t>(2, std::max(bad.size(), best.size()) / 3);
  return best_d <= limit ? best : std::string();
}

std::string did_you_mean(const std::string& bad, const std::vector<std::string>& candidates) {
  const std::string n = nearest_name(bad, candidates);
  return n.empty() ? std::string() : fmt::format("; did you mean '{}'?", n);
}

}  // namespace clbo
