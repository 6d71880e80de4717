#include <fmt/format.h>

#include <algorithm>

#include "clbo/collectives/plan.hpp"
#include "clbo/sim/expansion/rounds.hpp"
#include "libraries.hpp"
#include "segments.hpp"

namespace clbo::sim {

std::vector<Segment> onebit_mpi(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                const KernelModel& km, const ExpandOptions& o) {
  const uint64_t n = onebit_padded_size(call.count, p);
  const std::vector<OnebitExchange> ex = onebit_exchanges(call.count, p);
  if (ex.empty()) return {};
  const uint64_t piece = ex[0].bytes;
  const int g = std::min(c.gpus_per_node, p);
  const double net = c.software_latency_s >= 0 ? c.software_latency_s : o.mpi_latency_s;
  const double intra = o.mpi_latency_s;  // shared-memory or CUDA IPC message
  auto mpi = [&](const std::string& label, std::vector<Round> rounds) {
    return make_segment("MPI " + label, idx,
                        o.mpi_cuda_aware ? std::move(rounds) : onto_hosts(std::move(rounds), p, g),
                        intra, net, 0, 1.0, o);
  };
  // Device↔host copies of each rank's buffers through the node's PCIe path (DeepSpeed's
  // mpi.py stages cupy buffers in host memory when MPI is not CUDA-aware).
  auto stage = [&](const std::string& label, uint64_t bytes, bool to_host) {
    Round r;
    for (int rank = 0; rank < p; ++rank) {
      const int host = p + rank / g;
      add_transfer(r, to_host ? rank : host, to_host ? host : rank, bytes);
    }
    Segment s =
        make_segment("stage " + label, idx, {r}, o.copy_latency_s, o.copy_latency_s, 0, 1.0, o);
    s.staging = true;
    return s;
  };
  std::vector<Segment> s;
  s.push_back(compute_segment("compress (worker error feedback + sign + scale)", idx,
                              km.worker_compress_s(n), true));
  if (!o.mpi_cuda_aware) s.push_back(stage("worker signs device→host", n / 8 + 4, true));
  // mpi.py's phase 1 is p hand-rolled gathers, one to each server: every pair at once.
  s.push_back(mpi("phase 1: gather of sign pieces to their servers", alltoall_rounds(p, piece)));
  s.back().alltoall = true;
  s.push_back(mpi(fmt::format("phase 1: allgather of {}", ex[1].name),
                  ring_allgather_rounds(p, ex[1].bytes)));
  if (!o.mpi_cuda_aware) s.push_back(stage("gathered pieces host→device", n / 8, false));
  s.push_back(compute_segment("server average + re-compress", idx, km.server_s(n, p), true));
  if (!o.mpi_cuda_aware) s.push_back(stage("server chunk device→host", piece + 4, true));
  for (size_t i = 2; i < ex.size(); ++i)
    s.push_back(mpi(fmt::format("phase 2: allgather of {}", ex[i].name),
                    ring_allgather_rounds(p, ex[i].bytes)));
  if (!o.mpi_cuda_aware)
    s.push_back(stage("server chunks host→device", n / 8 + 4 * static_cast<uint64_t>(p), false));
  s.push_back(compute_segment("unpack", idx, km.unpack_s(n), true));
  return s;
}

}  // namespace clbo::sim
