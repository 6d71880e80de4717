#include "clbo/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <new>

namespace clbo {

std::string bounded_text(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  // Cut at a UTF-8 character boundary, so the message stays valid text.
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}... ({} bytes in all)", text.substr(0, cut), text.size());
}

InputError::InputError(std::string where, std::string field, std::string value, std::string why)
    : Error(fmt::format("{}: field '{}' = {}: {}", bounded_text(where, kMaxEchoedPath),
                        bounded_text(field, kMaxEchoedChars), bounded_text(value, kMaxEchoedChars),
                        why)),
      where_(bounded_text(where, kMaxEchoedPath)),
      field_(bounded_text(field, kMaxEchoedChars)),
      value_(bounded_text(value, kMaxEchoedChars)),
      why_(std::move(why)) {}

std::string exception_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return fmt::format(
        "out of memory ({}): the run needs more memory than the system grants; "
        "reduce its size (batch, model, steps) or free memory",
        e.what());
  return e.what();
}

namespace {

// Names longer than this are never typos of a known name: skip the quadratic comparison.
constexpr size_t kMaxSuggestedLength = 256;

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                                                std::tolower(static_cast<unsigned char>(b[j - 1]))
                                            ? 0
                                            : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string nearest_name(const std::string& bad, const std::vector<std::string>& candidates) {
  if (bad.size() > kMaxSuggestedLength) return {};
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
