// SimGrid platform construction (private to the simulator; the only files that include
// SimGrid headers are platform.cpp and actors.cpp).
#pragma once
#include <simgrid/s4u.hpp>
#include <vector>

#include "clbo/sim/cluster.hpp"
#include "clbo/sim/lowering.hpp"

namespace clbo::sim {

// The endpoints of a built or loaded platform and the SimGrid host of each.
struct Platform : EndpointLayout {
  // Endpoint → host: GPUs [0, p), node CPUs [p, p+N), aggregation points [p+N, p+2N).
  // CPU and aggregation hosts are null on XML platforms.
  std::vector<simgrid::s4u::Host*> hosts;
};

// Sets the network model before any platform exists (docs/reference/simgrid-notes.md §8.2).
void configure_network(simgrid::s4u::Engine& e, const ClusterSpec& c);

// Builds the zones for p GPUs of `c` (or loads its XML and checks the mapping).
Platform build_platform(simgrid::s4u::Engine& e, const ClusterSpec& c, int p);

}  // namespace clbo::sim
