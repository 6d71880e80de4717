// Claim spec validation: every field checked, unknown fields rejected with a suggestion,
// duplicate ids rejected within and across specs; and every committed spec in
// experiments/paper/ loads (zero specs is fine, an invalid one fails this test).
#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/report/claim_spec.hpp"
#include "report_test_util.hpp"

namespace clbo::report::test {
namespace {

class ClaimSpecTest : public TempDirTest {
 protected:
  // The error message of loading `spec` as <dir>/<name>.json, or "" when it loads.
  std::string spec_error(const json& spec, const std::string& name = "demo-claims") {
    write_json("specs/" + name + ".json", spec);
    try {
      load_claim_spec(path("specs/" + name + ".json"));
    } catch (const clbo::Error& e) {
      return e.what();
    }
    return "";
  }
};

json good_claim(const std::string& id = "onebit-adam.speedup.eth.64") {
  return claim(id, {{"op", "value"}, {"a", sel("1-bit Adam", 64, "simulated.speedup")}});
}

TEST_F(ClaimSpecTest, AValidSpecLoadsWithDefaults) {
  write_json("specs/demo-claims.json", spec_with({good_claim()}));
  const ClaimSpec s = load_claim_spec(path("specs/demo-claims.json"));
  EXPECT_EQ(s.name, "demo-claims");
  ASSERT_EQ(s.claims.size(), 1u);
  const Claim& c = s.claims[0];
  EXPECT_EQ(c.metric.op, Metric::Op::kValue);
  EXPECT_EQ(c.metric.a.results, "paper/demo-claims");  // the spec's own results by default
  EXPECT_EQ(c.metric.a.array, "runs");
  EXPECT_EQ(c.scale, 1.0);
  EXPECT_FALSE(c.headline);
  ASSERT_TRUE(c.tolerance.has_value());
  EXPECT_DOUBLE_EQ(*c.tolerance, 0.15);
  EXPECT_DOUBLE_EQ(*c.paper_value, 3.3);
}

TEST_F(ClaimSpecTest, DefaultTolerancesFollowTheKind) {
  EXPECT_DOUBLE_EQ(*default_tolerance("volume"), 0.05);
  EXPECT_DOUBLE_EQ(*default_tolerance("rounds"), 0.05);
  EXPECT_DOUBLE_EQ(*default_tolerance("throughput"), 0.15);
  EXPECT_DOUBLE_EQ(*default_tolerance("time"), 0.15);
  EXPECT_FALSE(default_tolerance("projection").has_value());
  EXPECT_FALSE(default_tolerance("accuracy_gap").has_value());
}

TEST_F(ClaimSpecTest, UnknownFieldsAreRejectedWithASuggestion) {
  json c = good_claim();
  c["tolerence"] = 0.1;
  std::string err = spec_error(spec_with({c}));
  EXPECT_NE(err.find("claims[0].tolerence"), std::string::npos) << err;
  EXPECT_NE(err.find("did you mean 'tolerance'"), std::string::npos) << err;

  c = good_claim();
  c["metric"]["a"]["feild"] = "x";
  err = spec_error(spec_with({c}));
  EXPECT_NE(err.find("claims[0].metric.a.feild"), std::string::npos) << err;

  json s = spec_with({good_claim()});
  s["claimz"] = json::array();
  EXPECT_NE(spec_error(s).find("claimz"), std::string::npos);
}

TEST_F(ClaimSpecTest, EveryFieldIsChecked) {
  auto with = [](const std::string& key, const json& value) {
    json c = good_claim();
    if (value.is_null() && key != "paper_value")
      c.erase(key);
    else
      c[key] = value;
    return spec_with({c});
  };
  EXPECT_NE(spec_error(with("id", "Bad_ID")).find("claims[0].id"), std::string::npos);
  EXPECT_NE(spec_error(with("paper", "2-bit Adam")).find("claims[0].paper"), std::string::npos);
  EXPECT_NE(spec_error(with("kind", "speed")).find("did you mean 'speedup'"), std::string::npos);
  EXPECT_NE(spec_error(with("table", "")).find("claims[0].table"), std::string::npos);
  EXPECT_NE(spec_error(with("setting", nullptr)).find("claims[0].setting"), std::string::npos);
  EXPECT_NE(spec_error(with("quantity", 3)).find("claims[0].quantity"), std::string::npos);
  EXPECT_NE(spec_error(with("unit", nullptr)).find("claims[0].unit"), std::string::npos);
  EXPECT_NE(spec_error(with("paper_value", "3.3")).find("paper_value"), std::string::npos);
  EXPECT_NE(spec_error(with("paper_value", 0)).find("nonzero"), std::string::npos);
  EXPECT_NE(spec_error(with("source", "")).find("claims[0].source"), std::string::npos);
  EXPECT_NE(spec_error(with("headline", "yes")).find("claims[0].headline"), std::string::npos);
  EXPECT_NE(spec_error(with("up_to", 1)).find("claims[0].up_to"), std::string::npos);
  EXPECT_NE(spec_error(with("scale", 0)).find("claims[0].scale"), std::string::npos);
  EXPECT_NE(spec_error(with("tolerance", -0.1)).find("claims[0].tolerance"), std::string::npos);
  EXPECT_NE(spec_error(with("metric", nullptr)).find("claims[0].metric"), std::string::npos);
  EXPECT_NE(spec_error(with("note", 5)).find("claims[0].note"), std::string::npos);
  EXPECT_NE(spec_error(with("deviation", json::array())).find("claims[0].deviation"),
            std::string::npos);
  // paper_value is required but may be null.
  json c = good_claim();
  c.erase("paper_value");
  EXPECT_NE(spec_error(spec_with({c})).find("paper_value"), std::string::npos);
  EXPECT_EQ(spec_error(with("paper_value", nullptr)), "");
  // Projections carry no published value and no band.
  c = good_claim();
  c["kind"] = "projection";
  EXPECT_NE(spec_error(spec_with({c})).find("projection rows"), std::string::npos);
  c["paper_value"] = nullptr;
  c["paper"] = "projection";
  EXPECT_EQ(spec_error(spec_with({c})), "");
  c["tolerance"] = 0.1;
  EXPECT_NE(spec_error(spec_with({c})).find("no target band"), std::string::npos);
}

TEST_F(ClaimSpecTest, MetricsAndSelectorsAreChecked) {
  auto with_metric = [](const json& m) {
    json c = good_claim();
    c["metric"] = m;
    return spec_with({c});
  };
  const json a = sel("1-bit Adam", 64, "simulated.speedup");
  EXPECT_NE(spec_error(with_metric({{"op", "ratio"}, {"a", a}})).find("metric.b"),
            std::string::npos);
  EXPECT_NE(spec_error(with_metric({{"op", "value"}, {"a", a}, {"b", a}})).find("not used by op"),
            std::string::npos);
  EXPECT_NE(spec_error(with_metric({{"op", "divide"}, {"a", a}})).find("metric.op"),
            std::string::npos);
  EXPECT_NE(spec_error(with_metric({{"a", a}})).find("metric.op"), std::string::npos);
  EXPECT_NE(spec_error(with_metric({{"op", "max"}, {"of", json::array()}})).find("metric.of"),
            std::string::npos);
  EXPECT_NE(spec_error(with_metric({{"op", "unavailable"}})).find("metric.reason"),
            std::string::npos);
  EXPECT_NE(
      spec_error(with_metric({{"op", "max"}, {"of", {{{"op", "unavailable"}, {"reason", "GPU"}}}}}))
          .find("metric.of[0].op"),
      std::string::npos);
  json bad = a;
  bad["field"] = "simulated..speedup";
  EXPECT_NE(spec_error(with_metric({{"op", "value"}, {"a", bad}})).find("metric.a.field"),
            std::string::npos);
  bad = a;
  bad["field"] = "step_kinds[x].time";
  EXPECT_NE(spec_error(with_metric({{"op", "value"}, {"a", bad}})).find("metric.a.field"),
            std::string::npos);
  bad = a;
  bad["where"] = {{"gpus", {64}}};
  EXPECT_NE(spec_error(with_metric({{"op", "value"}, {"a", bad}})).find("metric.a.where.gpus"),
            std::string::npos);
  bad = a;
  bad["results"] = "sim/default-sweep.json";
  EXPECT_NE(spec_error(with_metric({{"op", "value"}, {"a", bad}})).find("without .json"),
            std::string::npos);
  json ok = a;
  ok["field"] = "step_kinds[0].simulated.time_ms";
  ok["results"] = "sim/default-sweep";
  EXPECT_EQ(spec_error(with_metric({{"op", "value"}, {"a", ok}})), "");
  EXPECT_EQ(spec_error(with_metric({{"op", "unavailable"}, {"reason", "needs a GPU"}})), "");
}

TEST_F(ClaimSpecTest, SpecEnvelopeIsChecked) {
  EXPECT_NE(spec_error(spec_with({good_claim()}, "other-name")).find("name"), std::string::npos);
  json s = spec_with({good_claim()});
  s["simulate"] = "default";
  EXPECT_NE(spec_error(s).find("simulate"), std::string::npos);
  s = spec_with({});
  EXPECT_NE(spec_error(s).find("claims"), std::string::npos);
  s = spec_with({good_claim()});
  s.erase("source");
  EXPECT_NE(spec_error(s).find("source"), std::string::npos);
  s.erase("simulate");  // a claims-only spec needs no simulation
  s["source"] = "docs/reference/published.md §1";
  EXPECT_EQ(spec_error(s), "");
}

TEST_F(ClaimSpecTest, DuplicateIdsAreRejectedWithinAndAcrossSpecs) {
  std::string err = spec_error(spec_with({good_claim("a.b"), good_claim("a.b")}));
  EXPECT_NE(err.find("claims[1].id"), std::string::npos) << err;
  EXPECT_NE(err.find("duplicate"), std::string::npos) << err;

  fs::remove_all(path("specs"));
  write_json("specs/one.json", spec_with({good_claim("a.b")}, "one"));
  write_json("specs/two.json", spec_with({good_claim("c.d"), good_claim("a.b")}, "two"));
  try {
    load_claim_specs(path("specs"));
    FAIL() << "duplicate id across specs accepted";
  } catch (const clbo::Error& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("two.json"), std::string::npos) << err;
  EXPECT_NE(err.find("one.json"), std::string::npos) << err;
  EXPECT_NE(err.find("claims[1].id"), std::string::npos) << err;
}

TEST_F(ClaimSpecTest, FolderLoadingIsOrderedAndAMissingFolderIsAnError) {
  write_json("specs/b.json", spec_with({good_claim("b.1")}, "b"));
  write_json("specs/a.json", spec_with({good_claim("a.1")}, "a"));
  write_text("specs/README.md", "not a spec");
  const auto specs = load_claim_specs(path("specs"));
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "a");
  EXPECT_EQ(specs[1].name, "b");
  fs::create_directories(path("empty"));
  EXPECT_TRUE(load_claim_specs(path("empty")).empty());
  EXPECT_THROW(load_claim_specs(path("missing")), clbo::InputError);
}

// The committed specs (written by the paper-claims work) must all load. Zero specs is fine.
TEST(CommittedSpecs, EverySpecInExperimentsPaperLoads) {
  const fs::path dir = fs::path(CLBO_SOURCE_DIR) / "experiments" / "paper";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " does not exist yet";
  const auto specs = load_claim_specs(dir.string());  // throws on the first invalid spec
  for (const auto& s : specs) EXPECT_FALSE(s.claims.empty()) << s.file;
}

}  // namespace
}  // namespace clbo::report::test
