#include "clbo/sim/analytic.hpp"

#include <algorithm>
#include <limits>

namespace clbo::sim {

namespace {
struct Place {
  int node;
  enum { kGpu, kCpu, kAgg } kind;
};
Place place(const ClusterSpec& c, int p, int ep) {
  const int nodes = (p + c.gpus_per_node - 1) / c.gpus_per_node;
  if (ep < p) return {ep / c.gpus_per_node, Place::kGpu};
  if (ep < p + nodes) return {ep - p, Place::kCpu};
  return {ep - p - nodes, Place::kAgg};
}
}  // namespace

Route analytic_route(const ClusterSpec& c, int p, int src, int dst) {
  const Place a = place(c, p, src), b = place(c, p, dst);
  Route r{0, std::numeric_limits<double>::infinity()};
  auto link = [&](double lat, double bw) {
    r.latency_s += lat;
    r.bandwidth_Bps = std::min(r.bandwidth_Bps, bw);
  };
  for (const Place& e : {a, b}) {
    if (e.kind == Place::kGpu) link(c.intra_latency_s, c.intra_Bps);
    if (e.kind == Place::kCpu) link(c.host_latency_s, c.host_Bps);
  }
  if (a.node == b.node) return r;
  const double nic = c.nic_latency_s + c.switch_latency_s / 2;
  switch (c.topology) {
    case TopologyKind::kSingleSwitch:
      link(2 * nic, c.node_net_Bps());
      break;
    case TopologyKind::kTwoLevel:
      link(2 * nic, c.node_net_Bps());
      if (a.node / c.nodes_per_leaf != b.node / c.nodes_per_leaf)
        link(c.switch_latency_s, c.uplink_Bps);
      break;
    case TopologyKind::kFatTree: {
      // Limiter (NIC) on both ends, then 2 links within a leaf switch or 4 through a spine.
      link(2 * c.nic_latency_s, c.node_net_Bps());
      const int per_leaf = std::min(c.nodes_per_leaf, (p + c.gpus_per_node - 1) / c.gpus_per_node);
      const bool same_leaf = a.node / per_leaf == b.node / per_leaf;
      link((same_leaf ? 2 : 4) * c.switch_latency_s, c.node_net_Bps());
      break;
    }
  }
  return r;
}

double analytic_segment_s(const ClusterSpec& c, int p, const Segment& s) {
  double t = s.compute_s + s.start_latency_s;
  const int g = c.gpus_per_node;
  const int nodes = (p + g - 1) / g;
  auto node_of = [&](int ep) { return ep < p ? ep / g : (ep - p) % nodes; };
  for (const Round& round : s.rounds) {
    double worst = 0;
    for (const Xfer& x : round) {
      if (x.src == x.dst) continue;
      const Route r = analytic_route(c, p, x.src, x.dst);
      const double hop = node_of(x.src) != node_of(x.dst) ? s.hop_net_s : s.hop_intra_s;
      const double lat = s.pipelined ? r.latency_s + hop : x.steps * (r.latency_s + hop);
      worst = std::max(worst, lat + static_cast<double>(x.bytes) * s.wire_factor / r.bandwidth_Bps);
    }
    t += worst;
  }
  return t;
}

double analytic_program_s(const ClusterSpec& c, const Program& prog) {
  double t = 0;
  for (const Segment& s : prog.segments)
    t = std::max(t, s.not_before_s) + analytic_segment_s(c, prog.p, s);
  return t;
}

}  // namespace clbo::sim
