// Building blocks of the collectives' expansions, shared by collectives.cpp (NCCL, DeepSpeed)
// and mpi_host.cpp (clbo's MPI backend on CPU ranks).
#pragma once
#include <string>
#include <vector>

#include "clbo/sim/collectives.hpp"
#include "clbo/sim/sim_plan.hpp"

namespace clbo::sim {

// A communication segment; unless o.exact, its rounds are merged down to `target` (0: the
// options' bandwidth- or latency-bound target), pipeline-wise for pipelined algorithms.
Segment make_segment(std::string label, int call, std::vector<Round> rounds, double hop_intra,
                     double hop_net, double base, double wire, const ExpandOptions& o,
                     int target = 0, bool pipeline = false);

// A compute segment (a kernel every rank runs for `seconds`).
Segment compute_segment(std::string label, int call, double seconds, bool compression);

}  // namespace clbo::sim
