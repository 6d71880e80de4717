// Rank-level rounds of the collective algorithms (GPU endpoints 0..p−1, node = rank / G).
// Patterns clbo's real backends also run come from the CommPlan builders (clbo_plan), so a
// transfer has one definition; the tree and the hierarchical ring are NCCL's, the binomial
// allreduce libnbc's (OpenMPI's), and the simulator's alone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "clbo/plan/plan.hpp"
#include "clbo/sim/program.hpp"

namespace clbo::sim {

// A CommPlan as rounds of transfers between GPU endpoints (steps = 1).
std::vector<Round> rounds_from_plan(const CommPlan& plan);

// The ring allreduce of `count` elements of elem_bytes: ring_allreduce_plan's transfers.
std::vector<Round> ring_allreduce_rounds(int p, size_t count, size_t elem_bytes);
// NCCL's ring allgather, `bytes_per_rank` contributed by each rank: ring_allgather_plan.
std::vector<Round> ring_allgather_rounds(int p, uint64_t bytes_per_rank);
// All-to-all, every pair at once, `bytes_per_pair` per destination: direct_exchange_plan.
std::vector<Round> alltoall_rounds(int p, uint64_t bytes_per_pair);

// libnbc's in-place MPI_Iallreduce of `bytes` on p ranks (OpenMPI 4.1.4, root 0): reduce
// rounds r = 1..⌈log₂p⌉ (rank v + 2^(r−1) sends its partial to v when v is a multiple of
// 2^r), then the broadcast: rank w receives from w − 2^⌊log₂w⌋. libnbc posts a rank's sends
// to all its children at once, in the order 2^0, 2^1, ..., and they share the sender's
// link (warm TCP sockets interleave them; mpi_host.cpp): w receives in broadcast round
// popcount(w) − 1.
std::vector<Round> binomial_allreduce_rounds(int p, uint64_t bytes);

// NCCL's double binary tree: two trees over the nodes (the second mirrors the first), each
// carrying half the data, pipelined in chunks (at least min_chunks and 64 × the tree
// height, so pipeline fill and drain stay near 3%); the node's other GPUs form a chain
// below its first GPU. Without `with_chain` (fast mode) only the node-level trees are
// emitted: chain_bytes is the traffic the chains would carry (counted analytically) and
// 2 × chain_depth uncounted stand-in chunks run through the node-level pipeline, because a
// chain of depth d runs on NVLink/PCIe in parallel with the network and only adds d rounds
// to pipeline fill and d to drain (tests/sim/test_executor.cpp compares both forms).
struct TreePlan {
  std::vector<Round> rounds;
  uint64_t chain_bytes = 0;
  int chain_depth = 0;
  uint64_t chunk_bytes = 0;
};
TreePlan tree_allreduce_rounds(int p, int gpus_per_node, uint64_t bytes, int min_chunks,
                               bool with_chain = true);
// Intra-node reduce-scatter ring, one inter-node ring per local rank, intra-node allgather.
std::vector<Round> hierarchical_allreduce_rounds(int p, int gpus_per_node, size_t count,
                                                 size_t elem_bytes);

}  // namespace clbo::sim
