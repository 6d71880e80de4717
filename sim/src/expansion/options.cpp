#include "clbo/sim/expansion/options.hpp"

#include <cmath>

namespace clbo::sim {

const char* to_string(Backend b) {
  return kBackendNames.name(b);
}
const char* to_string(Implementation i) {
  return kImplementationNames.name(i);
}
const char* to_string(Algo a) {
  return kAlgoNames.name(a);
}
const char* to_string(Proto p) {
  return kProtoNames.name(p);
}

double mpi_all_pairs_efficiency_at(const ExpandOptions& o, double bytes) {
  const auto& pts = o.mpi_all_pairs_efficiency_by_bytes;  // ascending in bytes
  if (pts.empty()) return o.mpi_all_pairs_efficiency;
  if (bytes <= pts.front().first) return pts.front().second;
  if (bytes >= pts.back().first) return pts.back().second;
  for (size_t i = 1; i < pts.size(); ++i) {
    if (bytes > pts[i].first) continue;
    const auto& [b0, e0] = pts[i - 1];
    const auto& [b1, e1] = pts[i];
    const double w = std::log(bytes / b0) / std::log(b1 / b0);
    return e0 + w * (e1 - e0);
  }
  return pts.back().second;
}

}  // namespace clbo::sim
