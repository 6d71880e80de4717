// How fast the simulator runs one training step of each algorithm, by GPU count.
//
// Each iteration simulates one step kind's communication program in a fresh SimGrid child
// (as `clbo simulate` does) and reports, besides Google Benchmark's wall time of the whole
// iteration (fork, platform build, lowering, simulation, reply):
//   sim_wall_s            wall time the child spent lowering and simulating the program
//   cpu_s                 CPU time of the same (the meaningful figure on a loaded machine)
//   transfers             SimGrid communications executed
//   transfers_per_s       per simulator wall second; transfers_per_cpu_s per CPU second
//   sim_ms                simulated time of the step's communication
//   peak_rss_MiB          the child's peak memory
// The budget docs/simulator.md states: ≤ 1 s and ≤ 2 GiB per step at 1024 GPUs on one core,
// so a 1024-GPU projection stays interactive.
//
// How repeated and symmetric work is reused instead of simulated again:
//   * a run is never looped step by step: each distinct step kind is simulated once and
//     weighted by its count (clbo::sim::step_kinds), and step kinds with identical calls
//     share one program across optimizers (1-bit Adam's warmup step is Adam's step);
//   * repeated ring steps with the same pattern are merged into ~48 transfers per segment
//     (2 for latency-bound ones), re-adding the latencies the merge drops;
//   * the tree's pipeline is merged into ~8 rounds, fill and drain included;
//   * a node's GPUs share one flow per peer node (node aggregation), and a node-level
//     all-to-all carries several shifts per flow (at most 1024 network flows at once);
//   * identical concurrent flows finish together, so SimGrid solves them as one event.
// docs/simulator.md ("Speed") gives the equivalence tests behind each.
#include <benchmark/benchmark.h>

#include "clbo/sim/cluster.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/workload.hpp"

namespace {

using namespace clbo;
using namespace clbo::sim;

enum Case { kRing, kTree, kHierarchical, kOneBitNccl, kOneBitMpi, kSlamb };
const char* const kNames[] = {"ring", "tree", "hierarchical", "onebit_nccl", "onebit_mpi", "slamb"};

void BM_Step(benchmark::State& state) {
  const Case what = static_cast<Case>(state.range(0));
  const int p = static_cast<int>(state.range(1));
  const std::string cluster_name = state.range(2) == 0 ? "paper-ib-v100" : "paper-eth-v100";
  const ClusterSpec c = resolve_cluster(cluster_name, "bench", "cluster");
  const Workload w = resolve_workload("bert-large-seq128", "bench", "workload");
  const size_t n = w.layout.total();
  KernelModel k;
  k.hbm_Bps = 0.9e12;
  ExpandOptions o;
  o.param_count = n;
  std::vector<CommCall> calls;
  switch (what) {
    case kRing:
    case kTree:
    case kHierarchical:
      o.allreduce = what == kRing ? Algo::kRing : what == kTree ? Algo::kTree : Algo::kHierarchical;
      calls = {{CollKind::kAllreduce, n, DType::kF16, "grad"}};
      break;
    case kOneBitNccl:
    case kOneBitMpi:
      o.backend = what == kOneBitNccl ? Backend::kNccl : Backend::kMpi;
      calls = {{CollKind::kCompressedAllreduce, n, DType::kF32, "momentum"}};
      break;
    case kSlamb:
      calls = {{CollKind::kSparseAllreduce, n / 10, DType::kF16, "momentum"}};
      break;
  }
  const Program prog = calls_program(calls, c, p, k, o);
  ProgramResult last;
  for (auto _ : state) last = simulate_programs(c, p, {prog}).at(0);
  const double transfers = static_cast<double>(last.transfers);
  state.counters["sim_wall_s"] = last.wall_s;
  state.counters["cpu_s"] = last.cpu_s;
  state.counters["transfers"] = transfers;
  state.counters["transfers_per_s"] = last.wall_s > 0 ? transfers / last.wall_s : 0;
  state.counters["transfers_per_cpu_s"] = last.cpu_s > 0 ? transfers / last.cpu_s : 0;
  state.counters["sim_ms"] = last.time_s * 1e3;
  state.counters["peak_rss_MiB"] = static_cast<double>(last.process_peak_rss_bytes) / (1 << 20);
  state.SetLabel(std::string(kNames[what]) + " " + cluster_name);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int cluster : {0, 1})
    for (int what = kRing; what <= kSlamb; ++what)
      for (int p : {64, 256, 1024}) b->Args({what, p, cluster});
}

BENCHMARK(BM_Step)->Apply(Args)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
