// step() sends exactly what comm_schedule() announces: for every optimizer, every phase and
// p = 1…4, the bytes a CountingCommunicator sees on each rank equal the sum of the CommPlan
// bytes over the step's calls.
#include <set>

#include "optim_test_util.hpp"

namespace clbo::test {
namespace {

struct BytesCase {
  std::string name;
  nlohmann::json cfg;
  int steps;
  std::set<Phase> phases;  // every phase the run must go through
};

std::vector<BytesCase> cases() {
  const nlohmann::json zo = {{"var_freeze_step", 8},
                             {"var_update_scaler", 2},
                             {"local_step_scaler", 2},
                             {"local_step_clipper", 4}};
  nlohmann::json zo_skip = zo;
  zo_skip["nonfinite"] = "skip";
  zo_skip["comm_granularity"] = "tensor";
  const nlohmann::json slamb = {{"compress_ratio", 0.3}, {"grad_size_thr", 40}, {"local_steps", 3}};
  nlohmann::json slamb32 = slamb;
  slamb32["comm_dtype"] = "fp32";
  slamb32["nonfinite"] = "skip";
  return {
      {"adam", block("Adam", {{"lr", 0.01}}), 2, {Phase::kDense}},
      {"lamb_skip", block("Lamb", {{"lr", 0.01}, {"nonfinite", "skip"}}), 2, {Phase::kDense}},
      {"onebit_adam",
       block("OneBitAdam", {{"freeze_step", 2}}),
       4,
       {Phase::kWarmup, Phase::kCompression}},
      {"onebit_adam_tensor",
       block("OneBitAdam",
             {{"freeze_step", 1}, {"comm_granularity", "tensor"}, {"nonfinite", "skip"}}),
       3,
       {Phase::kWarmup, Phase::kCompression}},
      {"onebit_lamb",
       block("OneBitLamb", {{"freeze_step", 2}}),
       4,
       {Phase::kWarmup, Phase::kCompression}},
      {"onebit_lamb_tail",
       block("OneBitLamb", {{"freeze_step", 1}, {"compat_keep_padding_tail", true}}),
       3,
       {Phase::kWarmup, Phase::kCompression}},
      {"zero_one",
       block("ZeroOneAdam", zo),
       18,
       {Phase::kVarianceStep, Phase::kCompression, Phase::kSyncStep, Phase::kLocalStep}},
      {"zero_one_skip_tensor",
       block("ZeroOneAdam", zo_skip),
       18,
       {Phase::kVarianceStep, Phase::kCompression, Phase::kSyncStep, Phase::kLocalStep}},
      {"onebit_adam_no_ef",
       block("OneBitAdamNoErrorFeedback", {{"freeze_step", 2}}),
       4,
       {Phase::kWarmup, Phase::kCompression}},
      {"naive_onebit_adam", block("NaiveOneBitAdam", {{"lr", 0.01}}), 3, {Phase::kCompression}},
      {"naive_onebit_adam_dense_tensor",
       block("NaiveOneBitAdam", {{"dense_steps", 2}, {"comm_granularity", "tensor"}}),
       4,
       {Phase::kWarmup, Phase::kCompression}},
      {"naive_onebit_lamb",
       block("NaiveOneBitLamb", {{"freeze_step", 2}, {"nonfinite", "skip"}}),
       4,
       {Phase::kWarmup, Phase::kCompression}},
      {"slamb_fp16", block("Slamb", slamb), 5, {Phase::kSyncStep, Phase::kCompression}},
      {"slamb_fp32_skip", block("Slamb", slamb32), 5, {Phase::kSyncStep, Phase::kCompression}},
  };
}

class BytesTest : public ::testing::TestWithParam<int> {};

TEST_P(BytesTest, CountedBytesEqualThePlannedBytesOfTheSchedule) {
  const int p = GetParam();
  for (const BytesCase& c : cases()) {
    World w(c.cfg, test_layout(), p);
    std::set<Phase> seen;
    for (int s = 1; s <= c.steps; ++s) {
      const CommSchedule schedule = w.opts[0]->comm_schedule(s);
      seen.insert(schedule.phase);
      const std::vector<uint64_t> sent = w.step();
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(sent[r], planned_bytes(*w.opts[r], s, p, r))
            << c.name << " step " << s << " (" << to_string(schedule.phase) << ") rank " << r;
        // Every rank announces the same calls.
        EXPECT_EQ(w.opts[r]->comm_schedule(s).calls.size(), schedule.calls.size());
        if (p == 1) {
          EXPECT_EQ(sent[r], 0u);
        } else if (!schedule.calls.empty()) {
          EXPECT_GT(sent[r], 0u) << c.name << " step " << s;
        }
      }
    }
    EXPECT_EQ(seen, c.phases) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, BytesTest, ::testing::Values(1, 2, 3, 4), world_size_name);

}  // namespace
}  // namespace clbo::test
