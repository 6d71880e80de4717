#include <fmt/format.h>

#include <algorithm>

#include "clbo/core/error.hpp"
#include "clbo/plan/plan.hpp"
#include "clbo/sim/expansion/nccl_tuning.hpp"
#include "clbo/sim/expansion/rounds.hpp"
#include "clbo/sim/implementation.hpp"
#include "libraries.hpp"
#include "segments.hpp"

namespace clbo::sim {

Segment nccl_ring_allgather(const ClusterSpec& c, int p, uint64_t bytes_per_rank,
                            const std::string& label, int call, const ExpandOptions& o) {
  const Proto pr = nccl_choose_ring_protocol(c, p, static_cast<double>(bytes_per_rank), o);
  return make_segment(fmt::format("{} (ring/{})", label, to_string(pr)), call,
                      ring_allgather_rounds(p, bytes_per_rank),
                      nccl_hop_s(c, Algo::kRing, pr, false), nccl_hop_s(c, Algo::kRing, pr, true),
                      nccl_base_s(Algo::kRing, pr), 1 / proto_efficiency(pr), o);
}

Segment nccl_alltoall(const ClusterSpec& c, int p, uint64_t bytes_per_pair,
                      const std::string& label, int call, const ExpandOptions& o) {
  // NCCL runs all-to-all as grouped send/recv with the Simple protocol.
  const Proto pr = Proto::kSimple;
  Segment s =
      make_segment(fmt::format("{} (all-to-all)", label), call, alltoall_rounds(p, bytes_per_pair),
                   nccl_hop_s(c, Algo::kRing, pr, false), nccl_hop_s(c, Algo::kRing, pr, true),
                   nccl_base_s(Algo::kRing, pr), 1.0, o);
  s.alltoall = true;
  return s;
}

std::vector<Segment> nccl_allreduce(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                    const ExpandOptions& o) {
  const uint64_t bytes = call.count * dtype_bytes(call.dtype);
  if (o.allreduce == Algo::kBinomial)
    throw Error("the binomial allreduce is MPI's (libnbc); NCCL runs ring or tree");
  const NcclChoice ch = nccl_choose_allreduce(c, p, static_cast<double>(bytes), o);
  std::vector<Round> rounds;
  const int g = std::min(c.gpus_per_node, p);
  uint64_t chain_bytes = 0;
  switch (ch.algo) {
    case Algo::kTree: {
      const bool chain = o.exact || o.tree_chains || g == 1;
      TreePlan t = tree_allreduce_rounds(p, g, bytes, o.tree_chunks, chain);
      rounds = std::move(t.rounds);
      chain_bytes = t.chain_bytes;
      break;
    }
    case Algo::kHierarchical:
      rounds = hierarchical_allreduce_rounds(p, g, call.count, dtype_bytes(call.dtype));
      break;
    default:
      rounds = ring_allreduce_rounds(p, call.count, dtype_bytes(call.dtype));
  }
  const Algo hops = ch.algo == Algo::kTree ? Algo::kTree : Algo::kRing;
  std::vector<Segment> out;
  out.push_back(
      make_segment(fmt::format("allreduce {} {} ({}/{})", call.what, to_string(call.dtype),
                               to_string(ch.algo), to_string(ch.proto)),
                   idx, std::move(rounds), nccl_hop_s(c, hops, ch.proto, false),
                   nccl_hop_s(c, hops, ch.proto, true), nccl_base_s(hops, ch.proto),
                   1 / proto_efficiency(ch.proto), o,
                   ch.algo == Algo::kTree ? o.tree_target_rounds : 0, ch.algo == Algo::kTree));
  out.back().analytic_bytes = chain_bytes;
  out.back().pipelined = ch.algo == Algo::kTree;
  return out;
}

std::vector<Segment> onebit_nccl(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                 const KernelModel& km, const ExpandOptions& o) {
  const std::vector<OnebitExchange> ex = onebit_exchanges(call.count, p);
  // DeepSpeed's nccl.py: all_to_all_single for the sign pieces, all_gather for the rest.
  auto exchange = [&](int phase, const OnebitExchange& e) {
    const std::string label = fmt::format("1-bit phase {}: {}", phase, e.name);
    return e.kind == CollKind::kAlltoall
               ? nccl_alltoall(c, p, e.bytes, label, idx, o)
               : nccl_ring_allgather(c, p, e.bytes, label + " allgather", idx, o);
  };
  std::vector<Segment> s;
  s.push_back(compute_segment("compress (worker error feedback + sign + scale)", idx,
                              onebit_part_s(OnebitPart::kWorker, km, o, call.count, p), true));
  for (size_t i = 0; i < ex.size(); ++i) {
    if (i == 2)
      s.push_back(compute_segment("server average + re-compress", idx,
                                  onebit_part_s(OnebitPart::kServer, km, o, call.count, p), true));
    s.push_back(exchange(i < 2 ? 1 : 2, ex[i]));
  }
  s.push_back(compute_segment("unpack", idx,
                              onebit_part_s(OnebitPart::kUnpack, km, o, call.count, p), true));
  return s;
}

}  // namespace clbo::sim
