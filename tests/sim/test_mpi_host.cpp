// Backend::kMpiHost: clbo's MPI backend between CPU ranks, as OpenMPI 4.1.4's libnbc runs it
// (sim/src/expansion/mpi_host.cpp). The binomial allreduce's rounds are libnbc's exactly; linear
// allgather and all-to-all are one round of every pair; both compressed flavours move the
// 1-bit scheme's bytes; simulated times follow the rounds' bottlenecks; an all-pairs round pays
// its software cost one peer after another.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "clbo/core/error.hpp"
#include "clbo/plan/plan.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/expansion/rounds.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;

namespace {

using Edge = std::tuple<int, int, uint64_t>;

std::set<Edge> edges(const Round& r) {
  std::set<Edge> s;
  for (const Xfer& x : r) s.insert({x.src, x.dst, x.bytes});
  return s;
}

KernelModel kernels() {
  KernelModel k;
  k.hbm_Bps = 1e10;
  return k;
}

ExpandOptions host(Algo a = Algo::kAuto) {
  ExpandOptions o;
  o.backend = Backend::kMpiHost;
  o.allreduce = a;
  o.exact = true;
  return o;
}

std::vector<uint64_t> sent(const std::vector<Segment>& segs, int p) {
  std::vector<uint64_t> b(static_cast<size_t>(p), 0);
  for (const auto& s : segs) {
    const auto e = bytes_sent_by_endpoint(s, p);
    for (int r = 0; r < p; ++r) b[static_cast<size_t>(r)] += e[static_cast<size_t>(r)];
  }
  return b;
}

}  // namespace

TEST(MpiHost, BinomialRoundsAreLibnbcs) {
  const uint64_t n = 1000;
  const auto r8 = binomial_allreduce_rounds(8, n);
  ASSERT_EQ(r8.size(), 6u);  // 3 reduce rounds, 3 broadcast rounds
  EXPECT_EQ(edges(r8[0]), (std::set<Edge>{{1, 0, n}, {3, 2, n}, {5, 4, n}, {7, 6, n}}));
  EXPECT_EQ(edges(r8[1]), (std::set<Edge>{{2, 0, n}, {6, 4, n}}));
  EXPECT_EQ(edges(r8[2]), (std::set<Edge>{{4, 0, n}}));
  EXPECT_EQ(edges(r8[3]), (std::set<Edge>{{0, 1, n}, {0, 2, n}, {0, 4, n}}));
  EXPECT_EQ(edges(r8[4]), (std::set<Edge>{{1, 3, n}, {1, 5, n}, {2, 6, n}}));
  EXPECT_EQ(edges(r8[5]), (std::set<Edge>{{3, 7, n}}));
  // Not a power of two: 6 ranks; rank 5's parent is 1 (5 − 4), as in libnbc's broadcast.
  const auto r6 = binomial_allreduce_rounds(6, n);
  ASSERT_EQ(r6.size(), 5u);
  EXPECT_EQ(edges(r6[0]), (std::set<Edge>{{1, 0, n}, {3, 2, n}, {5, 4, n}}));
  EXPECT_EQ(edges(r6[1]), (std::set<Edge>{{2, 0, n}}));
  EXPECT_EQ(edges(r6[2]), (std::set<Edge>{{4, 0, n}}));
  EXPECT_EQ(edges(r6[3]), (std::set<Edge>{{0, 1, n}, {0, 2, n}, {0, 4, n}}));
  EXPECT_EQ(edges(r6[4]), (std::set<Edge>{{1, 3, n}, {1, 5, n}}));
  EXPECT_TRUE(binomial_allreduce_rounds(1, n).empty());
  // Every rank but the root sends its partial once and receives the result once.
  for (int p : {2, 3, 5, 7, 8}) {
    std::vector<int> received(static_cast<size_t>(p), 0), reduced(static_cast<size_t>(p), 0);
    const auto rounds = binomial_allreduce_rounds(p, n);
    const size_t levels = rounds.size() / 2 + rounds.size() % 2;  // reduce rounds come first
    for (size_t i = 0; i < rounds.size(); ++i)
      for (const Xfer& x : rounds[i]) (i < levels ? reduced[x.src] : received[x.dst]) += 1;
    for (int r = 1; r < p; ++r) {
      EXPECT_EQ(reduced[static_cast<size_t>(r)], 1) << p << " " << r;
      EXPECT_EQ(received[static_cast<size_t>(r)], 1) << p << " " << r;
    }
  }
}

