// Backend::kMpiHost: every collective through clbo's MPI backend between CPU ranks
// (collectives/mpi/), expanded the way OpenMPI 4.1.4 runs what that backend calls. The
// backend uses non-blocking collectives only (MPI_Iallreduce, MPI_Iallgather,
// MPI_Ialltoall, MPI_Igather, each followed by a polled wait), and OpenMPI serves those
// with coll/libnbc, whose algorithm choice (ompi/mca/coll/libnbc/nbc_i*.c, v4.1.4) is:
//   MPI_Iallreduce   binomial whenever the call is in place (mpi_allreduce_sum always is):
//                    reduce up a binomial tree to rank 0, then a binomial broadcast, the
//                    whole buffer in every message;
//   MPI_Iallgather   linear: every rank posts its block to every other rank at once;
//   MPI_Ialltoall    linear (not in place): every pair at once;
//   MPI_Igather      linear: every rank sends to the root at once.
// clbo's own ring (ring_allreduce_sum, the sparse allreduce's compacted ring) runs over
// point-to-point sendrecv steps: the CommPlan ring. The reduction arithmetic inside
// libnbc and the ring is not charged (tens of ms at 64 MiB against seconds on the wire of
// the emulated links); the compression kernels are compute segments as everywhere.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "clbo/core/error.hpp"
#include "clbo/core/onebit_padding.hpp"
#include "clbo/sim/collectives.hpp"
#include "segments.hpp"

namespace clbo::sim {

namespace {

// MPI's per-message software cost on top of the route's physical latency: the same for
// loopback (ranks of one host talk TCP over lo) and network messages.
double mpi_hop_s(const ClusterSpec& c, const ExpandOptions& o) {
  return c.software_latency_s >= 0 ? c.software_latency_s : o.mpi_latency_s;
}

// All-pair rounds carry their bytes at the measured efficiency of concurrent TCP flows
// (ExpandOptions::mpi_all_pairs_efficiency), as extra wire bytes.
Segment mpi_segment(const std::string& label, int idx, std::vector<Round> rounds,
                    const ClusterSpec& c, const ExpandOptions& o, bool all_pairs) {
  const double hop = mpi_hop_s(c, o);
  const double wire = all_pairs ? 1.0 / o.mpi_all_pairs_efficiency : 1.0;
  Segment s = make_segment("MPI " + label, idx, std::move(rounds), hop, hop, 0, wire, o);
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

// One round of every pair exchanging a piece and, beside it, a 4-byte scale: the gather
// flavour posts both collectives before waiting for either.
std::vector<Round> pieces_and_scales(int p, uint64_t piece) {
  std::vector<Round> r = all_pairs(p, piece);
  const std::vector<Round> scales = all_pairs(p, 4);
  r.front().insert(r.front().end(), scales.front().begin(), scales.front().end());
  return r;
}

std::vector<Round> clbo_ring(CommCall call, int p) {
  call.kind = CollKind::kAllreduce;
  return rounds_from_plan(make_plan(call, p));
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

std::vector<Segment> compressed(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                const KernelModel& km, const ExpandOptions& o) {
  const uint64_t n = onebit_padded_size(call.count, p);
  const uint64_t piece = n / static_cast<uint64_t>(p) / 8;
  std::vector<Segment> s;
  s.push_back(compute_segment("compress (worker error feedback + sign + scale)", idx,
                              km.worker_compress_s(n), true));
  if (o.mpi_gather) {
    // p MPI_Igathers of the sign pieces and p of the scales, all in flight together.
    s.push_back(mpi_segment("phase 1: p gathers of sign pieces and scales", idx,
                            pieces_and_scales(p, piece), c, o, true));
  } else {
    s.push_back(
        mpi_segment("phase 1: MPI_Ialltoall of sign pieces", idx, all_pairs(p, piece), c, o, true));
    s.push_back(
        mpi_segment("phase 1: MPI_Iallgather of worker scales", idx, all_pairs(p, 4), c, o, true));
  }
  s.push_back(compute_segment("server average + re-compress", idx, km.server_s(n, p), true));
  if (o.mpi_gather) {
    s.push_back(mpi_segment("phase 2: MPI_Iallgather of server chunks and scales", idx,
                            pieces_and_scales(p, piece), c, o, true));
  } else {
    s.push_back(mpi_segment("phase 2: MPI_Iallgather of server chunks", idx, all_pairs(p, piece), c,
                            o, true));
    s.push_back(
        mpi_segment("phase 2: MPI_Iallgather of server scales", idx, all_pairs(p, 4), c, o, true));
  }
  s.push_back(compute_segment("unpack", idx, km.unpack_s(n), true));
  return s;
}

}  // namespace

std::vector<Round> binomial_allreduce_rounds(int p, uint64_t bytes) {
  std::vector<Round> rounds;
  if (p <= 1 || bytes == 0) return rounds;
  int levels = 0;
  while ((1 << levels) < p) ++levels;
  for (int r = 1; r <= levels; ++r) {
    Round round;
    for (int v = 0; v < p; v += 1 << r)
      if (v + (1 << (r - 1)) < p) round.push_back(Xfer{v + (1 << (r - 1)), v, bytes, 1});
    rounds.push_back(std::move(round));
  }
  std::vector<Round> bcast(static_cast<size_t>(levels));
  for (int w = 1; w < p; ++w) {
    const int parent = w - (1 << (std::bit_width(static_cast<unsigned>(w)) - 1));
    bcast[static_cast<size_t>(std::popcount(static_cast<unsigned>(w)) - 1)].push_back(
        Xfer{parent, w, bytes, 1});
  }
  for (Round& r : bcast)
    if (!r.empty()) rounds.push_back(std::move(r));
  return rounds;
}

std::vector<Segment> mpi_host_expand_call(const CommCall& call, int idx, const ClusterSpec& c,
                                          int p, const KernelModel& km, const ExpandOptions& o) {
  if (!(o.mpi_all_pairs_efficiency > 0 && o.mpi_all_pairs_efficiency <= 1))
    throw InputError("simulate", "mpi_all_pairs_efficiency",
                     fmt::format("{}", o.mpi_all_pairs_efficiency), "must be in (0, 1]");
  std::vector<Segment> out;
  switch (call.kind) {
    case CollKind::kSparseAllreduce: {
      out.push_back(compute_segment("compaction (shared mask + gather)", idx,
                                    km.compaction_s(o.param_count, call.count), true));
      out.push_back(mpi_segment(fmt::format("sparse allreduce {} {} (clbo ring of the compacted "
                                            "values)",
                                            call.what, to_string(call.dtype)),
                                idx, clbo_ring(call, p), c, o, false));
      return out;
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
  return out;
}

}  // namespace clbo::sim
