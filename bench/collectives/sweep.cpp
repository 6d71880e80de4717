// The sweep of `clbo bench collectives`, as nccl-tests times it: every size warmed up first,
// then per size and half an untimed call, -n timed iterations of -m calls (with -z's waits
// and barriers), the time reduced over ranks as -a says, then -c checked calls.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "bench_world.hpp"
#include "clbo/collectives/timing.hpp"
#include "clbo/core/error.hpp"

namespace clbo::bench {

namespace {

constexpr const char* kWhere = "clbo bench collectives";

double reduce_time(const std::vector<double>& all, int64_t average) {
  switch (average) {
    case 0:
      return all.front();
    case 2:
      return *std::min_element(all.begin(), all.end());
    case 3:
      return *std::max_element(all.begin(), all.end());
    default: {
      double s = 0;
      for (double v : all) s += v;
      return s / static_cast<double>(all.size());
    }
  }
}

// At most this many timed iterations however cheap a call (--min-time over a call of a few
// microseconds).
constexpr int64_t kMaxTimedIterations = 1000000;

// The timed iterations of one half: -n, or with --min-time as many more as the slowest rank's
// sync call says fill it. Every rank takes the same maximum, so every rank runs the same count.
int64_t timed_iterations(RankOps& ops, const CollectiveBenchConfig& c, double sync_s) {
  if (c.min_time_s <= 0) return c.iters;
  const std::vector<double> all = ops.gather_over_ranks(sync_s);
  const double per_iteration =
      std::max(1e-7, *std::max_element(all.begin(), all.end())) * static_cast<double>(c.agg_iters);
  const double wanted =
      std::min(std::ceil(c.min_time_s / per_iteration), static_cast<double>(kMaxTimedIterations));
  return std::max(c.iters, static_cast<int64_t>(wanted));
}

// Whether kernel_seconds() sees `op`'s compression kernels: they run on the rank's own thread
// on the host backends only.
bool host_kernels(Op op, const CollectiveBenchConfig& c) {
  return (op == Op::kCompressed || op == Op::kSparse) && c.backend != "nccl";
}

// One half of one row: the untimed sync call, -n (or --min-time's) timed iterations of -m
// calls each (one NCCL group when -m > 1, with -z's waits and barriers), then -c checked
// calls.
Half time_half(RankOps& ops, const Sweep& run, Op op) {
  using clock = std::chrono::steady_clock;
  const auto& c = run.cfg;
  Half h;
  h.ran = true;
  ops.prepare_timing();
  const auto sync0 = clock::now();
  ops.run();  // nccl-tests' sync call before timing
  ops.finish();
  const double sync_s = std::chrono::duration<double>(clock::now() - sync0).count();
  h.iterations = timed_iterations(ops, c, sync_s);  // before the barrier that starts the clock
  ops.barrier();
  const double kernel0_s = kernel_seconds();
  const auto t0 = clock::now();
  double coll_only_s = 0;  // -z 3: the time outside the barriers
  for (int64_t i = 0; i < h.iterations; ++i) {
    const auto ti = clock::now();
    if (c.agg_iters > 1) ops.group_start();
    for (int64_t a = 0; a < c.agg_iters; ++a) {
      ops.run();
      if (c.blocking == 1 || c.blocking == 2) ops.finish();
      if (c.blocking == 1) ops.barrier();
    }
    if (c.agg_iters > 1) ops.group_end();
    if (c.blocking == 3) {
      ops.finish();
      coll_only_s += std::chrono::duration<double>(clock::now() - ti).count();
      ops.barrier();
    }
  }
  const double calls = static_cast<double>(h.iterations * c.agg_iters);
  const double cpu_s =
      c.blocking == 3 ? coll_only_s : std::chrono::duration<double>(clock::now() - t0).count();
  ops.finish();
  const double wall_s =
      c.blocking == 3 ? coll_only_s : std::chrono::duration<double>(clock::now() - t0).count();
  const double kernel_us = (kernel_seconds() - kernel0_s) / calls * 1e6;
  double us = (c.report_cputime ? cpu_s : wall_s) / calls * 1e6;
  if (op == Op::kPingpong) us /= 2;  // one call is a round trip
  h.time_us = reduce_time(ops.gather_over_ranks(us), c.average);
  if (host_kernels(op, c)) h.kernel_us = reduce_time(ops.gather_over_ranks(kernel_us), 1);
  for (int64_t k = 0; k < c.check; ++k) {
    h.wrong = ops.sum_over_ranks(ops.run_checked());
    if (h.wrong) break;
  }
  return h;
}

// Every size of `k` must fit at p ranks, checked before anything runs.
void check_case(const Sweep& run, const Case& k, int p) {
  if (k.op == Op::kPingpong && p < 2)
    throw InputError(kWhere, "--collective", "pingpong", "needs at least 2 ranks");
  for (uint64_t bytes : run.sizes)
    if (shape_for(k.op, bytes, k.elem_bytes, p).call_count == 0)
      throw InputError(kWhere, "-b", run.cfg.min_bytes,
                       fmt::format("too small for {} at p = {} with {} elements (needs at least "
                                   "{} bytes)",
                                   op_name(k.op), p, k.type,
                                   std::max<size_t>(16, k.elem_bytes) * static_cast<size_t>(p)));
}

}  // namespace

// As nccl-tests: per case (collective and type) every size warmed up, then the sizes -N
// times.
std::vector<Row> sweep(RankOps& ops, const Sweep& run) {
  const int p = ops.size();
  const bool root = ops.rank() == 0;
  for (const Case& k : run.cases) check_case(run, k, p);
  std::vector<Row> rows;
  if (root) print_preamble(run, p);
  for (const Case& k : run.cases) {
    if (run.cfg.warmup > 0) {
      ops.set_in_place(false);
      for (uint64_t bytes : run.sizes) {
        ops.setup(k, shape_for(k.op, bytes, k.elem_bytes, p).buffer_count);
        ops.prepare_timing();
        for (int64_t w = 0; w < run.cfg.warmup; ++w) ops.run();
        ops.finish();
      }
    }
    for (int64_t cycle = 0; run.cfg.run_cycles == 0 || cycle < run.cfg.run_cycles; ++cycle) {
      for (uint64_t bytes : run.sizes) {
        Row row;
        row.c = k;
        row.cycle = cycle;
        row.shape = shape_for(k.op, bytes, k.elem_bytes, p);
        ops.setup(k, row.shape.buffer_count);
        ops.set_in_place(true);
        row.wire_bytes = ops.max_over_ranks_u64(ops.run_counted());
        const bool native_in = native_in_place(k.op, run.cfg.backend);
        if (run.cfg.halves == "both" || !native_in) {
          ops.set_in_place(false);
          row.out_of_place = time_half(ops, run, k.op);
        }
        if (run.cfg.halves == "both" || native_in) {
          ops.set_in_place(true);
          row.in_place = time_half(ops, run, k.op);
        }
        if (run.cfg.report_timestamps) row.timestamp = now_text();
        if (root) {
          print_row(run, row, p);
          if (run.cfg.run_cycles > 0) rows.push_back(row);
        }
      }
    }
  }
  return rows;
}

}  // namespace clbo::bench
