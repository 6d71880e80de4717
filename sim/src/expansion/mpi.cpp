#include <fmt/format.h>

#include <algorithm>

#include "clbo/plan/plan.hpp"
#include "clbo/sim/expansion/rounds.hpp"
#include "clbo/sim/implementation.hpp"
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
  // mpi.py stages cupy buffers in host memory when MPI is not CUDA-aware). `copies`
  // separate blocking copies cost a copy latency each; DeepSpeed's stream sync after them
  // is paid once.
  const bool ds = o.implementation == Implementation::kDeepspeed;
  auto stage = [&](const std::string& label, uint64_t bytes, int copies, bool to_host) {
    Round r;
    for (int rank = 0; rank < p; ++rank) {
      const int host = p + rank / g;
      add_transfer(r, to_host ? rank : host, to_host ? host : rank, bytes);
    }
    for (Xfer& x : r) x.steps = copies;
    Segment s =
        make_segment("stage " + label, idx, {r}, o.copy_latency_s, o.copy_latency_s, 0, 1.0, o);
    s.staging = true;
    if (ds) s.start_latency_s = o.host_sync_s;
    return s;
  };
  // comm.Barrier() after phase 2 (mpi.py:121): a dissemination barrier, ⌈log₂ p⌉ rounds of
  // one-byte messages that are not counted as traffic.
  auto barrier = [&] {
    std::vector<Round> rounds;
    for (int d = 1; d < p; d *= 2) {
      Round r;
      for (int rank = 0; rank < p; ++rank) r.push_back(Xfer{rank, (rank + d) % p, 1, 1, false});
      rounds.push_back(std::move(r));
    }
    return mpi("barrier", std::move(rounds));
  };
  const uint64_t up = static_cast<uint64_t>(p);
  // What mpi.py copies (gather_host, allgather_host; its receive buffers go down too) and
  // what clbo's model of the same exchange stages (one copy of each payload).
  const bool staged = !o.mpi_cuda_aware;
  std::vector<Segment> s;
  s.push_back(compute_segment("compress (worker error feedback + sign + scale)", idx,
                              onebit_part_s(OnebitPart::kWorker, km, o, call.count, p), true));
  if (staged)
    s.push_back(ds ? stage("worker signs device→host", n / 8 + 4 + 4 * up, p + 2, true)
                   : stage("worker signs device→host", n / 8 + 4, 1, true));
  // mpi.py's phase 1 is p hand-rolled gathers, one to each server: every pair at once.
  s.push_back(mpi("phase 1: gather of sign pieces to their servers", alltoall_rounds(p, piece)));
  s.back().alltoall = true;
  s.push_back(mpi(fmt::format("phase 1: allgather of {}", ex[1].name),
                  ring_allgather_rounds(p, ex[1].bytes)));
  if (staged)
    s.push_back(ds ? stage("gathered pieces host→device", 2 * (n / 8) + 4 + 4 * up, p + 3, false)
                   : stage("gathered pieces host→device", n / 8, 1, false));
  s.push_back(compute_segment("server average + re-compress", idx,
                              onebit_part_s(OnebitPart::kServer, km, o, call.count, p), true));
  if (staged)
    s.push_back(ds ? stage("server chunk device→host", piece + n / 8 + 4 + 4 * up, 4, true)
                   : stage("server chunk device→host", piece + 4, 1, true));
  for (size_t i = 2; i < ex.size(); ++i)
    s.push_back(mpi(fmt::format("phase 2: allgather of {}", ex[i].name),
                    ring_allgather_rounds(p, ex[i].bytes)));
  if (staged && ds) s.push_back(barrier());
  if (staged)
    s.push_back(ds ? stage("server chunks host→device", piece + n / 8 + 4 + 4 * up, 4, false)
                   : stage("server chunks host→device", n / 8 + 4 * up, 1, false));
  s.push_back(compute_segment("unpack", idx,
                              onebit_part_s(OnebitPart::kUnpack, km, o, call.count, p), true));
  return s;
}

}  // namespace clbo::sim
