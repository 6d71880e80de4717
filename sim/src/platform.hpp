// SimGrid platform construction (private to the simulator; the only files that include
// SimGrid headers are platform.cpp and executor.cpp).
#pragma once
#include <simgrid/s4u.hpp>
#include <vector>

#include "clbo/sim/cluster.hpp"

namespace clbo::sim {

struct Platform {
  int p = 1, nodes = 1, gpus_per_node = 1;
  // Endpoint → host: GPUs [0, p), node CPUs [p, p+N), aggregation points [p+N, p+2N).
  // CPU and aggregation hosts are null on XML platforms.
  std::vector<simgrid::s4u::Host*> hosts;
  bool built = true;  // false for a user's XML platform
  // Nodes under one leaf switch (1 on a single switch: only the NICs are shared).
  int nodes_per_leaf = 1;
  int node_of(int endpoint) const {
    if (endpoint < p) return endpoint / gpus_per_node;
    return (endpoint - p) % nodes;
  }
  bool is_agg(int endpoint) const { return endpoint >= p + nodes; }
};

// Sets the network model before any platform exists (docs/reference/simgrid-notes.md §8.2).
void configure_network(simgrid::s4u::Engine& e, const ClusterSpec& c);

// Builds the zones for p GPUs of `c` (or loads its XML and checks the mapping).
Platform build_platform(simgrid::s4u::Engine& e, const ClusterSpec& c, int p);

}  // namespace clbo::sim
