// Lowering a Program onto endpoints: the last step before SimGrid, kept free of SimGrid so
// it can be tested on its own (docs/reference/simgrid-notes.md §3.4 and §8.3; docs/simulator.md,
// "Speed").
//
// Per round: transfers between ranks that share an endpoint (MPI ranks on one CPU) are
// local copies (counted, not simulated); in fast mode the inter-node transfers between the
// same two nodes become one flow between the nodes' aggregation hosts; a node-level
// all-to-all carries several shifts per flow (merged shifts), and an all-to-all between
// GPU endpoints with too many flows runs in windows of whole shifts. Each flow's latency is
// the segment's per-hop software latency and, for merged steps, the (k−1) route latencies
// the merge dropped (SimGrid pays the route's own latency once): the sender sleeps it
// before posting the message.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "clbo/sim/program.hpp"

namespace clbo::sim {

struct SessionOptions {
  // Fast mode: one flow per node pair carries a round's inter-node transfers between two
  // nodes (tests/sim/test_executor.cpp shows it matches per-rank flows).
  bool aggregate = true;
  // Most concurrent network flows of an all-to-all round. Every flow of such a round shares
  // NICs with the others, and SimGrid re-solves that whole set each time one starts or
  // ends (cost ∝ flows²). Between per-node endpoints the lowering merges shifts until the
  // round fits (exact on a single switch and for the bytes crossing an oversubscribed
  // level); otherwise (per-GPU endpoints) the round runs in windows of consecutive shifts.
  int max_flows_per_round = 1024;
};

// The endpoints of a world of p GPUs on `nodes` nodes (see program.hpp): GPUs [0, p), node
// CPUs [p, p+N), aggregation points [p+N, p+2N).
struct EndpointLayout {
  int p = 1, nodes = 1, gpus_per_node = 1;
  bool built = true;       // false for a user's XML platform (no CPU or aggregation hosts)
  int nodes_per_leaf = 1;  // nodes under one leaf switch (1 on a single switch)
  int num_endpoints() const { return p + 2 * nodes; }
  int node_of(int endpoint) const {
    if (endpoint < p) return endpoint / gpus_per_node;
    return (endpoint - p) % nodes;
  }
  bool is_agg(int endpoint) const { return endpoint >= p + nodes; }
  int agg_of(int node) const { return p + nodes + node; }
  int gpu_head(int node) const { return node * gpus_per_node; }
};

struct LoweredXfer {
  int src = 0, dst = 0;
  double wire_bytes = 0;
  uint64_t payload = 0;  // counted bytes
  double latency_s = 0;  // slept by the sender before posting
};

struct LoweredRound {
  std::vector<LoweredXfer> xfers;
  int segment = 0;
  double before_s = 0;      // compute (+ base latency) of the segment, before its first round
  double not_before_s = 0;  // earliest start relative to the program start
  bool first = false, last = false;
  bool staging = false;
  bool uses_agg = false;       // carries node-aggregated flows
  bool barrier_after = false;  // the node's endpoints meet before the next round
};

struct LoweredProgram {
  std::vector<LoweredRound> rounds;
  uint64_t traffic_bytes = 0;  // counted before simulation: analytic bytes and local copies
  uint64_t local_copies = 0;
};

// The physical latency of the route between two endpoints (SimGrid's, in the simulator).
using RouteLatency = std::function<double(int src, int dst)>;

LoweredProgram lower_program(const Program& prog, const EndpointLayout& layout,
                             const SessionOptions& options, const RouteLatency& route_latency);

}  // namespace clbo::sim
