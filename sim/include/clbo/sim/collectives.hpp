// Collective calls expanded the way the communication libraries run them on a cluster
// (docs/simulator.md, "Collectives"):
//   NCCL allreduce   flat ring over node-contiguous ranks (clbo_plan's ring, the same
//                    CommPlan the real backends execute), double binary tree with an
//                    intra-node chain, or hierarchical (intra reduce-scatter, inter-node
//                    rings per local rank, intra allgather); "auto" picks ring or tree
//                    with NCCL's latency + bytes/bandwidth model and published latencies.
//   NCCL allgather   ring. NCCL all-to-all: grouped point-to-point, every pair at once.
//   1-bit (NCCL)     DeepSpeed's nccl.py: compress, all-to-all of sign pieces, allgather of
//                    worker scales, server re-compress, allgather of server chunks and of
//                    server scales, unpack.
//   1-bit (MPI)      DeepSpeed's mpi.py: the same exchange between the nodes' CPUs, with
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
#include "clbo/sim/sim_plan.hpp"
#include "clbo/sim/workload.hpp"

namespace clbo::sim {

// kNccl, kMpi: GPU ranks; the compressed allreduce through NCCL or DeepSpeed's MPI path
// (dense calls stay on NCCL). kMpiHost: CPU ranks, every call through clbo's MPI backend.
enum class Backend { kNccl, kMpi, kMpiHost };
// kBinomial: OpenMPI 4.1 libnbc's in-place MPI_Iallreduce (binomial reduce to rank 0, then
// binomial broadcast of the whole buffer); kMpiHost only.
enum class Algo { kAuto, kRing, kTree, kHierarchical, kBinomial };
enum class Proto { kAuto, kLL, kLL128, kSimple };

struct ExpandOptions {
  Backend backend = Backend::kNccl;  // of the compressed allreduce (DeepSpeed comm backend)
  Algo allreduce = Algo::kAuto;
  Proto protocol = Proto::kAuto;
  bool mpi_cuda_aware = false;
  double mpi_latency_s = 2e-6;    // MPI per-message software latency over InfiniBand
  double copy_latency_s = 10e-6;  // one cudaMemcpy launch + synchronisation (host staging)
  bool exact = false;             // no merged rounds (the --exact cross-check mode)
  int target_rounds = 48;         // merged rounds kept per bandwidth-bound segment
  int small_target_rounds = 2;    // ... per latency-bound segment (< 64 KiB per transfer)
  int tree_target_rounds = 8;     // ... for the tree, fill and drain included
  int tree_chunks = 16;           // minimum pipeline chunks per tree (each carries half)
  bool tree_chains = false;       // simulate the intra-node chains even in fast mode
  bool tree_merge_fill = true;    // false: merge only same-pattern tree rounds (old path)
  size_t param_count = 0;         // the model's n (SLAMB's compaction kernel reads all of it)
  // kMpiHost's compressed allreduce: DeepSpeed's gather flavour
  // (mpi_compressed_allreduce_gather: p gathers, then one allgather) instead of clbo's
  // compressed_allreduce (all-to-all, then allgathers).
  bool mpi_gather = false;
  // kMpiHost: the fraction of the fluid (max-min fair) rate that concurrent TCP flows reach
  // in rounds where every pair exchanges at once (linear allgather and all-to-all, the
  // compressed allreduce's exchanges). TCP's flows start up and progress unequally, so some
  // links idle before the last flow ends; clbo validate measures it with TCP's own
  // all-to-all on the cluster (1: the fluid model).
  double mpi_all_pairs_efficiency = 1.0;
};

const char* to_string(Backend b);
const char* to_string(Algo a);
const char* to_string(Proto p);

// NCCL's cost model (docs/reference/published.md "NCCL's own cost model"): predicted time of an
// allreduce of `bytes` on p ranks with the given algorithm and protocol.
double nccl_predict_allreduce(const ClusterSpec& c, int p, double bytes, Algo a, Proto pr);
struct NcclChoice {
  Algo algo;
  Proto proto;
  double predicted_s;
};
// The cheapest (algorithm, protocol) among those allowed; ring only on one node.
NcclChoice nccl_choose_allreduce(const ClusterSpec& c, int p, double bytes, const ExpandOptions& o);
Proto nccl_choose_ring_protocol(const ClusterSpec& c, int p, double bytes_per_rank,
                                const ExpandOptions& o);
// Per-hop latency of a protocol on an intra-node or network hop (software latency of a
// TCP fabric replaces NCCL's network figure).
double nccl_hop_s(const ClusterSpec& c, Algo a, Proto pr, bool network);
double nccl_base_s(Algo a, Proto pr);
double proto_efficiency(Proto pr);

// Rank-level rounds of the algorithms (GPU endpoints 0..p−1, node = rank / G).
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
std::vector<Round> hierarchical_allreduce_rounds(int p, int gpus_per_node, size_t count,
                                                 size_t elem_bytes);
std::vector<Round> ring_allgather_rounds(int p, uint64_t bytes_per_rank);
std::vector<Round> alltoall_rounds(int p, uint64_t bytes_per_pair);

// Backend::kMpiHost (mpi_host.cpp), OpenMPI 4.1.4's libnbc algorithms as clbo's MPI
// backend reaches them: MPI_Iallreduce in place is binomial (kBinomial), MPI_Iallgather,
// MPI_Ialltoall and MPI_Igather are linear (every message posted at once, one round);
// ring and sparse allreduces are clbo's ring over point-to-point. Every network and
// loopback message pays the fabric's software latency. tree and hierarchical are NCCL's
// and an InputError here.
std::vector<Segment> mpi_host_expand_call(const CommCall& call, int call_index,
                                          const ClusterSpec& c, int p, const KernelModel& km,
                                          const ExpandOptions& o);
// Rounds of libnbc's binomial allreduce of `bytes` on p ranks (root 0): reduce rounds r =
// 1..⌈log₂p⌉ (rank v + 2^(r−1) sends its partial to v when v is a multiple of 2^r), then
// the broadcast: rank w receives from w − 2^⌊log₂w⌋ in broadcast round popcount(w) − 1,
// each rank sending to all its children at once.
std::vector<Round> binomial_allreduce_rounds(int p, uint64_t bytes);

// All segments of one call. `call_index` tags them for per-call timing.
std::vector<Segment> expand_call(const CommCall& call, int call_index, const ClusterSpec& c, int p,
                                 const KernelModel& km, const ExpandOptions& o);

// A program of `calls` back to back, every call tagged 0 (no compute phases): what the
// cross-check tests and the simulator benchmark time.
Program calls_program(const std::vector<CommCall>& calls, const ClusterSpec& c, int p,
                      const KernelModel& km, const ExpandOptions& o);

}  // namespace clbo::sim
