// `clbo demo`: it runs, every optimizer makes progress, the compressed ones send less than
// their baselines, and the JSON is reproducible apart from its timing object. The synthetic
// problem's gradient is checked against its loss by finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "demo_problem.hpp"

namespace {

using nlohmann::json;

class DemoCli : public clbo::test::CliTest {
 protected:
  json run_demo(const std::string& name) {
    const auto r = run({"demo", "--ranks", "3", "--steps", "24", "--n", "20000", "--seed", "7",
                        "--out", path(name)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    last_stdout_ = r.out;
    return json::parse(clbo::test::slurp(path(name)));
  }
  std::string last_stdout_;
};

TEST_F(DemoCli, RunsEveryOptimizerAndReportsMeasuredNumbers) {
  const json j = run_demo("demo.json");
  ASSERT_EQ(j["results"].size(), 6u);
  EXPECT_EQ(j["schema"], "clbo.demo/1");  // results/SCHEMA.md
  EXPECT_EQ(j["config"]["ranks"], 3);
  EXPECT_EQ(j["config"]["steps"], 24);
  EXPECT_TRUE(j.contains("environment"));
  std::map<std::string, json> by_type;
  for (const auto& r : j["results"]) {
    const std::string type = r["optimizer"];
    by_type[type] = r;
    EXPECT_NE(last_stdout_.find(type), std::string::npos) << last_stdout_;
    EXPECT_EQ(r["final_loss"]["provenance"], "measured");
    // Every optimizer made real progress on the regression.
    EXPECT_LT(r["final_loss"]["value"].get<double>(),
              0.9 * r["initial_loss"]["value"].get<double>())
        << type;
    EXPECT_EQ(r["bytes_sent_per_rank"]["value"].size(), 3u);
    for (const auto& b : r["bytes_sent_per_rank"]["value"]) EXPECT_GT(b.get<uint64_t>(), 0u);
  }
  for (const char* t : {"Adam", "Lamb", "OneBitAdam", "OneBitLamb", "ZeroOneAdam", "Slamb"})
    EXPECT_TRUE(by_type.count(t)) << t;
  // Compression engaged: every compressed optimizer sent less than its baseline and went
  // through more than one phase.
  for (const char* t : {"OneBitAdam", "OneBitLamb", "ZeroOneAdam", "Slamb"}) {
    const double ratio = by_type[t]["volume_vs_baseline"]["value"];
    EXPECT_GT(ratio, 0.0) << t;
    EXPECT_LT(ratio, 0.8) << t;
  }
  for (const char* t : {"OneBitAdam", "OneBitLamb", "ZeroOneAdam"})
    EXPECT_GE(by_type[t]["steps_by_phase"].size(), 2u) << t << by_type[t].dump();
  EXPECT_TRUE(by_type["Adam"]["volume_vs_baseline"].is_null());
}

TEST_F(DemoCli, SameSeedGivesIdenticalJsonApartFromTiming) {
  json a = run_demo("a.json"), b = run_demo("b.json");
  EXPECT_TRUE(a.contains("timing"));
  for (const auto& [key, value] : a["timing"].items())
    EXPECT_EQ(key.substr(key.size() - 2), "_s") << key;
  a.erase("timing");
  b.erase("timing");
  EXPECT_EQ(a.dump(2), b.dump(2));
}

TEST_F(DemoCli, RejectsBadArguments) {
  for (const auto& bad :
       std::vector<std::vector<std::string>>{{"--ranks", "0"}, {"--steps", "0"}, {"--n", "100"}}) {
    std::vector<std::string> args = {"demo", "--out", path("x.json")};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto r = run(args);
    EXPECT_NE(r.exit_code, 0) << bad[0];
    EXPECT_NE(r.err.find(bad[0]), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad[1]), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(path("x.json")));
  }
}

TEST(DemoProblem, GradientMatchesFiniteDifferencesOfItsLoss) {
  const clbo::cli::demo::RegressionProblem problem(2000, 3, 4, 0.1f);
  ASSERT_EQ(problem.layout().num_tensors(), 4u);
  ASSERT_EQ(problem.layout().total(), problem.n());
  auto theta = problem.initial_params();
  std::vector<float> grad(problem.n());
  problem.gradient(theta.data(), 5, 1, grad.data());
  // The loss is quadratic, so a central difference is exact up to rounding. Check one
  // element of every tensor (first, middle, last).
  for (const auto& t : problem.layout().tensors()) {
    for (size_t i : {t.offset, t.offset + t.size / 2, t.offset + t.size - 1}) {
      const float h = 1.0f / 64;  // exactly representable steps keep θ ± h exact
      const float orig = theta[i];
      theta[i] = orig + h;
      const double up = problem.minibatch_loss(theta.data(), 5, 1);
      theta[i] = orig - h;
      const double down = problem.minibatch_loss(theta.data(), 5, 1);
      theta[i] = orig;
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(grad[i], fd, 1e-4 * std::max(1.0, std::abs(fd))) << t.name << " element " << i;
    }
  }
  // Different ranks and steps draw different samples.
  std::vector<float> other(problem.n());
  problem.gradient(theta.data(), 5, 2, other.data());
  EXPECT_NE(grad, other);
}

TEST(DemoProblem, MeanGradientDescends) {
  const clbo::cli::demo::RegressionProblem problem(4096, 0, 8, 0.1f);
  const auto theta0 = problem.initial_params();
  EXPECT_GT(problem.loss(theta0.data()), 1.0);
  // The population gradient is θ − θ*: averaging many minibatch gradients approaches it,
  // so the mean gradient points from θ toward θ* (positive inner product with θ − θ*).
  std::vector<float> mean(problem.n(), 0.0f), g(problem.n());
  for (int r = 0; r < 16; ++r) {
    problem.gradient(theta0.data(), 1, r, g.data());
    for (size_t i = 0; i < g.size(); ++i) mean[i] += g[i] / 16;
  }
  // Walking against the mean gradient lowers the loss.
  std::vector<float> stepped = theta0;
  for (size_t i = 0; i < stepped.size(); ++i) stepped[i] -= 0.5f * mean[i];
  EXPECT_LT(problem.loss(stepped.data()), 0.6 * problem.loss(theta0.data()));
}

}  // namespace
