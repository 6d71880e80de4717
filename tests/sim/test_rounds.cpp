// Communication rounds per run (`simulated.comm_steps`, `simulated.collective_calls`), which
// the 0/1 Adam "fewer rounds" claim reads, and the `claims` field of paper-claim specs.
#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/sim/experiment.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;
using nlohmann::json;
using test::opt;
using test::run_of;

namespace {

constexpr int64_t kSteps = 400;

json spec(json optimizers) {
  return test::small_experiment(std::move(optimizers), kSteps, 2, 4);
}

// The rounds recomputed from the run's own step kinds: a check that the run-level sums agree
// with the per-kind counts and calls the results also record.
std::pair<int64_t, int64_t> rounds_from_kinds(const json& run) {
  int64_t steps = 0, calls = 0;
  for (const auto& k : run["step_kinds"]) {
    const int64_t n = k["count"].get<int64_t>();
    const int64_t c = static_cast<int64_t>(k["calls"].size());
    if (c > 0) steps += n;
    calls += n * c;
  }
  return {steps, calls};
}

}  // namespace

TEST(Rounds, LocalStepsCutCommunicationRounds) {
  const json results =
      simulate_experiment(spec({opt("Adam", "Adam", json::object()),
                                opt("1-bit Adam", "OneBitAdam", {{"freeze_step", 100}}, "Adam"),
                                opt("0/1 Adam", "ZeroOneAdam",
                                    {{"var_freeze_step", 100},
                                     {"var_update_scaler", 4},
                                     {"local_step_clipper", 8},
                                     {"local_step_scaler", 50}},
                                    "1-bit Adam")}),
                          "rounds.json");
  const json& adam = run_of(results, "Adam")["simulated"];
  const json& onebit = run_of(results, "1-bit Adam")["simulated"];
  const json& zero_one = run_of(results, "0/1 Adam")["simulated"];

  // Adam and 1-bit Adam communicate on every step, one gradient call each.
  EXPECT_EQ(adam["comm_steps"].get<int64_t>(), kSteps);
  EXPECT_EQ(adam["collective_calls"].get<int64_t>(), kSteps);
  EXPECT_EQ(onebit["comm_steps"].get<int64_t>(), kSteps);
  EXPECT_GE(onebit["collective_calls"].get<int64_t>(), kSteps);

  // 0/1 Adam's local steps make no call, so it needs fewer rounds than 1-bit Adam.
  const int64_t zo_steps = zero_one["comm_steps"].get<int64_t>();
  EXPECT_LT(zo_steps, kSteps);
  EXPECT_GT(zo_steps, 0);
  int64_t local = 0;
  for (const auto& k : run_of(results, "0/1 Adam")["step_kinds"])
    if (k["phase"] == "local_step") {
      EXPECT_TRUE(k["calls"].empty());
      local += k["count"].get<int64_t>();
    }
  EXPECT_GT(local, 0);
  EXPECT_EQ(zo_steps, kSteps - local);
  EXPECT_LT(zero_one["collective_calls"].get<int64_t>(), onebit["collective_calls"].get<int64_t>());

  for (const char* label : {"Adam", "1-bit Adam", "0/1 Adam"}) {
    const json& run = run_of(results, label);
    const auto [steps, calls] = rounds_from_kinds(run);
    EXPECT_EQ(run["simulated"]["comm_steps"].get<int64_t>(), steps) << label;
    EXPECT_EQ(run["simulated"]["collective_calls"].get<int64_t>(), calls) << label;
  }
}

TEST(Rounds, ClaimsAreCopiedIntoTheConfigAndMustBeAnArray) {
  json s = spec(json::array({opt("Adam", "Adam", json::object())}));
  s["simulate"]["total_steps"] = 1;
  s["claims"] = json::array({{{"id", "x"}, {"paper_value", 1.0}}});
  const json results = simulate_experiment(s, "paper.json");
  EXPECT_EQ(results["config"]["claims"], s["claims"]);

  s["claims"] = json::object();
  try {
    simulate_experiment(s, "paper.json");
    ADD_FAILURE() << "expected an InputError for claims";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "paper.json") << e.what();
    EXPECT_EQ(e.field(), "claims") << e.what();
  }
}
