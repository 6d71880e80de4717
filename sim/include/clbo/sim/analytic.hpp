// A separate α-β model of the same Programs, for cross-checking the SimGrid runs
// (tests/sim/test_crosscheck.cpp). Every transfer costs its route's latency plus its
// protocol latency plus wire bytes over the route's narrowest link, as if it were alone
// on the network; a round costs its slowest transfer; merged transfers (steps = k) cost k
// latencies. It knows nothing of contention: where links are shared (oversubscribed
// uplinks, all-to-all incast) SimGrid is slower, and the tests show by how much and why.
#pragma once
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/program.hpp"

namespace clbo::sim {

struct Route {
  double latency_s = 0;
  double bandwidth_Bps = 0;
};

// The route between two endpoints of a world of p GPUs on a built cluster, as
// platform.cpp wires it.
Route analytic_route(const ClusterSpec& c, int p, int src, int dst);

// Predicted time of one segment / a whole program.
double analytic_segment_s(const ClusterSpec& c, int p, const Segment& s);
double analytic_program_s(const ClusterSpec& c, const Program& prog);

}  // namespace clbo::sim
