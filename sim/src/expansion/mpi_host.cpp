// Backend::kMpiHost: every collective through clbo's MPI backend between CPU ranks
// (collectives/mpi/), expanded the way OpenMPI 4.1.4 runs what that backend calls. The
// backend uses non-blocking collectives only (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ialltoall, MPI_Igather, each followed by a polled wait), and OpenMPI serves those
// with coll/libnbc, whose algorithm choice (ompi/mca/coll/libnbc/nbc_i*.c, v4.1.4) is:
//   MPI_Iallreduce   binomial whenever the call is in place (mpi_allreduce_sum always is):
//                    reduce up a binomial tree to rank 0, then a binomial broadcast, the
//                    whole buffer in every message (a rank posts its sends to all its
//                    children at once, and they share its link at every size: the fan-out
//                    note below);
//   MPI_Iallgather   linear: every rank posts its block to every other rank at once;
//   MPI_Ialltoall    linear (not in place): every pair at once;
//   MPI_Igather      linear: every rank sends to the root at once.
// clbo's own ring (ring_allreduce_sum, the sparse allreduce's compacted ring) runs over
// point-to-point sendrecv steps: the CommPlan ring. The reduction arithmetic inside
// libnbc and the ring is not charged (tens of ms at 64 MiB against seconds on the wire of
// the emulated links); the compression kernels are compute segments as everywhere. MPI's
// per-message software cost is CPU work: in an all-pairs round a rank pays it once per peer,
// one peer after another (mpi_segment).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "clbo/core/error.hpp"
#include "clbo/plan/plan.hpp"
#include "clbo/sim/expansion/rounds.hpp"
#include "clbo/sim/implementation.hpp"
#include "libraries.hpp"
#include "segments.hpp"

