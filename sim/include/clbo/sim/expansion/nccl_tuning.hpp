// NCCL's cost model (docs/reference/published.md §5.3; NCCL's src/graph/tuning.cc):
// time = base latency + hops × per-hop latency + bytes / (bandwidth × protocol efficiency),
// with the published base and per-hop latencies. It picks the allreduce algorithm and
// protocol the way NCCL does, and gives every expanded segment its per-message latency.
#pragma once
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/expansion/options.hpp"

namespace clbo::sim {

// Predicted time of an allreduce of `bytes` on p ranks with the given algorithm and protocol.
double nccl_predict_allreduce(const ClusterSpec& c, int p, double bytes, Algo a, Proto pr);
struct NcclChoice {
  Algo algo;
  Proto proto;
  double predicted_s;
};
// The cheapest (algorithm, protocol) among those the options allow; ring only on one node.
NcclChoice nccl_choose_allreduce(const ClusterSpec& c, int p, double bytes, const ExpandOptions& o);
Proto nccl_choose_ring_protocol(const ClusterSpec& c, int p, double bytes_per_rank,
                                const ExpandOptions& o);
// Per-hop latency of a protocol on an intra-node or network hop (the software latency of a
// TCP fabric replaces NCCL's network figure).
double nccl_hop_s(const ClusterSpec& c, Algo a, Proto pr, bool network);
double nccl_base_s(Algo a, Proto pr);
// Payload bytes per wire byte: LL carries half, LL128 15/16, Simple all.
double proto_efficiency(Proto pr);

}  // namespace clbo::sim
