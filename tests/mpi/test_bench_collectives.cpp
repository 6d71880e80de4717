// `clbo bench collectives` on the local backend: flag validation with clear errors, the
// checker's reference, exact wire bytes, and results that are byte-identical between runs
// except for the timing fields.
#include <gtest/gtest.h>

#include <cmath>
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

TEST(BenchCollectives, ParsesSizesAsNcclTestsDoes) {
  EXPECT_EQ(parse_size("8", "-b"), 8u);
  EXPECT_EQ(parse_size("64K", "-b"), 64u << 10);
  EXPECT_EQ(parse_size("256M", "-e"), 256ull << 20);
  EXPECT_EQ(parse_size("2G", "-e"), 2ull << 30);
  EXPECT_EQ(parse_size("1.5M", "-e"), 3ull << 19);  // nccl-tests reads a double
  EXPECT_EQ(parse_size("32MB", "-e"), 32ull << 20);
  EXPECT_EQ(parse_size("4 k", "-e"), 4096u);
  for (const char* bad : {"", "M", "12Q", "-8", "1MiB", "x1"})
    EXPECT_THROW(parse_size(bad, "-b"), InputError) << bad;
}

TEST(BenchCollectives, DefaultsAreNcclTestsOwn) {
  const CollectiveBenchConfig c;
  EXPECT_EQ(c.min_bytes, "32M");
  EXPECT_EQ(c.max_bytes, "32M");
  EXPECT_EQ(c.step_bytes, "1M");
  EXPECT_EQ(c.step_factor, 1);
  EXPECT_EQ(c.iters, 20);
  EXPECT_EQ(c.warmup, 1);
  EXPECT_EQ(c.agg_iters, 1);
  EXPECT_EQ(c.run_cycles, 1);
  EXPECT_EQ(c.check, 1);
  EXPECT_EQ(c.average, 1);
  EXPECT_EQ(c.blocking, 0);
  EXPECT_EQ(c.nthreads, 1);
  EXPECT_EQ(c.ngpus, 1);
  EXPECT_EQ(c.op, "sum");
  EXPECT_EQ(c.datatype, "float");
  EXPECT_EQ(c.timeout_s, 0.0);
  EXPECT_TRUE(c.output_file.empty());  // nccl-tests writes JSON only with -J
}

TEST(BenchCollectives, BadNamesAndSizesAreClearErrors) {
  CollectiveBenchConfig c;
  c.nthreads = 4;
  c.min_bytes = "8";
  c.max_bytes = "1K";
  auto with = [&](auto change) {
    CollectiveBenchConfig d = c;
    change(d);
    return error_of(d);
  };
  EXPECT_EQ(error_of(c), "");
  EXPECT_NE(with([](auto& d) { d.collectives = {"allreduec"}; }).find("did you mean 'allreduce'"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.backend = "mpii"; }).find("did you mean 'mpi'"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.datatype = "bf16"; }).find("-d/--datatype"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.min_bytes = "1G", d.max_bytes = "1M"; }).find("larger than -e"),
            std::string::npos);
  EXPECT_NE(
      with([](auto& d) { d.collectives = {"alltoall"}; }).find("too small for alltoall at p = 4"),
      std::string::npos);
  EXPECT_NE(with([](auto& d) {
              d.collectives = {"compressed"}, d.datatype = "half";
            }).find("compressed on the local backend runs at float"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.datatype = "uint8"; }).find("runs at float, half"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.algo = "ring"; }).find("only the mpi backend"), std::string::npos);
  EXPECT_NE(with([](auto& d) {
              d.backend = "mpi", d.algo = "gather";
            }).find("which --collective does not run"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.step_factor = 0; }).find("-f"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.step_bytes = "0"; }).find("-i"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.step_bytes = "1", d.max_bytes = "1G"; }).find("more than"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.iters = 0; }).find("-n"), std::string::npos);
  for (double bad : {-0.5, 3601.0, std::nan("")})
    EXPECT_NE(with([&](auto& d) { d.min_time_s = bad; }).find("'--min-time'"), std::string::npos)
        << bad;
  EXPECT_NE(with([](auto& d) { d.sparse_k = 1.5; }).find("--sparse-k"), std::string::npos);
}