TEST(MpiHost, EveryCallMovesTheBytesItsAlgorithmSends) {
  const ClusterSpec c = test::small_cluster(4, 1);
  const int p = 4;
  const size_t n = 1 << 16;
  // Binomial: rank 0 broadcasts to 1 and 2, rank 1 reduces to 0 and broadcasts to 3.
  const auto bin = expand_call({CollKind::kAllreduce, n, DType::kF32, "g"}, 0, c, p, kernels(),
                               host(Algo::kBinomial));
  EXPECT_EQ(sent(bin, p), (std::vector<uint64_t>{8 * n, 8 * n, 4 * n, 4 * n}));
  // clbo's ring: the CommPlan.
  const CommCall ring{CollKind::kAllreduce, n, DType::kF32, "g"};
  const auto rs = sent(expand_call(ring, 0, c, p, kernels(), host(Algo::kRing)), p);
  for (int r = 0; r < p; ++r)
    EXPECT_EQ(rs[static_cast<size_t>(r)], make_plan(ring, p).bytes_sent_by(r));
  // Linear allgather and all-to-all: one round, every pair.
  for (CollKind k : {CollKind::kAllgather, CollKind::kAlltoall}) {
    const auto segs = expand_call({k, 100, DType::kF32, "x"}, 0, c, p, kernels(), host());
    ASSERT_EQ(segs.size(), 1u);
    EXPECT_EQ(segs[0].rounds.size(), 1u);
    EXPECT_EQ(segs[0].rounds[0].size(), static_cast<size_t>(p * (p - 1)));
    EXPECT_EQ(sent(segs, p), std::vector<uint64_t>(p, 3 * 400));
  }
  // Both compressed flavours move the 1-bit scheme's bytes, in 2 or 4 exchanges.
  for (bool gather : {false, true}) {
    ExpandOptions o = host();
    o.mpi_gather = gather;
    const auto segs =
        expand_call({CollKind::kCompressedAllreduce, n, DType::kF32, "m"}, 0, c, p, kernels(), o);
    size_t exchanges = 0;
    for (const auto& s : segs) exchanges += s.rounds.empty() ? 0 : 1;
    EXPECT_EQ(exchanges, gather ? 2u : 4u);
    EXPECT_EQ(sent(segs, p), std::vector<uint64_t>(p, onebit_bytes_per_rank(n, p)));
  }
}

TEST(MpiHost, NcclAlgorithmsAreRefusedAndBinomialIsMpiOnly) {
  const ClusterSpec c = test::small_cluster(4, 1);
  const CommCall call{CollKind::kAllreduce, 1000, DType::kF32, "g"};
  EXPECT_THROW(expand_call(call, 0, c, 4, kernels(), host(Algo::kTree)), InputError);
  ExpandOptions nccl;
  nccl.allreduce = Algo::kBinomial;
  EXPECT_THROW(expand_call(call, 0, c, 4, kernels(), nccl), Error);
  // The same call with kMpiHost is libnbc's, not NCCL's.
  const auto mpi = expand_call(call, 0, c, 4, kernels(), host(Algo::kBinomial));
  ASSERT_EQ(mpi.size(), 1u);
  EXPECT_NE(mpi.front().label.find("libnbc binomial"), std::string::npos) << mpi.front().label;
}

