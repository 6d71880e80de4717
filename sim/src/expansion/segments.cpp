#include "segments.hpp"

#include <algorithm>

namespace clbo::sim {

Segment make_segment(std::string label, int call, std::vector<Round> rounds, double hop_intra,
                     double hop_net, double base, double wire, const ExpandOptions& o, int target,
                     bool pipeline) {
  Segment s;
  s.label = std::move(label);
  s.call = call;
  s.rounds = std::move(rounds);
  s.hop_intra_s = hop_intra;
  s.hop_net_s = hop_net;
  s.start_latency_s = base;
  s.wire_factor = wire;
  if (!o.exact) {
    uint64_t biggest = 0;
    for (const Round& r : s.rounds)
      for (const Xfer& x : r) biggest = std::max(biggest, x.bytes);
    const int rounds = target > 0        ? target
                       : biggest < 65536 ? o.small_target_rounds
                                         : o.target_rounds;
    if (pipeline && o.tree_merge_fill)
      merge_pipeline_rounds(s.rounds, rounds);
    else
      merge_rounds(s.rounds, rounds);
  }
  return s;
}

Segment compute_segment(std::string label, int call, double seconds, bool compression) {
  Segment s;
  s.label = std::move(label);
  s.call = call;
  s.compute_s = seconds;
  s.compression = compression;
  return s;
}

std::vector<Round> onto_hosts(std::vector<Round> rounds, int p, int g) {
  for (Round& r : rounds)
    for (Xfer& x : r) {
      x.src = p + x.src / g;
      x.dst = p + x.dst / g;
    }
  return rounds;
}

void add_transfer(Round& r, int src, int dst, uint64_t bytes) {
  if (bytes > 0 && src != dst) r.push_back(Xfer{src, dst, bytes, 1});
}

}  // namespace clbo::sim