// nccl-tests' flags mean what they mean there; one that cannot apply names that meaning.
TEST(BenchCollectives, NcclTestsFlagsThatCannotApplyNameTheirMeaning) {
  CollectiveBenchConfig c;
  c.max_bytes = c.min_bytes = "1K";
  auto with = [&](auto change) {
    CollectiveBenchConfig d = c;
    change(d);
    return error_of(d);
  };
  // -o is the reduction op: a file name there says where the JSON goes instead.
  EXPECT_NE(with([](auto& d) { d.op = "out.json"; }).find("-J/--output_file"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.op = "pingpong"; }).find("--collective pingpong"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.op = "prod"; }).find("reduce with sum"), std::string::npos);
  EXPECT_EQ(with([](auto& d) { d.op = "all"; }), "");
  EXPECT_EQ(with([](auto& d) { d.datatype = "all"; }), "");
  EXPECT_NE(with([](auto& d) { d.output_file = "out.csv"; }).find("only .json"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.root = 1; }).find("rooted collectives"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.ngpus = 2; }).find("GPUs per thread"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.backend = "mpi", d.nthreads = 2; }).find("threads per process"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.timeout_s = 5; }).find("timeout of a stuck collective"),
            std::string::npos);
  EXPECT_NE(with([](auto& d) { d.average = 4; }).find("0 rank 0, 1 mean"), std::string::npos);
  EXPECT_NE(with([](auto& d) { d.blocking = 4; }).find("blocking mode"), std::string::npos);
  c.fixed = fixed_flags();
  EXPECT_EQ(error_of(c), "");
  for (auto& f : c.fixed) {
    CollectiveBenchConfig d = c;
    for (auto& g : d.fixed)
      if (g.name == f.name) g.value = f.fixed;
    EXPECT_EQ(error_of(d), "") << f.name << " at its default is accepted";
    for (auto& g : d.fixed)
      if (g.name == f.name) g.value = std::string("7");  // a move: GCC 12 warns on assign("7")
    const std::string e = error_of(d);
    EXPECT_NE(e.find(f.name), std::string::npos) << e;
    EXPECT_NE(e.find("nccl-tests'"), std::string::npos) << e;
  }
}

// -m is nccl-tests' group aggregation: one ncclGroupStart/End per timed iteration.
TEST(BenchCollectives, AggregationIsAnNcclGroupAndRejectedWhereNoneExists) {
  CollectiveBenchConfig c;
  c.max_bytes = c.min_bytes = "1K";
  c.agg_iters = 4;
  std::string e = error_of(c);  // local backend
  EXPECT_NE(e.find("-m"), std::string::npos) << e;
  EXPECT_NE(e.find("local backend has no group launch"), std::string::npos) << e;
  c.agg_iters = 1;
  EXPECT_EQ(error_of(c), "");
#ifdef CLBO_WITH_NCCL_BACKEND
  c.backend = "nccl";
  c.agg_iters = 4;
  EXPECT_EQ(error_of(c), "") << "allreduce groups on nccl";
  c.collectives = {"allreduce,compressed"};
  e = error_of(c);
  EXPECT_NE(e.find("compressed's kernels between its NCCL calls"), std::string::npos) << e;
  c.collectives = {"allreduce"};
  c.blocking = 2;
  e = error_of(c);
  EXPECT_NE(e.find("with -z 2"), std::string::npos) << e;
  c.blocking = 3;
  EXPECT_EQ(error_of(c), "");
#endif
}

TEST(BenchCollectives, EveryCollectiveNameRoundTrips) {
  const auto& names = collective_names();
  ASSERT_EQ(names.size(), kOpNames.entries.size());
  for (const auto& e : kOpNames.entries) {
    EXPECT_STREQ(op_name(e.value), e.name);
    EXPECT_EQ(kOpNames.find(e.name), e.value);
  }
}

TEST(BenchCollectives, ShapesFollowNcclTests) {
  // allreduce: count = size / element; alltoall and allgather: per-rank count rounded down
  // to 16 bytes, size = p x that.
  EXPECT_EQ(shape_for(Op::kAllreduce, 1000, 4, 3).call_count, 250u);
  const Shape a = shape_for(Op::kAlltoall, 1000, 4, 3);  // 250 / 3 = 83 -> 80
  EXPECT_EQ(a.call_count, 80u);
  EXPECT_EQ(a.buffer_count, 240u);
  EXPECT_EQ(a.bytes, 960u);
  EXPECT_EQ(shape_for(Op::kAllgather, 40, 8, 2).call_count, 2u);
  EXPECT_EQ(shape_for(Op::kAllgather, 8, 4, 2).call_count, 0u);  // too small
}