TEST(MpiHost, SimulatedTimesFollowTheRoundsBottlenecks) {
  // One rank per node on a single switch, links of B, latency negligible against the bytes.
  ClusterSpec c = test::small_cluster(8, 1);
  c.nic_latency_s = c.intra_latency_s = c.switch_latency_s = 0;
  c.software_latency_s = 0;
  const double B = c.node_net_Bps();
  const size_t n = 16 << 20;  // floats: 64 MiB
  const double S = 4.0 * n;
  ExpandOptions o = host(Algo::kBinomial);
  o.exact = false;
  std::vector<Program> progs;
  for (int p : {4, 8})
    progs.push_back(
        calls_program({{CollKind::kAllreduce, n, DType::kF32, "g"}}, c, p, kernels(), o));
  const auto r4 = simulate_programs(c, 4, {progs[0]});
  const auto r8 = simulate_programs(c, 8, {progs[1]});
  // p = 4: reduce 2 rounds of S; broadcast: the root's 2 messages share its link (2S),
  // then 1 → 3 (S): 5 S / B in all. p = 8: reduce 3 S; broadcast 3 S, then 2 S (rank 1's
  // two messages), then S: 9 S / B.
  EXPECT_NEAR(test::rel(r4[0].time_s, 5 * S / B), 0, 0.02);
  EXPECT_NEAR(test::rel(r8[0].time_s, 9 * S / B), 0, 0.02);
  // Small messages share the root's link too (warm sockets interleave the fan-out): 64 KiB
  // on 8 ranks is the same 9 S / B, not the doubling broadcast's 6 S / B.
  for (const size_t m : {size_t{1} << 10, size_t{1} << 14}) {
    const auto small = simulate_programs(
        c, 8, {calls_program({{CollKind::kAllreduce, m, DType::kF32, "g"}}, c, 8, kernels(), o)});
    EXPECT_NEAR(test::rel(small[0].time_s, 9 * 4.0 * m / B), 0, 0.02) << m;
  }
  // The linear allgather of 8 MiB blocks: every link carries 7 blocks each way at once.
  ExpandOptions lin = host();
  lin.exact = false;
  const auto ag = simulate_programs(
      c, 8,
      {calls_program({{CollKind::kAllgather, 2 << 20, DType::kF32, "x"}}, c, 8, kernels(), lin)});
  EXPECT_NEAR(test::rel(ag[0].time_s, 7 * 8.0 * (1 << 20) / B), 0, 0.02);
  // At a measured all-pairs efficiency of 0.8 it takes 1/0.8 as long; a ring does not change.
  lin.mpi_all_pairs_efficiency = 0.8;
  const auto slow = simulate_programs(
      c, 8,
      {calls_program({{CollKind::kAllgather, 2 << 20, DType::kF32, "x"}}, c, 8, kernels(), lin)});
  EXPECT_NEAR(test::rel(slow[0].time_s, ag[0].time_s / 0.8), 0, 0.01);
  ExpandOptions ring = host(Algo::kRing);
  ring.exact = false;
  ring.mpi_all_pairs_efficiency = 0.8;
  const auto rs =
      expand_call({CollKind::kAllreduce, n, DType::kF32, "g"}, 0, c, 8, kernels(), ring);
  EXPECT_EQ(rs.front().wire_factor, 1.0);
  // Measured by size, the round takes the efficiency at its message's size: flat at 0.8, the
  // same time; the scalar is then unused.
  lin.mpi_all_pairs_efficiency = 1.0;
  lin.mpi_all_pairs_efficiency_by_bytes = {{1024, 0.8}, {1e12, 0.8}};
  const auto by_size = simulate_programs(
      c, 8,
      {calls_program({{CollKind::kAllgather, 2 << 20, DType::kF32, "x"}}, c, 8, kernels(), lin)});
  EXPECT_DOUBLE_EQ(by_size[0].time_s, slow[0].time_s);
  lin.mpi_all_pairs_efficiency_by_bytes = {{1024, 0.8}, {512, 0.9}};  // not ascending
  EXPECT_THROW(expand_call({CollKind::kAllgather, 100, DType::kF32, "x"}, 0, c, 8, kernels(), lin),
               InputError);
  lin.mpi_all_pairs_efficiency_by_bytes.clear();
  lin.mpi_all_pairs_efficiency = 0;
  EXPECT_THROW(expand_call({CollKind::kAllgather, 100, DType::kF32, "x"}, 0, c, 8, kernels(), lin),
               InputError);
}

