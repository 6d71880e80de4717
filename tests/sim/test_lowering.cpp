// Lowering without SimGrid: node aggregation, local copies, the latencies a sender sleeps
// for merged and pipelined transfers, and all-to-all windows, on a fake route table.
#include <gtest/gtest.h>

#include "clbo/sim/lowering.hpp"

using namespace clbo::sim;

namespace {

// 2 nodes × 2 GPUs; intra-node routes 1 µs, inter-node routes 5 µs.
EndpointLayout two_by_two() {
  EndpointLayout l;
  l.p = 4;
  l.nodes = 2;
  l.gpus_per_node = 2;
  return l;
}

RouteLatency fake_routes(const EndpointLayout& l) {
  return [l](int a, int b) { return l.node_of(a) == l.node_of(b) ? 1e-6 : 5e-6; };
}

Segment segment(std::vector<Round> rounds, double hop_intra = 2e-6, double hop_net = 10e-6) {
  Segment s;
  s.label = "test";
  s.rounds = std::move(rounds);
  s.hop_intra_s = hop_intra;
  s.hop_net_s = hop_net;
  return s;
}

Program program(std::vector<Segment> segs) {
  Program p;
  p.p = 4;
  p.gpus_per_node = 2;
  p.segments = std::move(segs);
  return p;
}

}  // namespace

TEST(Lowering, InterNodeTransfersBecomeOneFlowPerNodePair) {
  const EndpointLayout l = two_by_two();
  const Program prog =
      program({segment({{{0, 2, 100}, {1, 3, 200}, {2, 0, 300}, {3, 1, 400}, {0, 1, 50}}})});
  SessionOptions o;
  const LoweredProgram out = lower_program(prog, l, o, fake_routes(l));
  ASSERT_EQ(out.rounds.size(), 1u);
  const LoweredRound& r = out.rounds[0];
  EXPECT_TRUE(r.uses_agg);
  EXPECT_TRUE(r.barrier_after);
  ASSERT_EQ(r.xfers.size(), 3u);  // the intra-node copy and two aggregated flows
  uint64_t agg_bytes = 0;
  for (const LoweredXfer& x : r.xfers) {
    if (l.is_agg(x.src)) {
      EXPECT_TRUE(l.is_agg(x.dst));
      agg_bytes += x.payload;
      // An aggregated flow pays a GPU-to-GPU route's latency; the fake table gives both
      // routes 5 µs, so the sender sleeps only the software hop.
      EXPECT_DOUBLE_EQ(x.latency_s, 10e-6);
    } else {
      EXPECT_EQ(x.src, 0);
      EXPECT_EQ(x.dst, 1);
      EXPECT_DOUBLE_EQ(x.latency_s, 2e-6);
    }
  }
  EXPECT_EQ(agg_bytes, 1000u);

  o.aggregate = false;
  const LoweredProgram plain = lower_program(prog, l, o, fake_routes(l));
  EXPECT_EQ(plain.rounds[0].xfers.size(), 5u);
  EXPECT_FALSE(plain.rounds[0].uses_agg);
}

TEST(Lowering, MessagesBetweenRanksOfOneCpuAreLocalCopies) {
  const EndpointLayout l = two_by_two();
  // Node CPUs are endpoints 4 and 5: two messages 4 → 4 (ranks of node 0) and one 4 → 5.
  Segment s = segment({{{4, 4, 10}, {4, 4, 20}, {4, 5, 30}}});
  s.analytic_bytes = 7;
  const LoweredProgram out = lower_program(program({s}), l, {}, fake_routes(l));
  EXPECT_EQ(out.local_copies, 2u);
  EXPECT_EQ(out.traffic_bytes, 37u);  // local copies and analytic bytes, counted up front
  ASSERT_EQ(out.rounds[0].xfers.size(), 1u);
  EXPECT_EQ(out.rounds[0].xfers[0].payload, 30u);
}

TEST(Lowering, MergedStepsReaddTheLatenciesTheMergeDropped) {
  const EndpointLayout l = two_by_two();
  Segment s = segment({{Xfer{0, 1, 1000, 3}}});
  s.wire_factor = 2;
  const LoweredProgram out = lower_program(program({s}), l, {}, fake_routes(l));
  const LoweredXfer& x = out.rounds[0].xfers[0];
  EXPECT_DOUBLE_EQ(x.latency_s, 3 * 2e-6 + 2 * 1e-6);  // k hops and k−1 route latencies
  EXPECT_DOUBLE_EQ(x.wire_bytes, 2000);
  EXPECT_EQ(x.payload, 1000u);

  // A pipeline pays each edge's hop once, for its first chunk only.
  Segment pipe = segment({{Xfer{0, 1, 10, 4}}, {Xfer{0, 1, 10, 4}}});
  pipe.pipelined = true;
  const LoweredProgram po = lower_program(program({pipe}), l, {}, fake_routes(l));
  ASSERT_EQ(po.rounds.size(), 2u);
  EXPECT_DOUBLE_EQ(po.rounds[0].xfers[0].latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(po.rounds[1].xfers[0].latency_s, 0.0);
}

TEST(Lowering, ComputeSegmentsAndSegmentBoundsAreMarked) {
  const EndpointLayout l = two_by_two();
  Segment kernel;
  kernel.compute_s = 0.5;
  kernel.not_before_s = 0.25;
  Segment comm = segment({{{0, 1, 5}}, {{1, 0, 5}}});
  comm.start_latency_s = 1e-3;
  const LoweredProgram out = lower_program(program({kernel, comm}), l, {}, fake_routes(l));
  ASSERT_EQ(out.rounds.size(), 3u);
  EXPECT_TRUE(out.rounds[0].first && out.rounds[0].last);
  EXPECT_DOUBLE_EQ(out.rounds[0].before_s, 0.5);
  EXPECT_DOUBLE_EQ(out.rounds[0].not_before_s, 0.25);
  EXPECT_TRUE(out.rounds[1].first);
  EXPECT_FALSE(out.rounds[1].last);
  EXPECT_DOUBLE_EQ(out.rounds[1].before_s, 1e-3);
  EXPECT_TRUE(out.rounds[2].last);
  EXPECT_EQ(out.rounds[2].segment, 1);
}

TEST(Lowering, AnAlltoallOverTheFlowCapRunsInWindowsThatPayTheHopOnce) {
  EndpointLayout l;
  l.p = 8;
  l.nodes = 8;
  l.gpus_per_node = 1;
  Segment s;
  s.alltoall = true;
  s.hop_net_s = 10e-6;
  Round r;
  for (int shift = 1; shift < 8; ++shift)
    for (int src = 0; src < 8; ++src) r.push_back(Xfer{src, (src + shift) % 8, 100, 1});
  s.rounds = {r};
  Program prog;
  prog.p = 8;
  prog.gpus_per_node = 1;
  prog.segments = {s};
  SessionOptions o;
  o.aggregate = false;
  o.max_flows_per_round = 16;
  const LoweredProgram out = lower_program(prog, l, o, fake_routes(l));
  ASSERT_EQ(out.rounds.size(), 4u);  // 56 flows, 16 per window
  uint64_t bytes = 0;
  for (size_t i = 0; i < out.rounds.size(); ++i)
    for (const LoweredXfer& x : out.rounds[i].xfers) {
      bytes += x.payload;
      EXPECT_DOUBLE_EQ(x.latency_s, i == 0 ? 10e-6 : 0.0);
    }
  EXPECT_EQ(bytes, 5600u);
}