TEST(BenchCollectives, NcclWithoutAGpuIsAnErrorNotACrash) {
#ifdef CLBO_WITH_NCCL_BACKEND
  if (cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  CollectiveBenchConfig c;
  c.backend = "nccl";
  c.min_bytes = c.max_bytes = "1K";
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
  std::ifstream in(c.output_file);
  return nlohmann::json::parse(in);
}

TEST(BenchCollectives, EveryOpChecksCleanCountsPlanBytesAndRepeatsExactly) {
  const fs::path dir =
      fs::temp_directory_path() / ("clbo_bench_test_" + std::to_string(::getpid()));
  CollectiveBenchConfig c;
  c.collectives = {"allreduce", "compressed", "sparse", "alltoall", "allgather"};
  c.nthreads = 3;
  c.min_bytes = "48";
  c.max_bytes = "48K";
  c.step_factor = 8;
  c.iters = 2;
  c.warmup = 1;
  c.check = 2;
  c.output_file = (dir / "a.json").string();
  auto a = run_to_json(c);
  c.output_file = (dir / "b.json").string();
  auto b = run_to_json(c);
  ASSERT_EQ(a["rows"].size(), 5u * 4u);  // 48, 384, 3072, 24576 bytes
  EXPECT_EQ(a["out_of_bounds"]["count"], 0);
  for (const auto& row : a["rows"]) {
    for (const char* half : {"out_of_place", "in_place"}) {
      EXPECT_EQ(row[half]["wrong"], 0) << half << " " << row.dump();
      EXPECT_GT(row[half]["time_us"].get<double>(), 0.0) << half << " " << row.dump();
    }
    EXPECT_EQ(row["wrong"], 0) << row.dump();
    // The compression kernels' time per call, part of the call's: only the ops that have them.
    const bool kernels = row["op"] == "compressed" || row["op"] == "sparse";
    for (const char* half : {"out_of_place", "in_place"}) {
      ASSERT_EQ(row[half].contains("kernel_us"), kernels) << half << " " << row.dump();
      if (!kernels) continue;
      const double k = row[half]["kernel_us"], t = row[half]["time_us"];
      EXPECT_GE(k, 0.0) << row.dump();
      EXPECT_LE(k, t) << row.dump();
      if (row["size_bytes"] == 24576) {
        EXPECT_GT(k, 0.0) << row.dump();  // braced: EXPECT_* expands to an if/else
      }
    }
    const size_t count = row["count"];
    if (row["op"] == "compressed") {
      EXPECT_EQ(row["wire_bytes"], onebit_bytes_per_rank(count, 3)) << row.dump();
    }
    if (row["op"] == "allreduce") {
      uint64_t most = 0;
      for (int r = 0; r < 3; ++r) most = std::max(most, ring_bytes_per_rank(count, 3, r, 4));
      EXPECT_EQ(row["wire_bytes"], most) << row.dump();
    }
    if (row["op"] == "alltoall") {  // count is per peer: 2 peers
      EXPECT_EQ(row["wire_bytes"], 2 * count * 4) << row.dump();
      EXPECT_EQ(row["size_bytes"], 3 * count * 4) << row.dump();
    }
  }
  // Same config and seed: identical apart from the timing fields.
  for (auto* j : {&a, &b}) {
    for (auto& row : (*j)["rows"])
      for (auto* part : {&row, &row["out_of_place"], &row["in_place"]})
        for (const char* k : {"time_us", "kernel_us", "algbw_GBps", "busbw_GBps", "eq_busbw_GBps"})
          part->erase(k);
    // nccl-tests' records of the same rows: their times and bandwidths, and the clock.
    for (auto& rec : (*j)["results"])
      for (const char* half : {"out_of_place", "in_place"})
        for (const char* k : {"time", "alg_bw", "bus_bw"}) rec[half].erase(k);
    for (const char* k : {"average_bus_bandwidth", "start_time", "end_time"}) j->erase(k);
  }
  a.erase("comparisons"), b.erase("comparisons");
  EXPECT_EQ(a.dump(), b.dump());
  fs::remove_all(dir);
}

// Three local ranks, one size, two timed calls and one checked, only the native half.
CollectiveBenchConfig native_half_config(std::vector<std::string> collectives,
                                         const std::string& size, const fs::path& out) {
  CollectiveBenchConfig c;
  c.collectives = std::move(collectives);
  c.nthreads = 3;
  c.min_bytes = c.max_bytes = size;
  c.iters = 2;
  c.check = 1;
  c.halves = "native";
  c.output_file = out.string();
  return c;
}

// --halves native times only the half without a staging copy (the row's own fields, which
// validate reads); the other half is null in the JSON and N/A in the table, and the footer
// averages over the halves that ran. The default runs both, as nccl-tests does.
TEST(BenchCollectives, HalvesNativeTimesOnlyTheUnstagedHalf) {
  const fs::path dir = fs::temp_directory_path() / ("clbo_bench_hn_" + std::to_string(::getpid()));
  CollectiveBenchConfig c =
      native_half_config({"allreduce", "allgather", "compressed"}, "3K", dir / "n.json");
  const auto j = run_to_json(c);
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["config"]["halves"], "native");
  double bw = 0;
  for (const auto& row : j["rows"]) {
    const std::string ran = row["half"], other = ran == "in_place" ? "out_of_place" : "in_place";
    EXPECT_EQ(ran == "in_place",
              native_in_place(*kOpNames.find(row["op"].get<std::string>()), "local"))
        << row.dump();
    EXPECT_TRUE(row[other].is_null()) << row.dump();
    EXPECT_EQ(row[ran]["wrong"], 0) << row.dump();
    EXPECT_GT(row[ran]["time_us"].get<double>(), 0.0) << row.dump();
    EXPECT_EQ(row["time_us"], row[ran]["time_us"]) << row.dump();
    bw += row["busbw_GBps"].get<double>();
  }
  EXPECT_DOUBLE_EQ(j["average_bus_bandwidth"]["bandwidth"].get<double>(), bw / 3);
  c.halves = "both";
  c.output_file = (dir / "b.json").string();
  for (const auto& row : run_to_json(c)["rows"])
    for (const char* half : {"out_of_place", "in_place"})
      EXPECT_GT(row[half]["time_us"].get<double>(), 0.0) << half << " " << row.dump();
  c.halves = "one";
  EXPECT_NE(error_of(c).find("'--halves' = one"), std::string::npos) << error_of(c);
  fs::remove_all(dir);
}

