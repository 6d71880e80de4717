// Claim evaluation on small synthetic results: each metric op, scale, band and provenance,
// selectors that match zero or several elements, missing fields and files, stale results.
#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/report/evaluate.hpp"
#include "report_test_util.hpp"

namespace clbo::report::test {
namespace {

class EvaluateTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    write_json("results/paper/demo-claims.json", sim_results());
    write_json("results/convergence/adam.json", train_results());
  }
  ClaimSpec spec_of(const std::vector<json>& claims) {
    return parse_claim_spec(spec_with(claims), "experiments/paper/demo-claims.json", "demo-claims");
  }
  ClaimRow eval(const json& c) {
    spec_ = spec_of({c});
    store_ = ResultsStore::load(path("results"));
    return evaluate_claim(spec_, spec_.claims[0], store_);
  }
  std::string eval_error(const json& c) {
    try {
      eval(c);
    } catch (const clbo::Error& e) {
      return e.what();
    }
    return "";
  }
  ClaimSpec spec_;
  ResultsStore store_;
};

TEST_F(EvaluateTest, ValueScaleBandAndProvenance) {
  json c = claim("v", {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}});
  ClaimRow r = eval(c);
  ASSERT_TRUE(r.clbo_value.has_value());
  EXPECT_DOUBLE_EQ(*r.clbo_value, 3.2);
  EXPECT_NEAR(*r.rel_error, (3.2 - 3.3) / 3.3, 1e-12);
  EXPECT_EQ(r.band, Band::kWithin);
  EXPECT_EQ(r.provenance, "simulated");
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0], "paper/demo-claims");

  c["tolerance"] = 0.01;  // 3% off: outside a 1% band
  EXPECT_EQ(eval(c).band, Band::kOutside);

  c = claim("s", {{"op", "value"}, {"a", sel("Adam", 16, "step_kinds[0].simulated.time_ms")}},
            116000, "time");
  c["scale"] = 1000;
  r = eval(c);
  EXPECT_DOUBLE_EQ(*r.clbo_value, 116000);
  EXPECT_DOUBLE_EQ(*r.rel_error, 0);
}

TEST_F(EvaluateTest, EveryClaimIsEvaluatedUnderEachImplementationTheResultsHold) {
  // The same runs under two profiles; the file's primary (deepspeed) gives the row's value.
  json results = sim_results();
  json runs = json::array();
  for (const char* im : {"deepspeed", "clbo"})
    for (json run : results["runs"]) {
      run["implementation"] = im;
      if (std::string(im) == "deepspeed" && run["simulated"]["speedup"].is_number())
        run["simulated"]["speedup"] = run["simulated"]["speedup"].get<double>() - 0.5;
      runs.push_back(run);
    }
  results["runs"] = runs;
  results["inputs"] = {{"settings", {{"implementation", {"deepspeed", "clbo"}}}}};
  write_json("results/paper/demo-claims.json", results);
  const ClaimRow r =
      eval(claim("v", {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}}));
  EXPECT_EQ(r.implementation, "deepspeed");
  EXPECT_DOUBLE_EQ(*r.clbo_value, 2.7);
  ASSERT_EQ(r.by_implementation.size(), 2u);
  EXPECT_EQ(r.by_implementation[0].first, "deepspeed");
  EXPECT_DOUBLE_EQ(r.by_implementation[0].second, 2.7);
  EXPECT_EQ(r.by_implementation[1].first, "clbo");
  EXPECT_DOUBLE_EQ(r.by_implementation[1].second, 3.2);
  // A selector that names an implementation reads that one only.
  json named = sel("1-bit Adam", 64, "simulated.speedup");
  named["where"]["implementation"] = "clbo";
  EXPECT_DOUBLE_EQ(*eval(claim("n", {{"op", "value"}, {"a", named}})).clbo_value, 3.2);
  // Results without profiles (before them, or other engines) give one value.
  write_json("results/paper/demo-claims.json", sim_results());
  EXPECT_TRUE(eval(claim("o", {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}}))
                  .by_implementation.empty());
}

