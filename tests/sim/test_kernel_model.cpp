// The measured kernel rates (kernel_model.hpp): each kernel at the largest size the benchmark
// ran (streaming from memory), the server step by the pieces p it decodes where the CPU
// binary names them (c:<c>/p:<p>), the CUDA binary's unnamed arguments, and the cache model:
// the in-cache rows' rates while the sharing ranks' working sets fit.
#include <gtest/gtest.h>

#include <cmath>

#include "clbo/sim/kernel_model.hpp"
#include "clbo_test/rejection.hpp"

namespace clbo::sim {
namespace {

nlohmann::json row(const std::string& name, double items_per_s) {
  return {{"name", name}, {"run_type", "iteration"}, {"items_per_second", items_per_s}};
}

// Two sizes per kernel, as the CPU binary writes them.
nlohmann::json cpu_bench() {
  return {{"benchmarks",
           {row("BM_compress_fused/1048576/real_time", 2e9),
            row("BM_compress_fused/67108864/real_time", 5e8),
            row("BM_unpack_scale/67108864/real_time", 4e9),
            row("BM_unpack_scale/1048576/real_time", 8e9),  // order does not matter
            row("BM_server_step/c:1048576/p:4/real_time", 8e8),
            row("BM_server_step/c:1048576/p:8/real_time", 4e8),
            row("BM_server_step/c:67108864/p:4/real_time", 6e8),
            row("BM_server_step/c:67108864/p:8/real_time", 3e8),
            {{"name", "BM_compress_fused/67108864/real_time_mean"},
             {"run_type", "aggregate"},
             {"items_per_second", 1.0}}}}};
}

TEST(KernelModel, EachKernelAtItsLargestSizeAndTheServerByP) {
  KernelModel k;
  load_kernel_bench(k, cpu_bench(), "k.json");
  EXPECT_DOUBLE_EQ(k.compress_eps, 5e8) << "the aggregate row is not a measurement";
  EXPECT_DOUBLE_EQ(k.unpack_eps, 4e9);
  EXPECT_DOUBLE_EQ(k.worker_compress_s(1 << 20), (1 << 20) / 5e8);
  // The server's rate is the largest slice's (c:67108864, not the first row's c:1048576).
  ASSERT_EQ(k.server_eps_by_p.size(), 2u);
  EXPECT_DOUBLE_EQ(k.server_eps_by_p.at(4), 6e8);
  EXPECT_DOUBLE_EQ(k.server_eps_by_p.at(8), 3e8);
  // Slice c = n / p; between the measured p the time per element is linear in p.
  const double c = 1 << 20;
  EXPECT_DOUBLE_EQ(k.server_s(size_t{4} << 20, 4), c / 6e8);
  EXPECT_DOUBLE_EQ(k.server_s(size_t{8} << 20, 8), c / 3e8);
  EXPECT_NEAR(k.server_s(size_t{6} << 20, 6), c * (0.5 / 6e8 + 0.5 / 3e8), 1e-12);
  EXPECT_DOUBLE_EQ(k.server_s(size_t{2} << 20, 2), c / 6e8) << "below p = 4: p = 4's";
  EXPECT_DOUBLE_EQ(k.server_s(size_t{16} << 20, 16), c / 3e8) << "above p = 8: p = 8's";
  EXPECT_EQ(k.to_json()["measured"]["server_items_per_s_by_p"]["8"], 3e8);
}

// --benchmark_repetitions: each benchmark counts by its median repetition, a measured row
// (its own counters), never by an aggregate; one dipped repetition moves nothing.
TEST(KernelModel, RepeatedBenchmarksCountByTheirMedianRepetition) {
  nlohmann::json b = {{"benchmarks", nlohmann::json::array()}};
  for (double eps : {5e8, 3e8, 6e8, 5.5e8, 5.2e8})
    b["benchmarks"].push_back(row("BM_compress_fused/67108864/real_time", eps));
  for (double eps : {4e9, 2e9, 4.4e9, 4.2e9})
    b["benchmarks"].push_back(row("BM_unpack_scale/67108864/real_time", eps));
  b["benchmarks"].push_back({{"name", "BM_compress_fused/67108864/real_time_median"},
                             {"run_type", "aggregate"},
                             {"aggregate_name", "median"},
                             {"items_per_second", 1.0}});
  const auto rows = median_iteration_rows(b["benchmarks"]);
  ASSERT_EQ(rows.size(), 2u) << "one row per benchmark, in order";
  EXPECT_EQ(rows[0], &b["benchmarks"][4]) << "the middle of five, the row itself";
  KernelModel k;
  load_kernel_bench(k, b, "k.json");
  EXPECT_DOUBLE_EQ(k.compress_eps, 5.2e8);
  EXPECT_DOUBLE_EQ(k.unpack_eps, 4e9) << "of four: the slower of the middle two";
  EXPECT_TRUE(median_iteration_rows(nlohmann::json::object()).empty());
}

TEST(KernelModel, CudaNamesAreUnnamedArgumentsAndAFileWithoutKernelsIsRefused) {
  KernelModel k;
  load_kernel_bench(k,
                    {{"benchmarks",
                      {row("BM_Compress/1048576/manual_time", 5e10),
                       row("BM_Compress/67108864/iterations:30/manual_time", 3e10),
                       row("BM_ServerStep/16777216/iterations:30/manual_time", 2e10)}}},
                    "cuda.json");
  EXPECT_DOUBLE_EQ(k.compress_eps, 3e10);
  EXPECT_DOUBLE_EQ(k.server_eps, 2e10);
  EXPECT_TRUE(k.server_eps_by_p.empty()) << "the CUDA binary does not name p";
  EXPECT_DOUBLE_EQ(k.server_s(size_t{4} << 24, 4), (1 << 24) / 2e10);
  EXPECT_EQ(k.unpack_eps, 0.0) << "missing kernels keep the roofline";
  const std::string msg = clbo::test::rejection_message([] {
    KernelModel m;
    // json::array: clang reads a one-entry {x} as a copy of x, not an array.
    load_kernel_bench(m, {{"benchmarks", nlohmann::json::array({row("BM_memcpy/64", 1)})}},
                      "x.json");
  });
  EXPECT_TRUE(clbo::test::contains(msg, "found none of BM_compress_fused")) << msg;
}

// The CPU binary's in-cache rows (counters in_cache and working_set_bytes) and its context.
nlohmann::json cached_row(const std::string& name, double items_per_s, double ws) {
  nlohmann::json r = row(name, items_per_s);
  r["in_cache"] = 1.0;
  r["working_set_bytes"] = ws;
  return r;
}

nlohmann::json cpu_bench_with_cache() {
  nlohmann::json b = {{"context", {{"llc_bytes", "268435456"}, {"llc_bytes_sysfs", "33554432"}}},
                      {"benchmarks",
                       {cached_row("BM_compress_fused/1048576/real_time", 2e9, 8e6),
                        row("BM_compress_fused/67108864/real_time", 5e8),
                        cached_row("BM_unpack_scale/1048576/real_time", 8e9, 4e6),
                        row("BM_unpack_scale/67108864/real_time", 4e9),
                        cached_row("BM_server_step/c:1048576/p:4/real_time", 8e8, 5e6),
                        cached_row("BM_server_step/c:1048576/p:8/real_time", 4e8, 6e6),
                        row("BM_server_step/c:67108864/p:4/real_time", 6e8),
                        row("BM_server_step/c:67108864/p:8/real_time", 3e8)}}};
  return b;
}

TEST(KernelModel, InCacheRowsAndTheCoresSharedCacheAreReadButOffUntilSharersAreSet) {
  KernelModel k;
  load_kernel_bench(k, cpu_bench_with_cache(), "k.json");
  EXPECT_DOUBLE_EQ(k.compress_cached.eps, 2e9);
  EXPECT_DOUBLE_EQ(k.compress_cached.working_set_bytes, 8e6);
  EXPECT_DOUBLE_EQ(k.unpack_cached.eps, 8e9);
  EXPECT_DOUBLE_EQ(k.server_cached_by_p.at(8).eps, 4e8);
  EXPECT_DOUBLE_EQ(k.llc_bytes, 33554432.0) << "sysfs's cache, not sysconf's socket total";
  // Off (llc_sharers = 0): streaming whatever the working set.
  EXPECT_DOUBLE_EQ(k.worker_compress_s(1 << 18, 1e3), (1 << 18) / 5e8);
  EXPECT_FALSE(k.to_json().contains("cache"));
  // Rows without the counters (the streaming rows, the CUDA binary) leave it unmeasured.
  KernelModel plain;
  load_kernel_bench(plain, cpu_bench(), "k.json");
  plain.llc_sharers = 2;
  EXPECT_EQ(plain.compress_cached.eps, 0.0);
  EXPECT_DOUBLE_EQ(plain.worker_compress_s(1 << 18, 1e3), (1 << 18) / 5e8);
  // Context values are numbers or numeric strings; anything else names its key.
  EXPECT_DOUBLE_EQ(bench_context_number({{"context", {{"x", 2.5}}}}, "x", "k.json"), 2.5);
  EXPECT_DOUBLE_EQ(bench_context_number({{"context", {{"x", "4e6"}}}}, "y", "k.json"), 0.0);
  const std::string msg = clbo::test::rejection_message([] {
    nlohmann::json b = cpu_bench_with_cache();
    b["context"]["llc_bytes_sysfs"] = "32M";
    KernelModel m;
    load_kernel_bench(m, b, "k.json");
  });
  EXPECT_TRUE(clbo::test::contains(msg, "context.llc_bytes_sysfs")) << msg;
  EXPECT_TRUE(clbo::test::contains(msg, "32M")) << msg;
}

TEST(KernelModel, CachedWhileTheSharersFitStreamingOnceTheyFillTheCacheLogLogBetween) {
  KernelModel k;
  load_kernel_bench(k, cpu_bench_with_cache(), "k.json");
  k.llc_sharers = 2;
  const size_t n = 1 << 18;
  const double cached = n / 2e9, streaming = n / 5e8;
  EXPECT_DOUBLE_EQ(k.worker_compress_s(n, 4e6), cached) << "2 x 4 MB within the measured 8 MB";
  EXPECT_DOUBLE_EQ(k.worker_compress_s(n, 16.8e6), streaming) << "2 x 16.8 MB fill 32 MiB";
  EXPECT_DOUBLE_EQ(k.worker_compress_s(n, 0), streaming) << "no working set given";
  // Halfway (log) between 8e6 and the cache's 33554432 bytes in total: halfway in log time.
  const double mid = std::sqrt(8e6 * 33554432.0) / 2;
  EXPECT_NEAR(k.worker_compress_s(n, mid), std::sqrt(cached * streaming), 1e-12);
  double last = 0;
  for (double ws = 1e6; ws < 3e7; ws *= 1.3) {
    const double t = k.worker_compress_s(n, ws);
    EXPECT_GE(t, last) << "never faster for a larger working set (ws " << ws << ")";
    last = t;
  }
  // More sharers: the same rank's buffers stop fitting sooner.
  k.llc_sharers = 8;
  EXPECT_DOUBLE_EQ(k.worker_compress_s(n, 4.2e6), streaming);
  // The server step interpolates its in-cache rates in p as the streaming ones.
  k.llc_sharers = 1;
  EXPECT_DOUBLE_EQ(k.server_s(size_t{8} << 20, 8, 1e6), (1 << 20) / 4e8);
  EXPECT_DOUBLE_EQ(k.unpack_s(n, 1e6), n / 8e9);
  EXPECT_EQ(k.to_json()["cache"]["sharers"], 1);
}

}  // namespace
// clbo's sparse allreduce computes around its ring what BM_compact and BM_scatter time (the
// mask comes drawn); SLAMB's step on a GPU draws the mask first (compaction_s).
TEST(KernelModel, TheSparseCallCompactsAndScattersAndOnlyTheGpuStepDrawsTheMask) {
  nlohmann::json b = cpu_bench();
  for (const auto& r :
       {cached_row("BM_compact/1048576/real_time", 3e9, 4.7e6),
        row("BM_compact/67108864/real_time", 2e9),
        cached_row("BM_scatter/1048576/real_time", 1.5e9, 4.7e6),
        row("BM_scatter/67108864/real_time", 1e9), row("BM_random_mask/67108864/real_time", 5e8)})
    b["benchmarks"].push_back(r);
  KernelModel k;
  load_kernel_bench(k, b, "k.json");
  EXPECT_DOUBLE_EQ(k.scatter_eps, 1e9);
  EXPECT_DOUBLE_EQ(k.scatter_cached.eps, 1.5e9);
  EXPECT_DOUBLE_EQ(k.compact_cached.eps, 3e9);
  const size_t n = size_t{1} << 22;
  EXPECT_DOUBLE_EQ(k.sparse_compact_s(n, n / 10), n / 2e9);
  EXPECT_DOUBLE_EQ(k.sparse_scatter_s(n), n / 1e9);
  EXPECT_DOUBLE_EQ(k.compaction_s(n, n / 10), n / 5e8 + n / 2e9 + n / 1e9)
      << "the GPU step: draw, compact, scatter";
  EXPECT_EQ(k.to_json()["measured"]["scatter_items_per_s"], 1e9);
  // With the cache model on, both take their in-cache rates while the ranks fit.
  k.llc_bytes = 33554432.0;
  k.llc_sharers = 2;
  EXPECT_DOUBLE_EQ(k.sparse_scatter_s(1 << 18, 1e6), (1 << 18) / 1.5e9);
  EXPECT_DOUBLE_EQ(k.sparse_compact_s(1 << 18, 1 << 15, 1e6), (1 << 18) / 3e9);
  // A file from before BM_scatter: the compaction's pass stands in for it.
  KernelModel old;
  b["benchmarks"].erase(b["benchmarks"].end() - 3, b["benchmarks"].end() - 1);
  load_kernel_bench(old, b, "k.json");
  EXPECT_EQ(old.scatter_eps, 0.0);
  EXPECT_DOUBLE_EQ(old.sparse_scatter_s(n), n / 2e9);
  // The roofline: the compaction's bytes count the scatter's, which adds nothing.
  KernelModel roof;
  roof.hbm_Bps = 1e10;
  EXPECT_EQ(roof.sparse_scatter_s(n), 0.0);
  EXPECT_DOUBLE_EQ(roof.sparse_compact_s(n, n / 10), roof.compaction_s(n, n / 10));
}

}  // namespace clbo::sim
