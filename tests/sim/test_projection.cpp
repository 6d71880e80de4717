// Training projection: the headline volume ratios come out of the simulated byte counts,
// step kinds are counted from the optimizers' own schedules, overlap hides communication,
// results are deterministic, and bad experiments are rejected naming file, field and value.
#include <gtest/gtest.h>
#include <algorithm>

#include <set>

#include "clbo/core/error.hpp"
#include "clbo/core/result_files.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/sim/experiment.hpp"
#include "clbo/sim/projection.hpp"
#include "clbo/sim/results_json.hpp"
#include "clbo/sim/workload.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;
using nlohmann::json;
using test::opt;
using test::run_of;

namespace {

json spec(json optimizers, int64_t steps, json extra = json::object()) {
  return test::small_experiment(std::move(optimizers), steps, 4, 4, std::move(extra));
}

}  // namespace

TEST(Projection, HeadlineVolumeRatiosComeFromSimulatedBytes) {
  const json results = simulate_experiment(
      spec({opt("Adam", "Adam", json::object()),
            opt("1-bit Adam", "OneBitAdam", {{"freeze_step", 150}}, "Adam"),
            opt("LAMB", "Lamb", json::object()),
            opt("1-bit LAMB", "OneBitLamb", {{"freeze_step", 165}}, "LAMB"),
            opt("SLAMB", "Slamb", {{"compress_ratio", 0.1}, {"local_steps", 100}}, "LAMB")},
           1000),
      "test.json");
  auto volume = [&](const std::string& l) {
    return run_of(results, l)["simulated"]["volume_reduction"].get<double>();
  };
  // 1-bit Adam at w = 0.15: R = 1/(w + (1−w)/16) = 4.92 (docs/reference/published.md).
  EXPECT_NEAR(volume("1-bit Adam"), 1 / (0.15 + 0.85 / 16), 0.01 * 4.92);
  // 1-bit LAMB at w = 0.165: about 4.6.
  EXPECT_NEAR(volume("1-bit LAMB"), 4.6, 0.02 * 4.6);
  // SLAMB at k = 0.1, H = 100: about half of 1-bit LAMB's data.
  const double slamb = run_of(results, "SLAMB")["simulated"]["total_bytes_per_gpu"].get<double>();
  const double onebit =
      run_of(results, "1-bit LAMB")["simulated"]["total_bytes_per_gpu"].get<double>();
  EXPECT_GT(slamb / onebit, 0.4);
  EXPECT_LT(slamb / onebit, 0.65);
  // The counts are weighted step kinds, each simulated once.
  const json& ob = run_of(results, "1-bit Adam");
  ASSERT_EQ(ob["step_kinds"].size(), 2u);
  EXPECT_EQ(ob["step_kinds"][0]["phase"], "warmup");
  EXPECT_EQ(ob["step_kinds"][0]["count"], 150);
  EXPECT_EQ(ob["step_kinds"][1]["phase"], "compression");
  EXPECT_EQ(ob["step_kinds"][1]["count"], 850);
  EXPECT_EQ(ob["step_kinds"][1]["simulated"]["library_ops"], 4);  // a2a + 3 allgathers
  EXPECT_GT(ob["step_kinds"][1]["simulated"]["compression_ms"].get<double>(), 0);
}

TEST(Projection, ZeroOneAdamStepKindsFollowItsSchedule) {
  const OptimizerConfig c = parse_optimizer_config(json{{"type", "ZeroOneAdam"},
                                                        {"params",
                                                         {{"var_freeze_step", 100},
                                                          {"var_update_scaler", 4},
                                                          {"local_step_clipper", 8},
                                                          {"local_step_scaler", 50}}}},
                                                   "t");
  const ParamLayout l = ParamLayout::from_sizes({1000, 24, 3000});
  const auto kinds = step_kinds(c, l, 8, 400, DType::kF16);
  int64_t total = 0;
  std::set<std::string> phases;
  for (const auto& k : kinds) {
    total += k.count;
    phases.insert(to_string(k.schedule.phase));
  }
  EXPECT_EQ(total, 400);
  EXPECT_EQ(phases,
            (std::set<std::string>{"variance_step", "compression", "local_step", "sync_step"}));
}

TEST(Projection, SlambHasPlainAndSyncSteps) {
  const OptimizerConfig c = parse_optimizer_config(
      json{{"type", "Slamb"}, {"params", {{"compress_ratio", 0.1}, {"local_steps", 100}}}}, "t");
  const Workload w = resolve_workload("bert-base-seq128", "t", "w");
  const auto kinds = step_kinds(c, w.layout, 8, 1000, DType::kF16);
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].schedule.phase, Phase::kSyncStep);  // step 1: (t−1) mod H == 0
  EXPECT_EQ(kinds[0].count, 10);
  EXPECT_EQ(kinds[1].count, 990);
  EXPECT_EQ(kinds[1].schedule.calls[0].kind, CollKind::kSparseAllreduce);
}