TEST_F(EvaluateTest, RatioAndReduction) {
  json c = claim("r", {{"op", "ratio"},
                       {"a", sel("1-bit Adam", 64, "simulated.samples_per_s")},
                       {"b", sel("Adam", 64, "simulated.samples_per_s")}});
  EXPECT_DOUBLE_EQ(*eval(c).clbo_value, 640.0 / 200.0);
  c = claim("red",
            {{"op", "reduction"},
             {"a", sel("1-bit Adam", 16, "simulated.total_bytes_per_gpu")},
             {"b", sel("Adam", 16, "simulated.total_bytes_per_gpu")}},
            80, "volume");
  c["scale"] = 100;
  c["unit"] = "%";
  const ClaimRow r = eval(c);
  EXPECT_DOUBLE_EQ(*r.clbo_value, 80.0);  // 1 - 200/1000, in %
  EXPECT_EQ(r.band, Band::kWithin);
}

TEST_F(EvaluateTest, MaxAndMinNameTheWinningElement) {
  const json of = {{{"op", "value"}, {"a", sel("1-bit Adam", 16, "simulated.speedup")}},
                   {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}}};
  json c = claim("m", {{"op", "max"}, {"of", of}});
  c["up_to"] = true;
  ClaimRow r = eval(c);
  EXPECT_DOUBLE_EQ(*r.clbo_value, 3.2);
  EXPECT_EQ(r.winner, "gpus=64");
  r = eval(claim("n", {{"op", "min"}, {"of", of}}));
  EXPECT_DOUBLE_EQ(*r.clbo_value, 2.5);
  EXPECT_EQ(r.winner, "gpus=16");
  // Nested: the max of a min and a value.
  r = eval(
      claim("nest", {{"op", "max"},
                     {"of",
                      {{{"op", "min"}, {"of", of}},
                       {{"op", "value"}, {"a", sel("Adam", 16, "simulated.samples_per_s")}}}}}));
  EXPECT_DOUBLE_EQ(*r.clbo_value, 100.0);
}

TEST_F(EvaluateTest, UnavailableRowsArePublishedOnly) {
  const ClaimRow r = eval(claim("u", {{"op", "unavailable"}, {"reason", "needs a V100 cluster"}}));
  EXPECT_FALSE(r.clbo_value.has_value());
  EXPECT_FALSE(r.rel_error.has_value());
  EXPECT_EQ(r.band, Band::kNotApplicable);
  EXPECT_EQ(r.provenance, "published");
  EXPECT_EQ(r.reason, "needs a V100 cluster");
  const Counts n = count_rows({r});
  EXPECT_EQ(n.not_computed, 1u);
  EXPECT_EQ(n.within + n.outside, 0u);
}

TEST_F(EvaluateTest, MeasuredRowsReadTrainResults) {
  json a = {{"results", "convergence/adam"},
            {"array", "summary"},
            {"where", {{"label", "1-bit Adam"}}},
            {"field", "gap_to_baseline_points.mean"}};
  json c = claim("gap", {{"op", "value"}, {"a", a}}, nullptr, "accuracy_gap");
  const ClaimRow r = eval(c);
  EXPECT_DOUBLE_EQ(*r.clbo_value, -0.2);
  EXPECT_EQ(r.provenance, "measured");
  EXPECT_EQ(r.band, Band::kNotApplicable);  // no paper value, no band
  json b = sel("1-bit Adam", 64, "simulated.samples_per_s");
  c = claim("mixed", {{"op", "ratio"}, {"a", b}, {"b", a}});
  EXPECT_EQ(eval(c).provenance, "measured+simulated");
}

