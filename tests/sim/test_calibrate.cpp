// `clbo calibrate` (calibration.hpp): it recovers the parameters a simulation of them
// produced; reads nccl-tests and `clbo bench collectives` output; a path works wherever a
// preset name does; bad input is an error naming file, field and value, with nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "clbo/core/error.hpp"
#include "clbo/sim/calibration.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/experiment.hpp"
#include "cli_harness.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;
using nlohmann::json;

namespace {

// A TCP cluster of 8 nodes × 4 GPUs with known intra-node rate, achievable fraction and
// software latency.
json known_cluster(double intra, double fraction, double latency_us) {
  json c = clbo::sim::test::small_cluster_json(8, 4);
  c["name"] = "known";
  c["intra"] = {{"type", "pcie"}, {"bandwidth_GBps", intra}, {"latency_us", 1.0}};
  c["nic"] = {{"count", 1}, {"rate_Gbps", 100}, {"latency_us", 1.0}};
  c["fabric"] = {
      {"type", "tcp"}, {"achievable_fraction", fraction}, {"software_latency_us", latency_us}};
  return c;
}

// What the simulator says an fp16 allreduce of `bytes` on p GPUs of `c` takes, in ms.
double simulated_ms(const json& c, int p, double bytes) {
  const ClusterSpec spec = parse_cluster(c, "test");
  KernelModel km;
  km.hbm_Bps = 0.9e12;
  const CommCall call{CollKind::kAllreduce, static_cast<size_t>(bytes / 2), DType::kF16, "grad"};
  return simulate_programs(spec, p, {calls_program({call}, spec, p, km, ExpandOptions{})})
             .at(0)
             .time_s *
         1e3;
}

json allreduce(int p, double bytes, double ms) {
  return {{"kind", "allreduce"}, {"gpus", p}, {"bytes", bytes}, {"dtype", "fp16"}, {"time_ms", ms}};
}

double fitted(const json& preset, const std::string& field) {
  for (const auto& p : preset["calibration"]["parameters"])
    if (p["field"] == field) return p["value"].get<double>();
  ADD_FAILURE() << field << " was not fitted";
  return 0;
}

}  // namespace

TEST(Calibrate, RecoversTheParametersASimulationOfThemProduced) {
  const json truth = known_cluster(20.0, 0.3, 100.0);
  json ms = json::array();
  for (int p : {4, 8, 16, 32})
    for (double bytes : {1e6, 64e6})
      ms.push_back(allreduce(p, bytes, simulated_ms(truth, p, bytes)));
  json base = known_cluster(8.0, 1.0, 10.0);  // far from the truth
  base["fabric"].erase("achievable_fraction");
  base["fabric"].erase("software_latency_us");
  const json input = {{"name", "recovered"}, {"cluster", base}, {"measurements", ms}};
  const CalibrationResult r = calibrate(input, "known.json");
  // The fewest parameters that explain the data are exactly the three that made it.
  EXPECT_EQ(
      r.preset["calibration"]["fitted_fields"],
      json({"intra.bandwidth_GBps", "fabric.achievable_fraction", "fabric.software_latency_us"}));
  EXPECT_NEAR(fitted(r.preset, "intra.bandwidth_GBps") / 20.0, 1, 0.02);
  EXPECT_NEAR(fitted(r.preset, "fabric.achievable_fraction") / 0.3, 1, 0.02);
  EXPECT_NEAR(fitted(r.preset, "fabric.software_latency_us") / 100.0, 1, 0.02);
  EXPECT_LT(r.worst_residual_pct, 0.5);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.preset["source"], "fitted");
  EXPECT_EQ(r.preset["calibration"]["residuals"].size(), ms.size());
  // The preset reads back as a cluster and reproduces its own residuals.
  const double again = simulated_ms(r.preset, 16, 64e6);
  for (const auto& row : r.preset["calibration"]["residuals"]) {
    if (row["gpus"] == 16 && row["setting"].get<std::string>().find("64 MB") != std::string::npos) {
      EXPECT_NEAR(row["simulated"].get<double>(), again, 1e-9 * again);
    }
  }
}

