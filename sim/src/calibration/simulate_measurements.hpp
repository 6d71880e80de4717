// The simulated value of every measurement on one candidate cluster: one forked SimGrid
// process per GPU count, each measurement's program built as `clbo simulate` builds it (the
// step's compute from the workload, its allreduce expanded with NCCL's choices).
#pragma once
#include <vector>

#include "clbo/sim/cluster.hpp"
#include "measurements.hpp"

namespace clbo::sim {

std::vector<double> simulate_measurements(const ClusterSpec& cluster,
                                          const std::vector<Measurement>& ms);

}  // namespace clbo::sim