// Measured at a few sizes, the efficiency between two of them is interpolated in log(bytes)
// and held flat outside them; small rounds, further from the fluid time, are slower.
TEST(MpiHost, AllPairsEfficiencyBySizeIsInterpolatedInLogBytes) {
  ExpandOptions o;
  o.mpi_all_pairs_efficiency = 0.9;
  EXPECT_DOUBLE_EQ(mpi_all_pairs_efficiency_at(o, 1000), 0.9);
  o.mpi_all_pairs_efficiency_by_bytes = {{65536, 0.6}, {1 << 20, 0.8}, {16 << 20, 0.95}};
  EXPECT_DOUBLE_EQ(mpi_all_pairs_efficiency_at(o, 1000), 0.6);
  EXPECT_DOUBLE_EQ(mpi_all_pairs_efficiency_at(o, 65536), 0.6);
  EXPECT_NEAR(mpi_all_pairs_efficiency_at(o, 262144), 0.7, 1e-12);  // halfway in log
  EXPECT_NEAR(mpi_all_pairs_efficiency_at(o, 4 << 20), 0.875, 1e-12);
  EXPECT_DOUBLE_EQ(mpi_all_pairs_efficiency_at(o, 1e9), 0.95);
  // Without latencies an all-to-all of b bytes per pair takes 1/efficiency(b) of its fluid
  // time: 2x at 4 KiB, 1/0.6111 at 64 KiB (2/9 of the way from 4 KiB to 1 GiB in log).
  ClusterSpec c = test::small_cluster(4, 1);
  c.nic_latency_s = c.intra_latency_s = c.switch_latency_s = 0;
  c.software_latency_s = 0;
  ExpandOptions lin = host(Algo::kRing);
  lin.exact = false;
  auto time_on = [&](const ClusterSpec& cl, uint64_t count) {
    return simulate_programs(cl, 4,
                             {calls_program({{CollKind::kAlltoall, count, DType::kF32, "x"}}, cl, 4,
                                            kernels(), lin)})[0]
        .time_s;
  };
  auto time_of = [&](uint64_t count) { return time_on(c, count); };
  auto time_of_without = [&](const ClusterSpec& cl, uint64_t count) {
    ExpandOptions fluid = lin;
    fluid.mpi_all_pairs_efficiency_by_bytes.clear();
    return simulate_programs(cl, 4,
                             {calls_program({{CollKind::kAlltoall, count, DType::kF32, "x"}}, cl, 4,
                                            kernels(), fluid)})[0]
        .time_s;
  };
  const double fluid_4k = time_of(1 << 10), fluid_64k = time_of(1 << 14);
  lin.mpi_all_pairs_efficiency_by_bytes = {{4096, 0.5}, {1 << 30, 1.0}};
  EXPECT_NEAR(time_of(1 << 10) / fluid_4k, 2.0, 0.02);
  EXPECT_NEAR(time_of(1 << 14) / fluid_64k, 1.0 / (0.5 + 0.5 * 4.0 / 18.0), 0.02);
  // The sizes are what one host sends another (the probe runs one flow per pair of hosts):
  // with 2 ranks a host, 1 KiB per rank pair is 4 KiB between two hosts.
  lin.mpi_all_pairs_efficiency_by_bytes = {{1024, 0.5}, {4096, 1.0}};
  EXPECT_NEAR(time_of(1 << 8) / time_of_without(c, 1 << 8), 2.0, 0.02);
  ClusterSpec two = test::small_cluster(2, 2);
  two.nic_latency_s = two.intra_latency_s = two.switch_latency_s = 0;
  two.software_latency_s = 0;
  EXPECT_NEAR(time_on(two, 1 << 8) / time_of_without(two, 1 << 8), 1.0, 0.02);
  // A world smaller than a node has only its own ranks there: 2 ranks on a node of 4 are
  // looked up at 2 x 2 x 1 KiB per rank pair = 4 KiB, not 4 x 4 x 1 KiB.
  ClusterSpec wide = test::small_cluster(2, 4);
  wide.nic_latency_s = wide.intra_latency_s = wide.switch_latency_s = 0;
  wide.software_latency_s = 0;
  auto on_two_ranks = [&](const ExpandOptions& opt) {
    return simulate_programs(wide, 2,
                             {calls_program({{CollKind::kAlltoall, 1 << 8, DType::kF32, "x"}}, wide,
                                            2, kernels(), opt)})[0]
        .time_s;
  };
  lin.mpi_all_pairs_efficiency_by_bytes = {{4096, 0.5}, {16384, 1.0}};
  ExpandOptions fluid = lin;
  fluid.mpi_all_pairs_efficiency_by_bytes.clear();
  EXPECT_NEAR(on_two_ranks(lin) / on_two_ranks(fluid), 2.0, 0.02);
}