TEST(Calibrate, AFitListFitsExactlyThoseAndAPoorFitIsAWarning) {
  const json truth = known_cluster(20.0, 0.3, 100.0);
  json ms = json::array();
  for (int p : {8, 16, 32}) ms.push_back(allreduce(p, 1e6, simulated_ms(truth, p, 1e6)));
  // Rate only, on latency-bound messages: it cannot explain them.
  const json input = {{"name", "poor"},
                      {"cluster", known_cluster(20.0, 0.3, 5.0)},
                      {"fit", {"fabric.achievable_fraction"}},
                      {"measurements", ms}};
  const CalibrationResult r = calibrate(input, "poor.json");
  EXPECT_EQ(r.preset["calibration"]["fitted_fields"], json({"fabric.achievable_fraction"}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("measurements["), std::string::npos) << r.warnings[0];
  EXPECT_GT(r.worst_residual_pct, 15);
}

TEST(Calibrate, ReadsNcclTestsAndClboBenchOutput) {
  const json truth = known_cluster(20.0, 0.3, 100.0);
  const auto dir = std::filesystem::temp_directory_path() / "clbo_calibrate_files";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "ar.txt");
    f << "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 67108864 step: 8(factor)\n"
      << "#                                                              out-of-place          "
         "             in-place\n"
      << "#       size         count      type   redop    root     time   algbw   busbw #wrong    "
         " time   algbw   busbw #wrong\n"
      << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
         "   (us)  (GB/s)  (GB/s)\n";
    for (double b : {1048576.0, 67108864.0})
      f << "   " << static_cast<long>(b) << "   " << static_cast<long>(b / 2)
        << "   half   sum   -1   " << simulated_ms(truth, 16, b) * 1e3
        << "   1.0   1.0   0   1.0   1.0   1.0   0\n";
    f << "# Avg bus bandwidth    : 1.0\n";
  }
  json bench = {
      {"schema", "clbo.bench.collectives/1"}, {"config", {{"p", 8}}}, {"rows", json::array()}};
  for (double b : {1048576.0, 67108864.0})
    bench["rows"].push_back({{"op", "allreduce"},
                             {"size_bytes", b},
                             {"type", "half"},
                             {"time_us", simulated_ms(truth, 8, b) * 1e3}});
  bench["rows"].push_back({{"op", "compressed"}, {"size_bytes", 1.0}, {"time_us", 1.0}});
  std::ofstream(dir / "bench.json") << bench.dump();
  const json input = {{"name", "from-files"},
                      {"cluster", known_cluster(20.0, 0.5, 10.0)},
                      {"fit", {"fabric.achievable_fraction", "fabric.software_latency_us"}},
                      {"measurements",
                       {{{"kind", "nccl-tests"}, {"file", "ar.txt"}, {"gpus", 16}},
                        {{"kind", "clbo-bench-collectives"}, {"file", "bench.json"}}}}};
  // Files are found next to the calibration file.
  const CalibrationResult r = calibrate(input, (dir / "input.json").string());
  EXPECT_EQ(r.preset["calibration"]["residuals"].size(), 4u);
  EXPECT_NEAR(fitted(r.preset, "fabric.achievable_fraction") / 0.3, 1, 0.02);
  EXPECT_NEAR(fitted(r.preset, "fabric.software_latency_us") / 100.0, 1, 0.02);

  // A hostile benchmark file is an input error naming it and the field, never a wrapped
  // integer or a JSON type error.
  const auto rejects = [&](json doc, const std::string& field, const std::string& value) {
    std::ofstream(dir / "bench.json") << doc.dump();
    try {
      calibrate(input, (dir / "input.json").string());
      ADD_FAILURE() << "accepted " << doc.dump().substr(0, 200);
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(value), std::string::npos) << e.what();
    }
  };
  json huge_p = bench;
  huge_p["config"]["p"] = 4294967304.0;  // 2^32 + 8: 8 once wrapped into an int
  rejects(huge_p, "config.p", "4294967304");
  json schema = bench;
  schema["schema"] = 7;
  rejects(schema, "schema", "7");
  json rows = bench;
  rows["rows"] = {{"op", "allreduce"}};
  rejects(rows, "rows", "allreduce");
  json op = bench;
  op["rows"][0]["op"] = 3;  // not an allreduce row: skipped, the others still fit
  op["rows"][1]["type"] = 16;
  rejects(op, "rows[1].type", "16");
  std::filesystem::remove_all(dir);
}

