// Collective calls expanded the way the communication libraries run them on a cluster
// (docs/simulator.md, "Collectives"):
//   NCCL allreduce   flat ring over node-contiguous ranks (clbo_plan's ring, the same
//                    CommPlan the real backends execute), double binary tree with an
//                    intra-node chain, or hierarchical (intra reduce-scatter, inter-node
//                    rings per local rank, intra allgather); "auto" picks ring or tree
//                    with NCCL's latency + bytes/bandwidth model and published latencies.
//   NCCL allgather   ring. NCCL all-to-all: grouped point-to-point, every pair at once.
//   1-bit (NCCL)     DeepSpeed's nccl.py: compress, then clbo_plan's four exchanges
//                    (onebit_exchanges) as NCCL runs them, the server's re-compression
//                    between the phases, unpack.
//   1-bit (MPI)      DeepSpeed's mpi.py: the same exchanges between the nodes' CPUs, with
//                    device→host and host→device staging copies over PCIe around each
//                    phase (or GPU endpoints when MPI is CUDA-aware).
//   SLAMB            compaction kernel, then an allreduce of the compacted buffer; its
//                    periodic parameter sync is a plain fp32 allreduce in the schedule.
//   MPI host ranks   (Backend::kMpiHost) every call through clbo's MPI backend between CPU
//                    ranks, as OpenMPI 4.1's libnbc runs the non-blocking collectives that
//                    backend uses (mpi_host.cpp): no GPU, no staging.
#pragma once
#include <string>
#include <vector>

#include "clbo/core/schedule.hpp"
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/expansion/options.hpp"
#include "clbo/sim/kernel_model.hpp"
#include "clbo/sim/program.hpp"

namespace clbo::sim {

// All segments of one call. `call_index` tags them for per-call timing.
std::vector<Segment> expand_call(const CommCall& call, int call_index, const ClusterSpec& c, int p,
                                 const KernelModel& km, const ExpandOptions& o);

// The call as far as expand_call depends on it: calls with equal keys expand to identical
// segments (labels included), so one simulated program serves them all. The compressed and
// top-k calls' `what` names no segment, so 1-bit Adam's "momentum" and 0/1 Adam's "grad"
// and "momentum_accumulator" exchanges share one program.
std::string expansion_key(const CommCall& call);

// A program of `calls` back to back, every call tagged 0 (no compute phases): what the
// cross-check tests and the simulator benchmark time.
Program calls_program(const std::vector<CommCall>& calls, const ClusterSpec& c, int p,
                      const KernelModel& km, const ExpandOptions& o);

}  // namespace clbo::sim
