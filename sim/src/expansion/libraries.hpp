// The per-library expansions behind expand_call (expand.cpp): NCCL's collectives and
// DeepSpeed's two 1-bit backends, nccl.py over NCCL and mpi.py over MPI.
#pragma once
#include <string>
#include <vector>

#include "clbo/core/schedule.hpp"
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/expansion/options.hpp"
#include "clbo/sim/kernel_model.hpp"
#include "clbo/sim/program.hpp"

namespace clbo::sim {

// NCCL's ring allgather of `bytes_per_rank` from every rank.
Segment nccl_ring_allgather(const ClusterSpec& c, int p, uint64_t bytes_per_rank,
                            const std::string& label, int call, const ExpandOptions& o);
// NCCL's all-to-all (grouped send/recv, every pair at once), `bytes_per_pair` per peer.
Segment nccl_alltoall(const ClusterSpec& c, int p, uint64_t bytes_per_pair,
                      const std::string& label, int call, const ExpandOptions& o);
// A dense allreduce with NCCL's algorithm and protocol.
std::vector<Segment> nccl_allreduce(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                    const ExpandOptions& o);
// DeepSpeed's compressed allreduce over NCCL (nccl.py) and over MPI (mpi.py).
std::vector<Segment> onebit_nccl(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                 const KernelModel& km, const ExpandOptions& o);
std::vector<Segment> onebit_mpi(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                const KernelModel& km, const ExpandOptions& o);

}  // namespace clbo::sim