TEST(Calibrate, BadInputNamesTheFieldAndTheValue) {
  const json base = known_cluster(20.0, 0.3, 100.0);
  auto expect_error = [&](json input, const std::string& field, const std::string& value) {
    try {
      calibrate(input, "in.json");
      ADD_FAILURE() << "accepted " << input.dump().substr(0, 200);
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "in.json") << e.what();
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(value), std::string::npos) << e.what();
    }
  };
  const json ok = {{"name", "x"}, {"cluster", base}, {"measurements", {allreduce(8, 1e6, 1.0)}}};
  json twice = ok;
  twice["measurements"].push_back(allreduce(8, 1e6, 1.5));  // same setting, another time
  expect_error(twice, "measurements[1]", "1.5");
  json unknown = ok;
  unknown["fit"] = {"fabric.achievable_fractoin"};
  expect_error(unknown, "fit[0]", "achievable_fractoin");
  json ib_field = ok;
  ib_field["fit"] = {"fabric.efficiency"};  // an InfiniBand parameter on a TCP cluster
  expect_error(ib_field, "fit[0]", "fabric.efficiency");
  json missing = ok;
  missing["cluster"] = "no/such/cluster.json";
  expect_error(missing, "cluster", "no/such/cluster.json");
  json kind = ok;
  kind["measurements"][0]["kind"] = "alltoall";
  expect_error(kind, "measurements[0].kind", "alltoall");
  json compressed = ok;
  compressed["measurements"] = {{{"kind", "step"},
                                 {"workload", "bert-base-seq128"},
                                 {"gpus", 8},
                                 {"micro_batch", 16},
                                 {"optimizer", {{"type", "OneBitAdam"}}},
                                 {"step_ms", 100.0}}};
  expect_error(compressed, "measurements[0].optimizer", "OneBitAdam");
  json too_big = ok;
  too_big["measurements"][0]["gpus"] = 64;  // the base has 8 × 4 GPUs
  expect_error(too_big, "measurements[0].gpus", "64");
  // A rate that no measurement sees cannot be fitted.
  json one_node = ok;
  one_node["measurements"] = json::array({allreduce(4, 1e6, 1.0)});
  one_node["fit"] = {"fabric.achievable_fraction"};
  expect_error(one_node, "fit", "fabric.achievable_fraction");
}

class CalibrateCli : public clbo::test::CliTest {};

TEST_F(CalibrateCli, APathWorksWhereverAPresetNameDoes) {
  // A cluster file: in an experiment's clusters and rows, and on the calibrate command line.
  write_json("my-cluster.json", known_cluster(20.0, 0.3, 100.0));
  json exp = clbo::sim::test::small_experiment(
      json::array({clbo::sim::test::opt("Adam", "Adam", json::object())}), 1);
  exp["simulate"]["clusters"] = {path("my-cluster.json")};
  exp["simulate"]["gpus"] = {8};
  write_json("exp.json", exp);
  auto r = run({"simulate", path("exp.json"), "-o", path("res.json"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(clbo::test::slurp(path("res.json")))["runs"][0]["cluster"],
            "known");

  const json input = {{"name", "cli-fit"},
                      {"cluster", "paper-eth-v100"},
                      {"fit", {"fabric.software_latency_us"}},
                      {"measurements", {allreduce(8, 1e6, 20.0), allreduce(16, 1e6, 40.0)}}};
  write_json("cal.json", input);
  r = run({"calibrate", path("cal.json"), "-o", path("fitted.json"), "--cluster",
           path("my-cluster.json"), "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json fit = nlohmann::json::parse(clbo::test::slurp(path("fitted.json")));
  EXPECT_EQ(fit["gpus_per_node"], 4);  // the file's cluster, not paper-eth-v100's
  EXPECT_EQ(fit["name"], "cli-fit");
  // And the fitted preset is a cluster path an experiment can use.
  exp["simulate"]["clusters"] = {path("fitted.json")};
  write_json("exp2.json", exp);
  r = run({"simulate", path("exp2.json"), "-o", path("res2.json"), "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CalibrateCli, ErrorsExitWithTwoAndWriteNothing) {
  write_json("not-a-cluster.json", {{"name", "x"}, {"simulate", json::object()}});
  const json input = {{"name", "x"},
                      {"cluster", path("not-a-cluster.json")},
                      {"measurements", {allreduce(8, 1e6, 1.0)}}};
  write_json("cal.json", input);
  auto r = run({"calibrate", path("cal.json"), "-o", path("fitted.json"), "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cal.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not a cluster"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("fitted.json")));
  // A missing cluster file named on the command line.
  r = run({"calibrate", path("cal.json"), "-o", path("fitted.json"), "--cluster",
           path("missing.json"), "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--cluster"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("fitted.json")));
}
