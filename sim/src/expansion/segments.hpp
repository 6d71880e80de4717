// Building blocks of the per-library expansions (nccl.cpp, mpi.cpp): a communication
// segment with its latencies and the fast mode's round merging, a compute segment, and
// rank-level rounds moved onto the nodes' CPUs.
#pragma once
#include <string>
#include <vector>

#include "clbo/sim/expansion/options.hpp"
#include "clbo/sim/program.hpp"

namespace clbo::sim {

// A communication segment: its rounds (merged in fast mode, about o.target_rounds of them,
// o.small_target_rounds when every message is under 64 KiB, `target` when given; pipelined
// segments merge whatever their pattern) with the per-hop latencies, the base latency paid
// once, and the wire bytes per payload byte.
Segment make_segment(std::string label, int call, std::vector<Round> rounds, double hop_intra,
                     double hop_net, double base, double wire, const ExpandOptions& o,
                     int target = 0, bool pipeline = false);

// Compute every rank does (a kernel); `compression` marks compression-kernel time.
Segment compute_segment(std::string label, int call, double seconds, bool compression);

// Rank-level rounds moved onto the nodes' CPU endpoints (MPI with host staging): ranks of
// one node share their CPU, so their messages to each other become local copies.
std::vector<Round> onto_hosts(std::vector<Round> rounds, int p, int gpus_per_node);

// Appends a transfer unless it is empty or to itself.
void add_transfer(Round& r, int src, int dst, uint64_t bytes);

}  // namespace clbo::sim