// MPI's software cost is CPU work a rank does per peer, one peer after another: an all-pairs
// round (libnbc's linear allgather and all-to-all, the gathers of the compressed scheme)
// starts its last message (k - 1) software latencies after its first, k the rank's peers in
// the round; a piece and its scale to the same peer share one pass. Rings and trees, one
// peer per round, pay one latency per round as before.
TEST(MpiHost, AllPairsRoundsPayTheSoftwareCostOnePeerAfterAnother) {
  ClusterSpec c = test::small_cluster(8, 1);
  c.nic_latency_s = c.intra_latency_s = c.switch_latency_s = 0;
  const double L = 1e-3;  // far above the wire time of the bytes below
  c.software_latency_s = L;
  ExpandOptions o = host();
  o.exact = false;
  const CommCall gather{CollKind::kAllgather, 16, DType::kF32, "x"};
  const auto segs = expand_call(gather, 0, c, 8, kernels(), o);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_DOUBLE_EQ(segs[0].start_latency_s, 6 * L);  // 7 peers: 1 overlapped, 6 after it
  const auto t = simulate_programs(c, 8, {calls_program({gather}, c, 8, kernels(), o)});
  EXPECT_NEAR(test::rel(t[0].time_s, 7 * L), 0, 0.02);
  // p = 2: one peer, nothing serial.
  EXPECT_DOUBLE_EQ(expand_call(gather, 0, c, 2, kernels(), o)[0].start_latency_s, 0.0);
  // The ring pays one latency per round, nothing up front.
  const auto ring = expand_call({CollKind::kAllreduce, 1024, DType::kF32, "g"}, 0, c, 8, kernels(),
                                host(Algo::kRing));
  EXPECT_DOUBLE_EQ(ring[0].start_latency_s, 0.0);
  // DeepSpeed's gather flavour sends a piece and its scale to each root side by side: 7
  // peers, 6 serial latencies, not 13.
  o.mpi_gather = true;
  for (const Segment& s : expand_call({CollKind::kCompressedAllreduce, 1 << 16, DType::kF32, "g"},
                                      0, c, 8, kernels(), o))
    if (!s.rounds.empty()) {
      EXPECT_DOUBLE_EQ(s.start_latency_s, 6 * L) << s.label;
    }
}

// clbo's sparse allreduce gets its mask drawn (SLAMB's step draws it, outside the call): the
// call compacts, runs the ring and scatters back, whatever the mask draw costs; the GPU
// backends charge SLAMB's draw with the call.
TEST(MpiHost, TheSparseAllreduceChargesCompactionAndScatterNotTheMaskDraw) {
  const ClusterSpec c = test::small_cluster(4, 1);
  const int p = 4;
  const size_t n = size_t{1} << 20, kept = n / 10;
  KernelModel k = kernels();
  k.compact_eps = 2e9;
  k.scatter_eps = 1e9;
  ExpandOptions o = host();
  o.param_count = n;
  const CommCall call{CollKind::kSparseAllreduce, kept, DType::kF32, "m"};
  auto compute = [&](const KernelModel& km, const ExpandOptions& opts) {
    double t = 0;
    for (const auto& s : expand_call(call, 0, c, p, km, opts)) t += s.compute_s;
    return t;
  };
  const auto segs = expand_call(call, 0, c, p, k, o);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_DOUBLE_EQ(segs[0].compute_s, n / 2e9) << segs[0].label;
  EXPECT_FALSE(segs[1].rounds.empty()) << "the ring between them";
  EXPECT_DOUBLE_EQ(segs[2].compute_s, n / 1e9) << segs[2].label;
  KernelModel slow_draw = k;
  slow_draw.mask_eps = 1e6;
  EXPECT_DOUBLE_EQ(compute(slow_draw, o), compute(k, o)) << "no mask drawn in the call";
  ExpandOptions gpu = o;
  gpu.backend = Backend::kNccl;
  EXPECT_DOUBLE_EQ(compute(slow_draw, gpu), n / 1e6 + n / 2e9 + n / 1e9);
}