TEST(Projection, OverlapHidesTheBucketedGradientAllreduce) {
  const json adam = json::array({opt("Adam", "Adam", json::object())});
  const json plain = simulate_experiment(spec(adam, 1), "t.json");
  const json over =
      simulate_experiment(spec(adam, 1, {{"overlap_backward", true}, {"bucket_mb", 25}}), "t.json");
  const json& a = plain["runs"][0]["step_kinds"][0]["simulated"];
  const json& b = over["runs"][0]["step_kinds"][0]["simulated"];
  EXPECT_LT(b["time_ms"].get<double>(), a["time_ms"].get<double>());
  EXPECT_LT(b["comm_ms"].get<double>(), a["comm_ms"].get<double>());
  EXPECT_GT(b["library_ops"].get<int>(), 1);  // buckets
  EXPECT_DOUBLE_EQ(a["bytes_per_gpu"].get<double>(), b["bytes_per_gpu"].get<double>());

  // The buckets overlap one another: the busy time is their union, never more than the
  // span from the first start to the last end, and less than the sum of the spans.
  double first = 1e300, last = 0, sum = 0;
  for (const auto& seg : b["segments"]) {
    const double s0 = seg["start_ms"].get<double>(), s1 = seg["end_ms"].get<double>();
    first = std::min(first, s0);
    last = std::max(last, s1);
    sum += s1 - s0;
  }
  const double busy = b["comm_total_ms"].get<double>();
  EXPECT_LE(busy, last - first + 1e-9);
  EXPECT_LE(busy, sum + 1e-9);
  EXPECT_GT(busy, 0.0);
}

TEST(Projection, ResultsAreDeterministicExceptTiming) {
  const json s = spec({opt("Adam", "Adam", json::object()),
                       opt("0/1 Adam", "ZeroOneAdam", {{"var_freeze_step", 50}}, "Adam")},
                      200);
  const json a = simulate_experiment(s, "t.json"), b = simulate_experiment(s, "t.json");
  EXPECT_EQ(without_timing(a).dump(), without_timing(b).dump());
  EXPECT_TRUE(a.contains("environment"));
  EXPECT_EQ(a["config"], s);
  EXPECT_FALSE(without_timing(a)["runs"][0].contains("timing"));
}

TEST(Projection, MpiBackendAndScalingEfficiency) {
  const json r =
      simulate_experiment(spec(json::array({opt("1-bit Adam", "OneBitAdam", {{"freeze_step", 1}})}),
                               2, {{"backend", "mpi"}}),
                          "t.json");
  const json& k = r["runs"][0]["step_kinds"][1]["simulated"];
  EXPECT_GT(k["staging_bytes_per_gpu"].get<double>(), 0);
  const double eff = r["runs"][0]["simulated"]["scaling_efficiency"].get<double>();
  EXPECT_GT(eff, 0);
  EXPECT_LE(eff, 1);
}

TEST(Projection, BadExperimentsNameFileFieldAndValue) {
  auto expect_input = [](const json& s, const std::string& field, const std::string& value) {
    try {
      simulate_experiment(s, "bad.json");
      ADD_FAILURE() << "expected an InputError for " << field;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "bad.json") << e.what();
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_EQ(e.value(), value) << e.what();
    }
  };
  const json adam = json::array({opt("Adam", "Adam", json::object())});
  json s = spec(adam, 1);
  s["simulate"].erase("grad_acc");
  s["simulate"]["batch_size"] = 100;  // 16 GPUs × 16 samples does not divide 100
  expect_input(s, "simulate.batch_size", "100");
  s = spec(adam, 1);
  s["simulate"]["gpus"] = {16, 17};  // 17 GPUs do not fill nodes of 4
  expect_input(s, "simulate.gpus[1]", "17");
  s = spec(adam, 1);
  s["simulate"]["workload"] = "gpt3";
  expect_input(s, "simulate.workload", "gpt3");
  s = spec(adam, 1);
  s["simulate"]["clusters"] = {"dgx-h100"};
  expect_input(s, "simulate.clusters[0]", "dgx-h100");
  s = spec(json::array({opt("x", "TwoBitAdam", json::object())}), 1);
  try {
    simulate_experiment(s, "bad.json");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "bad.json");
    EXPECT_NE(std::string(e.what()).find("TwoBitAdam"), std::string::npos);
  }
  s = spec(json::array({opt("x", "Adam", json::object(), "y")}), 1);
  expect_input(s, "simulate.optimizers[0].baseline", "y");
}
