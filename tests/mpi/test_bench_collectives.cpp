// `clbo bench collectives` on the local backend: flag validation with clear errors, the
// checker's reference, exact wire bytes, and results that are byte-identical between runs
// except for the timing fields.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_world.hpp"
#include "clbo/collectives/algorithms.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/core/error.hpp"
#include "clbo/plan/plan.hpp"
#include "collective_bench.hpp"

#ifdef CLBO_WITH_NCCL_BACKEND
#include "clbo/cuda/runtime.hpp"
#endif

namespace clbo::bench {
namespace {

namespace fs = std::filesystem;

// The InputError's message for a config with one field changed.
std::string error_of(CollectiveBenchConfig c) {
  try {
    validate(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(BenchCollectives, ParsesNcclTestsSizes) {
  EXPECT_EQ(parse_size("8", "-b"), 8u);
  EXPECT_EQ(parse_size("64K", "-b"), 64u << 10);
  EXPECT_EQ(parse_size("256M", "-e"), 256ull << 20);
  EXPECT_EQ(parse_size("2G", "-e"), 2ull << 30);
  for (const char* bad : {"", "M", "12Q", "-8", "1.5M"})
    EXPECT_THROW(parse_size(bad, "-b"), InputError) << bad;
}

TEST(BenchCollectives, BadNamesAndSizesAreClearErrors) {
  CollectiveBenchConfig c;
  auto with = [&](auto change) {
    CollectiveBenchConfig d = c;
    change(d);
    return error_of(d);
  };
  EXPECT_EQ(error_of(c), "");
  EXPECT_NE(with([](auto& d) { d.ops = {"allreduec"}; }).find("did you mean 'allreduce'"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.backend = "mpii"; }).find("did you mean 'mpi'"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.dtype = "bf16"; }).find("--dtype"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.min_bytes = "6"; }).find("multiple of the float element size"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.min_bytes = "1G", d.max_bytes = "1M"; }).find("larger than -e"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.ops = {"alltoall"}; }).find("too small for alltoall at p = 4"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.ops = {"compressed"}, d.dtype = "half"; }).find("float input"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.dtype = "uint8"; }).find("sums values"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.algo = "ring"; }).find("only the mpi backend"), std::string::npos);
  EXPECT_NE(
      with([](auto& d) { d.backend = "mpi", d.algo = "gather"; }).find("which --op does not run"),
      std::string::npos);
  EXPECT_NE(with([](auto& d) { d.step_factor = 1; }).find("-f"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.iters = 0; }).find("-n"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.sparse_k = 1.5; }).find("--sparse-k"), std::string::npos);
}

TEST(BenchCollectives, NcclWithoutAGpuIsAnErrorNotACrash) {
#ifdef CLBO_WITH_NCCL_BACKEND
  if (cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  CollectiveBenchConfig c;
  c.backend = "nccl";
  c.max_bytes = "1K";
  try {
    run_collective_bench(c);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
#else
  CollectiveBenchConfig c;
  c.backend = "nccl";
  EXPECT_NE(error_of(c).find("built without NCCL"), std::string::npos);
#endif
}

// The checker is only as good as its reference: the sequential scalar-kernel world must
// reproduce the threaded backend with the optimized kernels bit for bit.
TEST(BenchCollectives, CompressedReferenceMatchesTheLocalBackend) {
  for (int p : {1, 3, 4}) {
    const size_t n = 10007;
    const auto& want = reference_compressed(p, n, 9);
    std::mutex mu;
    run_local(p, [&](Communicator& c) {
      std::vector<float> x(n);
      fill_uniform(x.data(), n, 9, c.rank());
      OnebitState st;
      compressed_allreduce(c, st, x.data(), n);
      std::lock_guard lock(mu);
      EXPECT_EQ(std::memcmp(x.data(), want.data(), n * 4), 0) << "p=" << p << " rank " << c.rank();
    });
  }
}

nlohmann::json run_to_json(const CollectiveBenchConfig& c) {
  EXPECT_EQ(run_collective_bench(c), 0);
  std::ifstream in(c.out);
  return nlohmann::json::parse(in);
}

TEST(BenchCollectives, EveryOpChecksCleanCountsPlanBytesAndRepeatsExactly) {
  const fs::path dir =
      fs::temp_directory_path() / ("clbo_bench_test_" + std::to_string(::getpid()));
  CollectiveBenchConfig c;
  c.ops = {"allreduce", "compressed", "sparse", "alltoall", "allgather"};
  c.ranks = 3;
  c.min_bytes = "12";
  c.max_bytes = "48K";
  c.step_factor = 8;
  c.iters = 2;
  c.warmup = 1;
  c.out = (dir / "a.json").string();
  auto a = run_to_json(c);
  c.out = (dir / "b.json").string();
  auto b = run_to_json(c);
  ASSERT_EQ(a["rows"].size(), 5u * 5u);  // 12, 96, 768, 6144, 49152 bytes
  for (const auto& row : a["rows"]) {
    EXPECT_EQ(row["wrong"], 0) << row.dump();
    const size_t count = row["count"];
    if (row["op"] == "compressed") {
      EXPECT_EQ(row["wire_bytes"], onebit_bytes_per_rank(count, 3)) << row.dump();
    }
    if (row["op"] == "allreduce") {
      uint64_t most = 0;
      for (int r = 0; r < 3; ++r) most = std::max(most, ring_bytes_per_rank(count, 3, r, 4));
      EXPECT_EQ(row["wire_bytes"], most) << row.dump();
    }
    if (row["op"] == "alltoall") {
      EXPECT_EQ(row["wire_bytes"], 2 * count * 4 / 3) << row.dump();
    }
  }
  // Same config and seed: identical apart from the timing fields.
  for (auto* j : {&a, &b})
    for (auto& row : (*j)["rows"])
      for (const char* k : {"time_us", "algbw_GBps", "busbw_GBps", "eq_busbw_GBps"}) row.erase(k);
  a.erase("comparisons"), b.erase("comparisons");
  EXPECT_EQ(a.dump(), b.dump());
  fs::remove_all(dir);
}

// pingpong: rank 0's bytes go to rank 1 and back unchanged; time is half the round trip,
// wire bytes one message; it needs two ranks and is not offered on nccl.
TEST(BenchCollectives, PingpongEchoesExactlyAndNeedsTwoRanks) {
  const fs::path dir = fs::temp_directory_path() / ("clbo_bench_pp_" + std::to_string(::getpid()));
  CollectiveBenchConfig c;
  c.ops = {"pingpong"};
  c.ranks = 3;
  c.dtype = "uint8";
  c.min_bytes = "8";
  c.max_bytes = "64K";
  c.step_factor = 64;
  c.iters = 3;
  c.warmup = 1;
  c.out = (dir / "pp.json").string();
  const auto j = run_to_json(c);
  ASSERT_EQ(j["rows"].size(), 3u);  // 8, 512, 32768 bytes
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["wrong"], 0) << row.dump();
    EXPECT_EQ(row["wire_bytes"], row["size_bytes"]) << row.dump();
    EXPECT_GT(row["time_us"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(row["busbw_GBps"].get<double>(), row["algbw_GBps"].get<double>());
  }
  c.ranks = 1;
  EXPECT_THROW(run_collective_bench(c), InputError);
  c.ranks = 2;
  c.backend = "nccl";
  EXPECT_NE(error_of(c).find("pingpong runs on the local and mpi backends"), std::string::npos)
      << error_of(c);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace clbo::bench