// --min-time gives a size whose -n iterations would take less than it more of them (every
// rank the same count, or the collectives would not pair up), records the count per half and
// as nccl-tests' actual_iterations, and never fewer than -n; without it every half runs -n.
TEST(BenchCollectives, MinTimeTimesCheapSizesLongerAndRecordsTheCount) {
  const fs::path dir = fs::temp_directory_path() / ("clbo_bench_mt_" + std::to_string(::getpid()));
  CollectiveBenchConfig c = native_half_config({"allreduce", "compressed"}, "48", dir / "n.json");
  for (const auto& row : run_to_json(c)["rows"]) EXPECT_EQ(row["iterations"], 2) << row.dump();
  // A 48-byte call between three threads takes microseconds: 20 ms of them is many more than
  // two.
  c.min_time_s = 0.02;
  c.output_file = (dir / "m.json").string();
  const auto j = run_to_json(c);
  EXPECT_EQ(j["config"]["min_time_s"], 0.02);
  ASSERT_EQ(j["rows"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& row = j["rows"][i];
    EXPECT_GT(row["iterations"].get<int64_t>(), 2) << row.dump();
    EXPECT_EQ(row["iterations"], row[row["half"].get<std::string>()]["iterations"]);
    EXPECT_EQ(j["results"][i]["actual_iterations"], row["iterations"]);
    EXPECT_EQ(row["wrong"], 0) << row.dump();
  }
  fs::remove_all(dir);
}

// pingpong: every even rank's bytes go to the next rank and back unchanged, all pairs at once
// (with 3 ranks the last waits); time is half the round trip, wire bytes one message; it
// needs two ranks and is not offered on nccl.
TEST(BenchCollectives, PingpongEchoesExactlyAndNeedsTwoRanks) {
  const fs::path dir = fs::temp_directory_path() / ("clbo_bench_pp_" + std::to_string(::getpid()));
  CollectiveBenchConfig c;
  c.collectives = {"pingpong"};
  c.nthreads = 3;
  c.datatype = "uint8";
  c.min_bytes = "8";
  c.max_bytes = "64K";
  c.step_factor = 64;
  c.iters = 3;
  c.warmup = 1;
  c.output_file = (dir / "pp.json").string();
  const auto j = run_to_json(c);
  ASSERT_EQ(j["rows"].size(), 3u);  // 8, 512, 32768 bytes
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["out_of_place"]["wrong"], 0) << row.dump();
    EXPECT_EQ(row["in_place"]["wrong"], 0) << row.dump();
    EXPECT_EQ(row["wire_bytes"], row["size_bytes"]) << row.dump();
    EXPECT_GT(row["time_us"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(row["busbw_GBps"].get<double>(), row["algbw_GBps"].get<double>());
  }
  c.nthreads = 4;  // two pairs, each checked
  for (const auto& row : run_to_json(c)["rows"]) {
    EXPECT_EQ(row["out_of_place"]["wrong"], 0) << row.dump();
    EXPECT_EQ(row["in_place"]["wrong"], 0) << row.dump();
  }
  c.nthreads = 1;
  EXPECT_THROW(run_collective_bench(c), InputError);
  c.nthreads = 2;
  c.backend = "nccl";
  EXPECT_NE(error_of(c).find("pingpong runs on the local and mpi backends"), std::string::npos)
      << error_of(c);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace clbo::bench
