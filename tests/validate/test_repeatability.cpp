// clbo validate --repeatability: the grid's runs compared case by case, without an emulation.
#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/validate/repeatability.hpp"

namespace clbo::validate {
namespace {

using nlohmann::json;

json grid(const char* description = "a grid") {
  return {{"name", "g"}, {"description", description}, {"ops", {"allreduce:ring"}}};
}

json op_case(const char* cluster, int64_t bytes, double measured, double rel,
             const char* bound = "bandwidth", const char* op = "allreduce") {
  return {{"cluster", cluster}, {"op", op},
          {"algo", "ring"},     {"bytes", bytes},
          {"bound", bound},     {"measured_s", measured},
          {"rel_error", rel},   {"optimizer", nullptr},
          {"phase", nullptr}};
}

json step_case(const char* phase, double measured, double rel) {
  return {{"cluster", "c"},     {"op", "step"},           {"algo", nullptr},
          {"bytes", 100},       {"optimizer", "Adam"},    {"phase", phase},
          {"bound", "compute"}, {"measured_s", measured}, {"rel_error", rel}};
}

ValidationRun run(const std::string& file, std::vector<json> cases,
                  const char* description = "a grid") {
  return {file,
          {{"schema", "clbo.validate/1"},
           {"config", grid(description)},
           {"environment", {{"git_hash", "abc"}}},
           {"cases", cases}}};
}

// Each run is scored against the median of the *other* runs, never its own value: with three
// runs of 1.0, 1.2 and 0.9 s, the first's other-runs median is 1.05.
TEST(ValidateRepeatability, EachRunIsScoredAgainstTheOtherRunsMedian) {
  const json r = repeatability(
      grid(), {run("a", {op_case("c", 1, 1.0, 0.10)}), run("b", {op_case("c", 1, 1.2, -0.05)}),
               run("c", {op_case("c", 1, 0.9, 0.30)})});
  ASSERT_EQ(r["cases_in_every_run"], 1);
  const json& k = r["cases"][0];
  EXPECT_EQ(k["group"], "dense_allreduce/bandwidth");
  EXPECT_NEAR(k["spread"].get<double>(), 1.2 / 0.9 - 1, 1e-12);
  EXPECT_NEAR(k["other_runs_median_rel_error"][0].get<double>(), 1.0 / 1.05 - 1, 1e-12);
  EXPECT_NEAR(k["other_runs_median_rel_error"][1].get<double>(), 1.2 / 0.95 - 1, 1e-12);
  EXPECT_NEAR(k["other_runs_median_rel_error"][2].get<double>(), 0.9 / 1.1 - 1, 1e-12);
  const json& g = r["groups"]["dense_allreduce/bandwidth"];
  EXPECT_EQ(g["cases"], 1);
  EXPECT_NEAR(g["per_run"][1]["other_runs_median"]["max_abs_rel_error"].get<double>(),
              1.2 / 0.95 - 1, 1e-12);
  EXPECT_NEAR(g["per_run"][2]["simulator"]["max_abs_rel_error"].get<double>(), 0.30, 1e-12)
      << "the simulator's error is the file's own rel_error";
  EXPECT_NEAR(k["rel_error_median"].get<double>(), 0.10, 1e-12);
  EXPECT_NEAR(g["simulator_over_runs"]["max_abs_rel_error"].get<double>(), 0.10, 1e-12);
  EXPECT_EQ(g["simulator_over_runs"]["same_sign_in_every_run"], 0) << "-0.05 among +0.10, +0.30";
}

// Runs measured on machines whose facts differ are compared, with a warning that names them:
// their other runs' median holds the machines' difference, not only the noise.
TEST(ValidateRepeatability, RunsOfDifferentMachinesAreNamedInAWarning) {
  auto on = [](ValidationRun r, const char* kernel) {
    r.doc["machine"] = {{"cpus", 2}, {"facts", {{"cpu_model", "AMD EPYC"}, {"kernel", kernel}}}};
    return r;
  };
  const json same = repeatability(grid(), {on(run("a", {op_case("c", 1, 1.0, 0.1)}), "v1"),
                                           on(run("b", {op_case("c", 1, 1.1, 0.0)}), "v1")});
  EXPECT_TRUE(same["warnings"].empty());
  EXPECT_EQ(same["runs"][0]["machine"]["kernel"], "v1");
  const json two = repeatability(grid(), {on(run("a", {op_case("c", 1, 1.0, 0.1)}), "v1"),
                                          on(run("b", {op_case("c", 1, 1.1, 0.0)}), "v1"),
                                          on(run("c", {op_case("c", 1, 3.0, 0.0)}), "v2")});
  ASSERT_EQ(two["warnings"].size(), 1u);
  const std::string w = two["warnings"][0];
  EXPECT_NE(w.find("2 machines"), std::string::npos) << w;
  EXPECT_NE(w.find("a, b on"), std::string::npos) << w;
  EXPECT_NE(w.find("c on"), std::string::npos) << w;
  EXPECT_EQ(repeatability_table(two).rfind("warning: the runs come from 2 machines", 0), 0u);
  // A run without a machine record (a hand-made file) is not counted as another machine.
  EXPECT_TRUE(repeatability(grid(), {on(run("a", {op_case("c", 1, 1.0, 0.1)}), "v1"),
                                     run("b", {op_case("c", 1, 1.1, 0.0)})})["warnings"]
                  .empty());
}

// Groups follow the summary's: op family and bound (the first run's), steps apart with the
// count within the target's band; a case not in every run is left out and named.
TEST(ValidateRepeatability, GroupsFollowTheSummaryAndMissingCasesAreNamed) {
  const json r = repeatability(
      grid(), {run("a", {op_case("c", 1, 1.0, 0.0), op_case("c", 2, 1.0, 0.0, "latency"),
                         op_case("c", 3, 1.0, 0.0, "bandwidth", "compressed"),
                         step_case("dense", 1.0, 0.2), step_case("compression", 1.0, 0.0)}),
               run("b", {op_case("c", 1, 1.0, 0.0), op_case("c", 2, 2.0, 0.0, "bandwidth"),
                         step_case("dense", 1.1, 0.0), step_case("compression", 1.0, 0.0)})});
  EXPECT_EQ(r["cases_in_every_run"], 4);
  ASSERT_EQ(r["cases_left_out"].size(), 1u);
  EXPECT_EQ(r["cases_left_out"][0]["in_runs"], json::array({"a"}));
  EXPECT_TRUE(r["groups"].contains("dense_allreduce/latency")) << "the first run's bound";
  EXPECT_FALSE(r["groups"].contains("compressed_allreduce/bandwidth"));
  const json& s = r["groups"]["steps"];
  EXPECT_EQ(s["cases"], 2);
  EXPECT_EQ(s["per_run"][0]["simulator"]["within_15pct"], 1);
  EXPECT_EQ(s["per_run"][0]["other_runs_median"]["within_15pct"], 2);
  EXPECT_NEAR(s["per_run"][0]["other_runs_median"]["max_abs_rel_error"].get<double>(),
              1 - 1.0 / 1.1, 1e-12);
  EXPECT_EQ(s["simulator_over_runs"]["within_15pct"], 2) << "dense: median of 0.2 and 0 is 0.1";
  EXPECT_EQ(s["simulator_over_runs"]["same_sign_in_every_run"], 0) << "0 has no sign";
  EXPECT_EQ(r["groups"]["dense_allreduce/latency"]["simulator_over_runs"]["same_sign_in_every_run"],
            0);
  const std::string table = repeatability_table(r);
  EXPECT_NE(table.find("steps"), std::string::npos) << table;
  EXPECT_NE(table.find("(1/2)"), std::string::npos) << "a run's steps within the band" << table;
  EXPECT_NE(table.find("median over the runs"), std::string::npos) << table;
}

// Cases are matched by what they measured, not by their place in the file; a case whose error
// has one sign in every run is counted as the model's bias.
TEST(ValidateRepeatability, CasesMatchByIdentityAndOneSignIsCounted) {
  const json r =
      repeatability(grid(), {run("a", {op_case("c", 1, 1.0, -0.10), op_case("c", 2, 1.0, 0.05)}),
                             run("b", {op_case("c", 2, 1.0, -0.05), op_case("c", 1, 2.0, -0.30)})});
  ASSERT_EQ(r["cases_in_every_run"], 2);
  EXPECT_EQ(r["cases"][0]["bytes"], 1) << "the first run's order";
  EXPECT_EQ(r["cases"][0]["measured_s"], json::array({1.0, 2.0}));
  EXPECT_NEAR(r["cases"][0]["rel_error_median"].get<double>(), -0.20, 1e-12);
  const json& o = r["groups"]["dense_allreduce/bandwidth"]["simulator_over_runs"];
  EXPECT_EQ(o["same_sign_in_every_run"], 1) << "-0.10 and -0.30; +0.05 and -0.05 are not";
  EXPECT_NEAR(o["max_abs_rel_error"].get<double>(), 0.20, 1e-12);
}

// A reworded description is the same grid; anything else is another grid, named by field.
TEST(ValidateRepeatability, RunsOfAnotherGridAreRefusedByField) {
  EXPECT_NO_THROW(repeatability(grid("new words"), {run("a", {op_case("c", 1, 1.0, 0.0)}),
                                                    run("b", {op_case("c", 1, 1.0, 0.0)}, "old")}));
  ValidationRun other = run("b", {op_case("c", 1, 1.0, 0.0)});
  other.doc["config"]["ops"] = {"allgather"};
  try {
    repeatability(grid(), {run("a", {op_case("c", 1, 1.0, 0.0)}), other});
    FAIL() << "another grid was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "b");
    EXPECT_EQ(e.field(), "config.ops");
  }
}

TEST(ValidateRepeatability, BadRunsAreRefusedByFileAndField) {
  const auto one = [] { return run("a", {op_case("c", 1, 1.0, 0.0)}); };
  EXPECT_THROW(repeatability(grid(), {one()}), InputError) << "one run compares nothing";
  ValidationRun wrong = one();
  wrong.doc["schema"] = "clbo.train/1";
  EXPECT_THROW(repeatability(grid(), {one(), wrong}), InputError);
  ValidationRun zero = run("z", {op_case("c", 1, 0.0, 0.0)});
  try {
    repeatability(grid(), {one(), zero});
    FAIL() << "a zero measured time was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "z");
    EXPECT_EQ(e.field(), "cases[0].measured_s");
  }
  ValidationRun twice = run("t", {op_case("c", 1, 1.0, 0.0), op_case("c", 1, 2.0, 0.0)});
  EXPECT_THROW(repeatability(grid(), {one(), twice}), InputError);
  ValidationRun no_cases = one();
  no_cases.doc.erase("cases");
  EXPECT_THROW(repeatability(grid(), {one(), no_cases}), InputError);
  EXPECT_THROW(repeatability(grid(), {one(), ValidationRun{"x", json::array()}}), InputError)
      << "not an object";
  ValidationRun odd_environment = one();
  odd_environment.doc["environment"] = 3;
  EXPECT_NO_THROW(repeatability(grid(), {one(), odd_environment})) << "only its git hash is read";
}

}  // namespace
}  // namespace clbo::validate
