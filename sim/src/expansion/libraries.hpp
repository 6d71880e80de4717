// The per-library expansions behind expand_call (expand.cpp): NCCL's collectives,
// DeepSpeed's two 1-bit backends, nccl.py over NCCL and mpi.py over MPI, and clbo's MPI
// backend between CPU ranks (Backend::kMpiHost).
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
// Every call through clbo's MPI backend between CPU ranks, with the algorithms OpenMPI
// 4.1.4's libnbc runs (mpi_host.cpp): MPI_Iallreduce in place is binomial (kBinomial),
// MPI_Iallgather, MPI_Ialltoall and MPI_Igather are linear (every message posted at once,
// one round); ring and sparse allreduces are clbo's ring over point-to-point. Every network
// and loopback message pays the fabric's software latency. tree and hierarchical are
// NCCL's and an InputError here.
std::vector<Segment> mpi_host_expand_call(const CommCall& call, int idx, const ClusterSpec& c,
                                          int p, const KernelModel& km, const ExpandOptions& o);

}  // namespace clbo::sim
