#include "clbo/sim/lowering.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>
#include <utility>

#include "clbo/core/error.hpp"

namespace clbo::sim {

namespace {

class Lowering {
 public:
  Lowering(const EndpointLayout& layout, const SessionOptions& o, const RouteLatency& route)
      : pf_(layout), opt_(o), route_latency_(route) {}

  LoweredProgram run(const Program& prog) {
    lower(prog);
    LoweredProgram out;
    out.rounds = std::move(rounds_);
    out.traffic_bytes = traffic_;
    out.local_copies = local_;
    return out;
  }

 private:
  int agg_of(int node) const { return pf_.agg_of(node); }
  int gpu_head(int node) const { return pf_.gpu_head(node); }
  double route_latency(int a, int b) const { return route_latency_(a, b); }

  struct Flow {
    Xfer x;            // endpoints, wire bytes, steps
    uint64_t payload;  // counted bytes
    bool agg;
  };
  static uint64_t flow_key(int shift, int src, int dst) {
    return static_cast<uint64_t>(shift) << 42 | static_cast<uint64_t>(src) << 21 |
           static_cast<uint64_t>(dst);
  }
  static int key_shift(uint64_t key) { return static_cast<int>(key >> 42); }

  // Combines a round's messages between the same endpoints (and, in fast mode, between the
  // same two nodes) into one flow each, in a deterministic order: by node shift, then
  // source, then destination. Local copies are counted here and dropped.
  std::vector<std::pair<uint64_t, Flow>> combine(const Round& round, bool aggregate) {
    if (pf_.p + 2 * pf_.nodes >= (1 << 21)) throw Error("simulator: too many endpoints");
    std::unordered_map<uint64_t, size_t> slot;
    std::vector<std::pair<uint64_t, Flow>> flows;
    for (const Xfer& x : round) {
      if (x.src == x.dst) {
        ++local_;
        if (!current_staging_ && x.counted) traffic_ += x.bytes;
        continue;
      }
      int s = x.src, d = x.dst;
      const int ns = pf_.node_of(s), nd = pf_.node_of(d);
      bool agg = false;
      if (aggregate && s < pf_.p && d < pf_.p && ns != nd) {
        s = agg_of(ns);
        d = agg_of(nd);
        agg = true;
      }
      const int shift = ((nd - ns) % pf_.nodes + pf_.nodes) % pf_.nodes;
      const uint64_t key = flow_key(shift, s, d);
      auto [it, fresh] = slot.try_emplace(key, flows.size());
      if (fresh) flows.push_back({key, Flow{Xfer{s, d, 0, 0}, 0, agg}});
      Flow& f = flows[it->second].second;
      f.x.bytes += x.bytes;
      f.payload += x.counted ? x.bytes : 0;
      f.x.steps = std::max(f.x.steps, x.steps);
    }
    std::sort(flows.begin(), flows.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return flows;
  }

  // An all-to-all between per-node endpoints (aggregation hosts, node CPUs) has N−1 flows
  // per node, all at once: SimGrid re-solves the whole set of flows sharing NICs at every
  // start and end, so the cost grows as flows². When a round holds more network flows than
  // max_flows_per_round, each node's messages are carried by a few flows that load every
  // link with the bytes of the original, all at once; a fair-shared all-to-all ends when
  // its busiest link has moved its bytes, the same in both forms
  // (tests/sim/test_executor.cpp compares them):
  //  * one switch (or leaves that do not divide the nodes): shifts (node i → i + s) are
  //    taken k at a time and a group's messages travel as one flow to the group's first
  //    shift; every NIC keeps its bytes in each direction. Only shifts that leave the
  //    source's leaf for every source (L ≤ s ≤ N−L) are merged, so the bytes crossing the
  //    uplinks stay those of the original.
  //  * L nodes per leaf switch, N = leaves × L: node i's messages to the other nodes of its
  //    leaf travel as one flow to its leaf neighbour (local index + 1), and its messages to
  //    the other leaves, taken k leaves at a time, as one flow to the node with its local
  //    index in the group's first leaf. Every NIC keeps its bytes in each direction (each
  //    node receives from one source per leaf group and from its leaf neighbour), and every
  //    leaf uplink and downlink keeps the bytes between each pair of leaves.
  void merge_shifts(std::vector<std::pair<uint64_t, Flow>>& flows) const {
    auto network = [&](const Flow& f) {
      return f.x.src >= pf_.p && f.x.dst >= pf_.p && pf_.node_of(f.x.src) != pf_.node_of(f.x.dst);
    };
    const size_t cap = static_cast<size_t>(std::max(1, opt_.max_flows_per_round));
    const int leaf = std::max(1, pf_.nodes_per_leaf);
    // The destination node each network flow is sent to instead (src node, dst node).
    std::function<int(int, int)> target;
    if (leaf > 1 && pf_.nodes % leaf == 0) {
      size_t count = 0;
      for (const auto& [key, f] : flows) count += network(f) ? 1 : 0;
      if (count <= cap) return;
      const int leaves = pf_.nodes / leaf;
      const int per_node = static_cast<int>(cap / static_cast<size_t>(pf_.nodes));
      const int groups = std::max(1, per_node - 1);  // one flow stays within the leaf
      const int k = std::max(1, (leaves - 1 + groups - 1) / groups);
      target = [leaf, leaves, k](int i, int j) {
        const int li = i / leaf, t = ((j / leaf - li) % leaves + leaves) % leaves;
        if (t == 0) return li * leaf + (i % leaf + 1) % leaf;
        const int first = 1 + (t - 1) / k * k;
        return (li + first) % leaves * leaf + i % leaf;
      };
    } else {
      auto mergeable = [&](int shift) { return shift >= leaf && shift <= pf_.nodes - leaf; };
      std::vector<int> shifts;  // distinct mergeable shifts of network flows, ascending
      size_t merge_count = 0, keep_count = 0;
      for (const auto& [key, f] : flows) {
        if (!network(f)) continue;
        const int shift = key_shift(key);
        if (!mergeable(shift)) {
          ++keep_count;
          continue;
        }
        ++merge_count;
        if (shifts.empty() || shifts.back() != shift) shifts.push_back(shift);
      }
      if (merge_count + keep_count <= cap || shifts.size() < 2) return;
      const size_t budget = std::max(cap > keep_count ? cap - keep_count : 0,
                                     merge_count / shifts.size());  // at least one group
      const size_t k = (merge_count + budget - 1) / budget;
      if (k < 2) return;
      std::unordered_map<int, int> group_shift;  // shift → first shift of its group
      for (size_t i = 0; i < shifts.size(); ++i) group_shift[shifts[i]] = shifts[i - i % k];
      const int nodes = pf_.nodes;
      target = [group_shift = std::move(group_shift), mergeable, nodes](int i, int j) {
        const int shift = ((j - i) % nodes + nodes) % nodes;
        return mergeable(shift) ? (i + group_shift.at(shift)) % nodes : j;
      };
    }
    std::unordered_map<uint64_t, size_t> slot;
    std::vector<std::pair<uint64_t, Flow>> out;
    for (auto& [key, f] : flows) {
      uint64_t k2 = key;
      Flow g = f;
      if (network(f)) {
        const int src_node = pf_.node_of(f.x.src), dst_node = pf_.node_of(f.x.dst);
        const int to = target(src_node, dst_node);
        if (to != dst_node) {
          g.x.dst = f.x.dst - dst_node + to;  // the same kind of endpoint on node `to`
          k2 = flow_key(((to - src_node) % pf_.nodes + pf_.nodes) % pf_.nodes, g.x.src, g.x.dst);
        }
      }
      auto [it, fresh] = slot.try_emplace(k2, out.size());
      if (fresh) {
        out.push_back({k2, g});
      } else {
        Flow& m = out[it->second].second;
        m.x.bytes += g.x.bytes;
        m.payload += g.payload;
        m.x.steps = std::max(m.x.steps, g.x.steps);
      }
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    flows = std::move(out);
  }

  void lower(const Program& prog) {
    rounds_.clear();
    traffic_ = local_ = 0;
    const bool aggregate = opt_.aggregate && pf_.built;
    for (size_t si = 0; si < prog.segments.size(); ++si) {
      const Segment& seg = prog.segments[si];
      const double before = seg.compute_s + seg.start_latency_s;
      traffic_ += seg.analytic_bytes;
      if (seg.rounds.empty()) {
        LoweredRound lr;
        lr.segment = static_cast<int>(si);
        lr.before_s = before;
        lr.not_before_s = seg.not_before_s;
        lr.first = lr.last = true;
        rounds_.push_back(std::move(lr));
        continue;
      }
      const size_t first_round = rounds_.size();
      current_staging_ = seg.staging;
      std::set<std::pair<int, int>> streaming;  // pipelined: edges whose latency was paid
      for (const Round& round : seg.rounds) {
        // Combine messages between the same endpoints (and, in fast mode, between the same
        // two nodes) into one flow; keep a deterministic order (by node shift, then source).
        std::vector<std::pair<uint64_t, Flow>> flows = combine(round, aggregate);
        if (seg.alltoall) merge_shifts(flows);
        LoweredRound cur;
        bool later_window = false;
        auto flush = [&] {
          later_window = true;
          cur.segment = static_cast<int>(si);
          cur.staging = seg.staging;
          rounds_.push_back(std::move(cur));
          cur = LoweredRound{};
        };
        int network_in_window = 0;
        for (auto& [key, val] : flows) {
          const Xfer& x = val.x;
          const bool network = pf_.node_of(x.src) != pf_.node_of(x.dst);
          // An all-to-all still holding more network flows than the cap (per-GPU endpoints:
          // exact mode, XML platforms) runs in windows of consecutive shifts, each loading
          // every NIC alike. Intra-node copies form small per-node groups in SimGrid's
          // solver and never need windows. Other rounds are never split: a window would
          // serialise a ring's or a tree's messages.
          if (seg.alltoall && network && network_in_window >= opt_.max_flows_per_round) {
            flush();
            network_in_window = 0;
          }
          network_in_window += network ? 1 : 0;
          // A library posts all of a round's messages at once, so their software latencies
          // overlap: windows after the first (an artifact of the flow cap) do not pay it again.
          // In a pipeline only the first chunk through an edge waits for its latency; the
          // following ones stream behind it (NCCL's model charges 2·height hops in all).
          const bool streams = seg.pipelined && !streaming.insert({x.src, x.dst}).second;
          const double hop = later_window || streams ? 0.0
                             : network               ? seg.hop_net_s
                                                     : seg.hop_intra_s;
          // Agregated flows pay the latency of a GPU-to-GPU route, as the flows they carry.
          double physical = route_latency(x.src, x.dst), extra = 0;
          if (val.agg) {
            const double gpu =
                route_latency(gpu_head(pf_.node_of(x.src)), gpu_head(pf_.node_of(x.dst)));
            extra = gpu - physical;
            physical = gpu;
          }
          LoweredXfer lx{
              x.src, x.dst, static_cast<double>(x.bytes) * seg.wire_factor, val.payload,
              std::max(0.0, seg.pipelined ? hop + extra
                                          : x.steps * hop + (x.steps - 1) * physical + extra)};
          cur.uses_agg |= val.agg;
          cur.xfers.push_back(lx);
        }
        if (!cur.xfers.empty() || rounds_.size() == first_round) flush();
      }
      rounds_[first_round].first = true;
      rounds_[first_round].before_s = before;
      rounds_[first_round].not_before_s = seg.not_before_s;
      rounds_.back().last = true;
    }
    for (size_t r = 0; r < rounds_.size(); ++r)
      rounds_[r].barrier_after =
          rounds_[r].uses_agg || (r + 1 < rounds_.size() && rounds_[r + 1].uses_agg);
  }

  const EndpointLayout& pf_;
  SessionOptions opt_;
  const RouteLatency& route_latency_;
  std::vector<LoweredRound> rounds_;
  bool current_staging_ = false;
  uint64_t traffic_ = 0, local_ = 0;
};

}  // namespace

LoweredProgram lower_program(const Program& prog, const EndpointLayout& layout,
                             const SessionOptions& options, const RouteLatency& route_latency) {
  return Lowering(layout, options, route_latency).run(prog);
}

}  // namespace clbo::sim
