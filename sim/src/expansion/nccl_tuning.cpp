#include "clbo/sim/expansion/nccl_tuning.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace clbo::sim {

namespace {

constexpr double kUs = 1e-6;

// docs/reference/published.md §5.3, "NCCL's own cost model" (src/graph/tuning.cc), in µs.
// [ring=0 | tree=1][nvlink=0 | pcie=1 | network=2][LL, LL128, Simple]
constexpr double kHopUs[2][3][3] = {
    {{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}},
    {{0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}},
};
// Base latency per collective. docs/reference/published.md §5.3 lists Ring LL/LL128/Simple and
// Tree LL; the tree's LL128 and Simple bases are taken equal to the ring's (documented
// assumption).
constexpr double kBaseUs[2][3] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}};

int proto_index(Proto p) {
  return p == Proto::kLL ? 0 : p == Proto::kLL128 ? 1 : 2;
}
int algo_index(Algo a) {
  return a == Algo::kTree ? 1 : 0;
}

int ceil_log2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

std::vector<Proto> protocols(const ExpandOptions& o) {
  if (o.protocol != Proto::kAuto) return {o.protocol};
  return {Proto::kLL, Proto::kLL128, Proto::kSimple};
}

}  // namespace

double proto_efficiency(Proto pr) {
  // docs/reference/published.md §5.3: LL uses half the wire, LL128 93.75% of it.
  return pr == Proto::kLL ? 0.5 : pr == Proto::kLL128 ? 0.9375 : 1.0;
}

double nccl_hop_s(const ClusterSpec& c, Algo a, Proto pr, bool network) {
  if (network && c.software_latency_s >= 0) return c.software_latency_s;
  const int link = network ? 2 : (c.intra_kind == IntraKind::kNvlink ? 0 : 1);
  return kHopUs[algo_index(a)][link][proto_index(pr)] * kUs;
}

double nccl_base_s(Algo a, Proto pr) {
  return kBaseUs[algo_index(a)][proto_index(pr)] * kUs;
}

double nccl_predict_allreduce(const ClusterSpec& c, int p, double bytes, Algo a, Proto pr) {
  if (p <= 1) return 0;
  const int g = std::min(c.gpus_per_node, p);
  const int nodes = (p + g - 1) / g;
  const double eff = proto_efficiency(pr);
  const double intra = c.intra_Bps * eff, net = c.node_net_Bps() * eff;
  switch (a) {
    case Algo::kTree:
      return nccl_base_s(a, pr) +
             2 * ((g - 1) * nccl_hop_s(c, a, pr, false) +
                  ceil_log2(nodes) * nccl_hop_s(c, a, pr, true)) +
             2 * bytes / std::min(intra, nodes > 1 ? net : intra);
    case Algo::kHierarchical:
      return nccl_base_s(Algo::kRing, pr) + 2 * (g - 1) * nccl_hop_s(c, Algo::kRing, pr, false) +
             2 * (nodes - 1) * nccl_hop_s(c, Algo::kRing, pr, true) +
             2.0 * (g - 1) / g * bytes / intra +
             (nodes > 1 ? 2.0 * (nodes - 1) / nodes * bytes / net : 0.0);
    default:
      return nccl_base_s(Algo::kRing, pr) +
             2.0 * (p - 1) * nccl_hop_s(c, Algo::kRing, pr, nodes > 1) +
             2.0 * (p - 1) / p * bytes / (nodes > 1 ? std::min(intra, net) : intra);
  }
}

NcclChoice nccl_choose_allreduce(const ClusterSpec& c, int p, double bytes,
                                 const ExpandOptions& o) {
  const int nodes = (p + c.gpus_per_node - 1) / c.gpus_per_node;
  std::vector<Algo> algos;
  if (o.allreduce == Algo::kAuto) {
    algos = {Algo::kRing};
    if (nodes > 1) algos.push_back(Algo::kTree);  // NCCL's tree is an inter-node algorithm
  } else {
    algos = {o.allreduce};
  }
  NcclChoice best{algos.front(), Proto::kSimple, std::numeric_limits<double>::infinity()};
  for (Algo a : algos)
    for (Proto pr : protocols(o)) {
      const double t = nccl_predict_allreduce(c, p, bytes, a, pr);
      if (t < best.predicted_s) best = {a, pr, t};
    }
  return best;
}

Proto nccl_choose_ring_protocol(const ClusterSpec& c, int p, double b, const ExpandOptions& o) {
  const int nodes = (p + c.gpus_per_node - 1) / c.gpus_per_node;
  Proto best = Proto::kSimple;
  double best_t = std::numeric_limits<double>::infinity();
  for (Proto pr : protocols(o)) {
    const double bw =
        (nodes > 1 ? std::min(c.intra_Bps, c.node_net_Bps()) : c.intra_Bps) * proto_efficiency(pr);
    const double t = nccl_base_s(Algo::kRing, pr) +
                     (p - 1) * (nccl_hop_s(c, Algo::kRing, pr, nodes > 1) + b / bw);
    if (t < best_t) best = pr, best_t = t;
  }
  return best;
}

}  // namespace clbo::sim