TEST_F(EvaluateTest, SelectorMatchingNoneOrSeveralNamesSpecClaimAndSelector) {
  json c =
      claim("onebit.none", {{"op", "value"}, {"a", sel("1-bit Adam", 32, "simulated.speedup")}});
  std::string err = eval_error(c);
  EXPECT_NE(err.find("experiments/paper/demo-claims.json"), std::string::npos) << err;
  EXPECT_NE(err.find("onebit.none"), std::string::npos) << err;
  EXPECT_NE(err.find("matches no element"), std::string::npos) << err;
  EXPECT_NE(err.find("\"gpus\" takes 16, 64"), std::string::npos) << err;

  c = claim("onebit.two",
            {{"op", "value"},
             {"a", {{"where", {{"optimizer", "1-bit Adam"}}}, {"field", "simulated.speedup"}}}});
  err = eval_error(c);
  EXPECT_NE(err.find("onebit.two"), std::string::npos) << err;
  EXPECT_NE(err.find("matches 2 elements"), std::string::npos) << err;
  EXPECT_NE(err.find("\"optimizer\":\"1-bit Adam\""), std::string::npos) << err;
}

TEST_F(EvaluateTest, MissingFieldsNullsAndFilesAreErrors) {
  std::string err =
      eval_error(claim("f1", {{"op", "value"}, {"a", sel("Adam", 64, "simulated.nope")}}));
  EXPECT_NE(err.find("f1"), std::string::npos) << err;
  EXPECT_NE(err.find("simulated.nope"), std::string::npos) << err;
  err = eval_error(claim("f2", {{"op", "value"}, {"a", sel("Adam", 64, "simulated.speedup")}}));
  EXPECT_NE(err.find("null, not a number"), std::string::npos) << err;
  err = eval_error(
      claim("f3", {{"op", "value"}, {"a", sel("Adam", 64, "step_kinds[3].simulated.time_ms")}}));
  EXPECT_NE(err.find("step_kinds[3]"), std::string::npos) << err;
  json a = sel("Adam", 64, "simulated.speedup");
  a["results"] = "sim/not-there";
  err = eval_error(claim("f4", {{"op", "value"}, {"a", a}}));
  EXPECT_NE(err.find("sim/not-there.json does not exist"), std::string::npos) << err;
  a = sel("Adam", 64, "simulated.speedup");
  a["array"] = "rows";
  err = eval_error(claim("f5", {{"op", "value"}, {"a", a}}));
  EXPECT_NE(err.find("no top-level array \"rows\""), std::string::npos) << err;
  // The spec's own results missing: tell the user which simulation to run.
  fs::remove(path("results/paper/demo-claims.json"));
  err = eval_error(claim("f6", {{"op", "value"}, {"a", sel("Adam", 64, "simulated.speedup")}}));
  EXPECT_NE(err.find("clbo simulate experiments/paper/demo-claims.json"), std::string::npos) << err;
}

TEST_F(EvaluateTest, StaleOwnResultsAreRefused) {
  json changed = sim_block();
  changed["gpus"] = {16, 64, 256};
  write_json("results/paper/demo-claims.json", sim_results(changed));
  const std::string err =
      eval_error(claim("st", {{"op", "value"}, {"a", sel("Adam", 64, "simulated.samples_per_s")}}));
  EXPECT_NE(err.find("is stale"), std::string::npos) << err;
  EXPECT_NE(err.find("results/paper/demo-claims.json"), std::string::npos) << err;
  EXPECT_NE(err.find("experiments/paper/demo-claims.json"), std::string::npos) << err;
  EXPECT_NE(err.find("rerun `clbo simulate experiments/paper/demo-claims.json`"), std::string::npos)
      << err;
  // Another spec's results are not compared with this spec's block.
  write_json("results/sim/other.json", sim_results(changed));
  json a = sel("Adam", 64, "simulated.samples_per_s");
  a["results"] = "sim/other";
  EXPECT_EQ(eval_error(claim("ok", {{"op", "value"}, {"a", a}})), "");
}

}  // namespace
}  // namespace clbo::report::test
