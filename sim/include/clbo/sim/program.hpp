// The simulator's intermediate form of one step's communication: segments of rounds of
// point-to-point transfers between *endpoints*, plus the compute that sits between them.
//
// Endpoints of a world of p ranks on N nodes:
//   [0, p)          GPU of rank r (node r / G)
//   [p, p+N)        CPU of node n (MPI host staging)
//   [p+N, p+2N)     the node's inter-node aggregation point (fast mode, see lowering.hpp)
//
// A segment is one phase of a collective as a library runs it (a ring allreduce, the
// all-to-all of the 1-bit scheme, a host-staging copy). Its rounds run in order; within a
// round every transfer is independent. Each endpoint starts round r+1 once its own sends
// and receives of round r are done, which is the dependency of ring, tree and pairwise
// algorithms. A transfer with steps = k stands for k consecutive algorithm steps merged
// into one message (docs/reference/simgrid-notes.md §3.4): the lowering re-adds the k−1
// latencies it drops.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace clbo::sim {

struct Xfer {
  int src = 0, dst = 0;  // endpoints
  uint64_t bytes = 0;    // payload bytes (what results count)
  int steps = 1;         // algorithm steps this transfer stands for
  // False for stand-in transfers that only occupy the network for timing (the fast tree's
  // pipeline-depth chunks); their bytes are not counted as traffic.
  bool counted = true;
};

using Round = std::vector<Xfer>;

struct Segment {
  std::string label;  // "allreduce ring/Simple", "alltoall signs", ...
  int call = -1;      // index of the CommCall in the step's schedule (-1: none)
  std::vector<Round> rounds;
  // Per-message software/protocol latency added to the route's physical latency, by hop
  // kind: within a node, and between nodes.
  double hop_intra_s = 0, hop_net_s = 0;
  double start_latency_s = 0;  // paid once before the first round (NCCL's base latency)
  double wire_factor = 1;      // wire bytes per payload byte (NCCL LL: 2, LL128: 16/15)
  double compute_s = 0;        // compute every rank does before the rounds (kernels)
  bool compression = false;    // compute_s is compression-kernel time (for the time split)
  bool staging = false;        // device↔host copies: bytes are not inter-rank traffic
  // Traffic of transfers charged analytically instead of simulated (fast mode's intra-node
  // tree chains); added to the simulated byte count so volumes stay exact.
  uint64_t analytic_bytes = 0;
  double not_before_s = 0;  // earliest start, relative to the program start (overlap)
  // Pipelined algorithms (NCCL's tree) keep several chunks in flight, so a merged transfer
  // pays one hop latency, not one per merged chunk (NCCL's model: 2·height·hop in all).
  bool pipelined = false;
  // Every pair exchanges at once (all-to-all): the lowering may carry a node's inter-node
  // messages to several peer nodes as one flow per group of shifts (see lowering.cpp).
  bool alltoall = false;
  uint64_t payload_bytes() const;
  size_t num_transfers() const;
};

struct Program {
  int p = 1, gpus_per_node = 1;
  std::vector<Segment> segments;
  int nodes() const { return (p + gpus_per_node - 1) / gpus_per_node; }
  size_t num_transfers() const;
};

// Merges runs of consecutive rounds with the same (src, dst) pattern, k rounds at a time,
// so a segment keeps about `target_rounds` rounds. Bytes add up; steps count the merged
// rounds. Exact on uncontended routes (tests/sim/test_executor.cpp).
void merge_rounds(std::vector<Round>& rounds, int target_rounds);

// Merges every k consecutive rounds of a pipeline into one, whatever their patterns, so
// about `target_rounds` remain: each edge carries the chunks it moved in those k rounds.
// Pipeline fill and drain then cost a share of one merged round each instead of 2·height
// small rounds; a merged round lasts as long as its busiest edge (k chunks in the steady
// state and at the ends), so the total stays the fine pipeline's (C + fill) chunk times.
// For pipelined segments only (NCCL's tree); tests/sim/test_executor.cpp compares it with
// merge_rounds().
void merge_pipeline_rounds(std::vector<Round>& rounds, int target_rounds);

// Payload bytes each endpoint sends (GPU endpoints first). For tests and byte accounting.
std::vector<uint64_t> bytes_sent_by_endpoint(const Segment& s, int num_endpoints);

}  // namespace clbo::sim
