// How collective calls are expanded: the communication library of the compressed allreduce,
// NCCL's algorithm and protocol (or "auto": NCCL's own choice), and the fast mode's merging
// knobs (docs/simulator.md, "Collectives" and "Speed").
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "clbo/core/names.hpp"

namespace clbo::sim {

// kNccl, kMpi: GPU ranks; the compressed allreduce through NCCL or DeepSpeed's MPI path
// (dense calls stay on NCCL). kMpiHost: CPU ranks, every call through clbo's MPI backend
// as OpenMPI's libnbc runs it (mpi_host.cpp; what clbo validate simulates).
enum class Backend { kNccl, kMpi, kMpiHost };
// Whose compressed-allreduce and optimizer code a run models: clbo's fused kernels, or
// DeepSpeed's unfused torch/CuPy dataflow (implementation.hpp, docs/implementations.md).
enum class Implementation { kClbo, kDeepspeed };
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
  bool tree_merge_fill = true;    // false: merge only same-pattern tree rounds
  size_t param_count = 0;         // the model's n (SLAMB's compaction kernel reads all of it)
  // Bytes a rank keeps live between its collectives besides their own buffers (a training
  // step's parameters, gradients and optimizer state; 0 for a benchmark's lone collective):
  // with the kernel model's cache model on, part of the working set that sets its rates.
  double resident_bytes_per_rank = 0;
  Implementation implementation = Implementation::kClbo;
  // Host costs of an eager dataflow (the deepspeed implementation; assumptions stated in
  // docs/implementations.md): issuing one torch/CuPy op, and one host-blocking sync.
  double launch_s = 10e-6;
  double host_sync_s = 10e-6;
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
  // kMpiHost: the same efficiency measured at a few sizes (bytes per pair, efficiency; TCP's
  // all-to-all on warm connections). Smaller rounds end further from the fluid time: the
  // flows' start-up and the slowest host's tail weigh more. When given, a round takes the
  // efficiency at its largest message, interpolated in log(bytes) and held flat outside the
  // sizes measured; mpi_all_pairs_efficiency is then unused.
  std::vector<std::pair<double, double>> mpi_all_pairs_efficiency_by_bytes;
};

// The all-pairs efficiency of a round whose largest message is `bytes` (see above).
double mpi_all_pairs_efficiency_at(const ExpandOptions& o, double bytes);

inline constexpr auto kBackendNames = name_table<Backend>(
    {{Backend::kNccl, "nccl"}, {Backend::kMpi, "mpi"}, {Backend::kMpiHost, "mpi_host"}});
inline constexpr auto kImplementationNames = name_table<Implementation>(
    {{Implementation::kClbo, "clbo"}, {Implementation::kDeepspeed, "deepspeed"}});
inline constexpr auto kAlgoNames = name_table<Algo>({{Algo::kAuto, "auto"},
                                                     {Algo::kRing, "ring"},
                                                     {Algo::kTree, "tree"},
                                                     {Algo::kHierarchical, "hierarchical"},
                                                     {Algo::kBinomial, "binomial"}});
inline constexpr auto kProtoNames = name_table<Proto>({{Proto::kAuto, "auto"},
                                                       {Proto::kLL, "LL"},
                                                       {Proto::kLL128, "LL128"},
                                                       {Proto::kSimple, "Simple"}});

const char* to_string(Backend b);
const char* to_string(Implementation i);
const char* to_string(Algo a);
const char* to_string(Proto p);

}  // namespace clbo::sim