namespace clbo::sim {

namespace {

// MPI's per-message software cost on top of the route's physical latency: the same for
// loopback (ranks of one host talk TCP over lo) and network messages.
double mpi_hop_s(const ClusterSpec& c, const ExpandOptions& o) {
  return c.software_latency_s >= 0 ? c.software_latency_s : o.mpi_latency_s;
}

// libnbc's broadcast fan-out shares the sender's link at every size. OpenMPI's TCP BTL writes
// each child's message to its own socket when the send is posted, so on cold sockets (a send
// buffer of 87380 bytes at first) a message that fits leaves before the next one starts: the
// doubling broadcast. The benchmark times warm calls, though: by then TCP's autotuning has
// grown the send buffers, every child's bytes are in the kernel at once, and the flows
// interleave through the link's one htb class (clbo-tree-probe's fan-out on 8 emulated hosts
// at 200 Mbit/s, docs/validation.md "Trees on TCP, measured": the posting order in the first
// iterations, interleaved after). The doubling order, modelled for 64 KiB until 2026-12-04,
// was 20-30% fast on 8 hosts in three full-grid runs.

// All-pair rounds carry their bytes at the measured efficiency of concurrent TCP flows, as
// extra wire bytes: where it was measured by size (ExpandOptions::
// mpi_all_pairs_efficiency_by_bytes, one flow per pair of hosts), the efficiency at what one
// host sends another in the round, g² times the largest message with g ranks a host; else
// the one measured.
Segment mpi_segment(const std::string& label, int idx, std::vector<Round> rounds,
                    const ClusterSpec& c, const ExpandOptions& o, bool all_pairs) {
  const double hop = mpi_hop_s(c, o);
  double largest = 0, serial = 0, wire = 1;
  if (all_pairs && !rounds.empty()) {
    // The software cost is CPU work each rank does per peer, one peer after another: in an
    // all-pairs round a rank's messages to its k peers overlap on the wire but not on its
    // CPU, so the last leaves (k - 1) software latencies after the first. Two messages to one
    // peer in the same round (a piece and its scale, side by side) share one progress pass.
    std::map<int, std::set<int>> peers;
    size_t k = 0;
    for (const Xfer& x : rounds.front()) {
      largest = std::max(largest, static_cast<double>(x.bytes));
      k = std::max(k, (peers[x.src].insert(x.dst), peers[x.src].size()));
    }
    serial = static_cast<double>(k > 0 ? k - 1 : 0) * hop;
    // Ranks per host: a world smaller than one node fills only part of it (every rank of an
    // all-pairs round sends).
    const double g = std::max(1, std::min(c.gpus_per_node, static_cast<int>(peers.size())));
    wire = 1.0 / mpi_all_pairs_efficiency_at(o, largest * g * g);
  }
  Segment s = make_segment("MPI " + label, idx, std::move(rounds), hop, hop, serial, wire, o);
  s.alltoall = all_pairs;
  return s;
}

// Every rank sends `bytes` to every other rank at once (libnbc's linear allgather and
// all-to-all; a gather to every root at once has the same pattern). One round, empty for
// p = 1.
std::vector<Round> all_pairs(int p, uint64_t bytes) {
  std::vector<Round> r = alltoall_rounds(p, bytes);
  if (r.empty()) r.emplace_back();
  return r;
}

// One round of two exchanges side by side: the gather flavour posts both collectives (a
// piece and its 4-byte scale) before waiting for either.
std::vector<Round> side_by_side(int p, const OnebitExchange& a, const OnebitExchange& b) {
  std::vector<Round> r = all_pairs(p, a.bytes);
  const std::vector<Round> beside = all_pairs(p, b.bytes);
  r.front().insert(r.front().end(), beside.front().begin(), beside.front().end());
  return r;
}

// What one rank of clbo's sparse allreduce keeps live over n elements with `kept` of them
// selected: the buffer (4 B), the mask (1/8 B) and the compacted values (4 B each), bytes.
double sparse_working_set_bytes(size_t n, size_t kept) {
  return 4.125 * static_cast<double>(n) + 4.0 * static_cast<double>(kept);
}

std::vector<Round> clbo_ring(const CommCall& call, int p) {
  return ring_allreduce_rounds(p, call.count, dtype_bytes(call.dtype));
}

std::vector<Segment> dense_allreduce(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                     const ExpandOptions& o) {
  const uint64_t bytes = call.count * dtype_bytes(call.dtype);
  switch (o.allreduce) {
    case Algo::kBinomial:
      return {mpi_segment(fmt::format("allreduce {} {} (MPI_Iallreduce: libnbc binomial)",
                                      call.what, to_string(call.dtype)),
                          idx, binomial_allreduce_rounds(p, bytes), c, o, false)};
    case Algo::kAuto:
    case Algo::kRing:
      return {mpi_segment(fmt::format("allreduce {} {} (clbo ring over point-to-point)", call.what,
                                      to_string(call.dtype)),
                          idx, clbo_ring(call, p), c, o, false)};
    default:
      throw InputError("simulate", "allreduce", to_string(o.allreduce),
                       "NCCL's algorithm; clbo's MPI backend runs ring or binomial "
                       "(MPI_Iallreduce)");
  }
}

// clbo's compressed_allreduce (the 1-bit scheme's four exchanges, each a linear
// all-to-all or allgather), or with o.mpi_gather DeepSpeed's gather flavour
// (mpi_compressed_allreduce_gather: p gathers of pieces and scales, then one allgather of
// server chunks and scales).
std::vector<Segment> compressed(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                const KernelModel& km, const ExpandOptions& o) {
  const std::vector<OnebitExchange> ex = onebit_exchanges(call.count, p);
  if (ex.empty()) return {};
  std::vector<Segment> s;
  s.push_back(compute_segment("compress (worker error feedback + sign + scale)", idx,
                              onebit_part_s(OnebitPart::kWorker, km, o, call.count, p), true));
  if (o.mpi_gather) {
    // p MPI_Igathers of the sign pieces and p of the scales, all in flight together.
    s.push_back(mpi_segment("phase 1: p gathers of sign pieces and scales", idx,
                            side_by_side(p, ex[0], ex[1]), c, o, true));
  } else {
    s.push_back(mpi_segment("phase 1: MPI_Ialltoall of sign pieces", idx, all_pairs(p, ex[0].bytes),
                            c, o, true));
    s.push_back(mpi_segment("phase 1: MPI_Iallgather of worker scales", idx,
                            all_pairs(p, ex[1].bytes), c, o, true));
  }
  s.push_back(compute_segment("server average + re-compress", idx,
                              onebit_part_s(OnebitPart::kServer, km, o, call.count, p), true));
  if (o.mpi_gather) {
    s.push_back(mpi_segment("phase 2: MPI_Iallgather of server chunks and scales", idx,
                            side_by_side(p, ex[2], ex[3]), c, o, true));
  } else {
    s.push_back(mpi_segment("phase 2: MPI_Iallgather of server chunks", idx,
                            all_pairs(p, ex[2].bytes), c, o, true));
    s.push_back(mpi_segment("phase 2: MPI_Iallgather of server scales", idx,
                            all_pairs(p, ex[3].bytes), c, o, true));
  }
  s.push_back(compute_segment("unpack", idx,
                              onebit_part_s(OnebitPart::kUnpack, km, o, call.count, p), true));
  return s;
}

}  // namespace

std::vector<Segment> mpi_host_expand_call(const CommCall& call, int idx, const ClusterSpec& c,
                                          int p, const KernelModel& km, const ExpandOptions& o) {
  if (!(o.mpi_all_pairs_efficiency > 0 && o.mpi_all_pairs_efficiency <= 1))
    throw InputError("simulate", "mpi_all_pairs_efficiency",
                     fmt::format("{}", o.mpi_all_pairs_efficiency), "must be in (0, 1]");
  double last_bytes = 0;
  for (const auto& [bytes, eff] : o.mpi_all_pairs_efficiency_by_bytes) {
    if (!(bytes > last_bytes) || !(eff > 0 && eff <= 1))
      throw InputError("simulate", "mpi_all_pairs_efficiency_by_bytes",
                       fmt::format("({}, {})", bytes, eff),
                       "needs ascending sizes above 0 and efficiencies in (0, 1]");
    last_bytes = bytes;
  }
  switch (call.kind) {
    case CollKind::kSparseAllreduce: {
      // clbo's sparse_allreduce_sum gets its mask drawn (by SLAMB's step, or once by the
      // benchmark): the call compacts, runs the ring, and scatters back.
      const double ws =
          sparse_working_set_bytes(o.param_count, call.count) + o.resident_bytes_per_rank;
      return {compute_segment("compaction (the given mask + gather)", idx,
                              km.sparse_compact_s(o.param_count, call.count, ws), true),
              mpi_segment(fmt::format("sparse allreduce {} {} (clbo ring of the compacted "
                                      "values)",
                                      call.what, to_string(call.dtype)),
                          idx, clbo_ring(call, p), c, o, false),
              compute_segment("scatter back", idx, km.sparse_scatter_s(o.param_count, ws), true)};
    }
    case CollKind::kAllreduce:
      return dense_allreduce(call, idx, c, p, o);
    case CollKind::kCompressedAllreduce:
      return compressed(call, idx, c, p, km, o);
    case CollKind::kTopkAllgather:
      return {mpi_segment("top-k (index, value) MPI_Iallgather", idx,
                          all_pairs(p, 8 * static_cast<uint64_t>(call.count)), c, o, true)};
    case CollKind::kAllgather:
      return {mpi_segment(fmt::format("MPI_Iallgather {} (libnbc linear)", call.what), idx,
                          all_pairs(p, call.count * dtype_bytes(call.dtype)), c, o, true)};
    case CollKind::kAlltoall:
      return {mpi_segment(fmt::format("MPI_Ialltoall {} (libnbc linear)", call.what), idx,
                          all_pairs(p, call.count * dtype_bytes(call.dtype)), c, o, true)};
  }
  return {};
}

}  // namespace clbo::sim
