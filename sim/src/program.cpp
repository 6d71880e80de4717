#include "clbo/sim/program.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace clbo::sim {

uint64_t Segment::payload_bytes() const {
  uint64_t b = 0;
  for (const Round& r : rounds)
    for (const Xfer& x : r) b += x.counted ? x.bytes : 0;
  return b;
}

size_t Segment::num_transfers() const {
  size_t n = 0;
  for (const Round& r : rounds) n += r.size();
  return n;
}

size_t Program::num_transfers() const {
  size_t n = 0;
  for (const Segment& s : segments) n += s.num_transfers();
  return n;
}

namespace {
bool same_pattern(const Round& a, const Round& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].src != b[i].src || a[i].dst != b[i].dst || a[i].counted != b[i].counted) return false;
  return true;
}
}  // namespace

void merge_rounds(std::vector<Round>& rounds, int target_rounds) {
  if (target_rounds < 1 || static_cast<int>(rounds.size()) <= target_rounds) return;
  const size_t k =
      (rounds.size() + static_cast<size_t>(target_rounds) - 1) / static_cast<size_t>(target_rounds);
  std::vector<Round> out;
  size_t i = 0;
  while (i < rounds.size()) {
    Round merged = std::move(rounds[i]);
    size_t j = i + 1;
    while (j < rounds.size() && j - i < k && same_pattern(merged, rounds[j])) {
      for (size_t t = 0; t < merged.size(); ++t) {
        merged[t].bytes += rounds[j][t].bytes;
        merged[t].steps += rounds[j][t].steps;
      }
      ++j;
    }
    out.push_back(std::move(merged));
    i = j;
  }
  rounds = std::move(out);
}

void merge_pipeline_rounds(std::vector<Round>& rounds, int target_rounds) {
  if (target_rounds < 1 || static_cast<int>(rounds.size()) <= target_rounds) return;
  const size_t k =
      (rounds.size() + static_cast<size_t>(target_rounds) - 1) / static_cast<size_t>(target_rounds);
  std::vector<Round> out;
  for (size_t i = 0; i < rounds.size(); i += k) {
    // One transfer per (src, dst, counted) in order of first appearance, so the lowering
    // (and with it the simulated result) stays deterministic.
    Round merged;
    std::map<std::tuple<int, int, bool>, size_t> slot;
    for (size_t j = i; j < std::min(rounds.size(), i + k); ++j)
      for (const Xfer& x : rounds[j]) {
        auto [it, fresh] = slot.try_emplace({x.src, x.dst, x.counted}, merged.size());
        if (fresh) {
          merged.push_back(x);
        } else {
          merged[it->second].bytes += x.bytes;
          merged[it->second].steps += x.steps;
        }
      }
    out.push_back(std::move(merged));
  }
  rounds = std::move(out);
}

std::vector<uint64_t> bytes_sent_by_endpoint(const Segment& s, int num_endpoints) {
  std::vector<uint64_t> b(static_cast<size_t>(num_endpoints), 0);
  for (const Round& r : s.rounds)
    for (const Xfer& x : r) b[static_cast<size_t>(x.src)] += x.counted ? x.bytes : 0;
  return b;
}

}  // namespace clbo::sim
