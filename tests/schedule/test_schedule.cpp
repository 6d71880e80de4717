// schedule_at: the calls of every step, as the simulator reads them (clbo_schedule only).
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "clbo/plan/plan.hpp"
#include "clbo/schedule/schedule.hpp"

namespace clbo {
namespace {

OptimizerConfig config(const std::string& type, nlohmann::json params = nlohmann::json::object()) {
  return parse_optimizer_config(nlohmann::json{{"type", type}, {"params", params}}, "x.json");
}

ParamLayout layout() {
  ParamLayout l;
  l.add("w1", 96, {8, 12});
  l.add("b1", 12, {12});
  l.add("w2", 42, {6, 7});
  return l;
}

TEST(Schedule, BaselinesAverageTheGradientEveryStep) {
  for (const char* type : {"Adam", "Lamb"}) {
    for (int64_t t : {1, 2, 1000}) {
      const CommSchedule s = schedule_at(config(type), t, layout(), 4);
      EXPECT_EQ(s.phase, Phase::kDense);
      ASSERT_EQ(s.calls.size(), 1u);
      EXPECT_EQ(s.calls[0].kind, CollKind::kAllreduce);
      EXPECT_EQ(s.calls[0].count, 150u);
      EXPECT_EQ(s.calls[0].dtype, DType::kF32);
    }
  }
}

TEST(Schedule, OneBitWarmupThenOneCompressedCall) {
  for (const char* type : {"OneBitAdam", "OneBitLamb"}) {
    const OptimizerConfig c = config(type, {{"freeze_step", 3}});
    for (int64_t t = 1; t <= 6; ++t) {
      const CommSchedule s = schedule_at(c, t, layout(), 3);
      ASSERT_EQ(s.calls.size(), 1u);
      if (t <= 3) {
        EXPECT_EQ(s.phase, Phase::kWarmup);
        EXPECT_EQ(s.calls[0].kind, CollKind::kAllreduce);
      } else {
        EXPECT_EQ(s.phase, Phase::kCompression);
        EXPECT_EQ(s.calls[0].kind, CollKind::kCompressedAllreduce);
        EXPECT_EQ(s.calls[0].count, 150u);
      }
    }
    // DeepSpeed's counting: one dense step fewer.
    const OptimizerConfig ds =
        config(type, {{"freeze_step", 3}, {"compat_deepspeed_step_count", true}});
    EXPECT_EQ(schedule_at(ds, 2, layout(), 3).phase, Phase::kWarmup);
    EXPECT_EQ(schedule_at(ds, 3, layout(), 3).phase, Phase::kCompression);
  }
}

TEST(Schedule, PerTensorGranularityMakesOneCallPerTensor) {
  const CommSchedule s = schedule_at(
      config("OneBitAdam", {{"freeze_step", 0}, {"comm_granularity", "tensor"}}), 1, layout(), 2);
  ASSERT_EQ(s.calls.size(), 3u);
  EXPECT_EQ(s.calls[0].count, 96u);
  EXPECT_EQ(s.calls[1].count, 12u);
  EXPECT_EQ(s.calls[2].count, 42u);
}

TEST(Schedule, SkipPolicyAddsTheFlagAllreduceFirst) {
  for (const char* type : {"Adam", "Lamb", "OneBitAdam", "OneBitLamb", "ZeroOneAdam", "Slamb"}) {
    const CommSchedule s = schedule_at(config(type, {{"nonfinite", "skip"}}), 1, layout(), 2);
    ASSERT_GE(s.calls.size(), 1u);
    EXPECT_EQ(s.calls[0].kind, CollKind::kAllreduce) << type;
    EXPECT_EQ(s.calls[0].count, 1u) << type;
    EXPECT_EQ(s.calls[0].what, "nonfinite_flag");
    EXPECT_EQ(schedule_at(config(type), 1, layout(), 2).calls.size() + 1, s.calls.size()) << type;
  }
}

// κ = 2, var_freeze_step = 20: variance steps at 1, 2 (interval 1), 4, 6 (interval 2),
// 8, 12 (interval 4), 16 (interval 8). Phase 2 with local_step_scaler 3 and clipper 4:
// intervals 1,1,1, 2,2,2, 4,4,4, then capped at 4.
TEST(Schedule, ZeroOneAdamIntervalsDoubleAndCap) {
  const OptimizerConfig c = config("ZeroOneAdam", {{"var_freeze_step", 20},
                                                   {"var_update_scaler", 2},
                                                   {"local_step_scaler", 3},
                                                   {"local_step_clipper", 4}});
  std::set<int64_t> variance, sync;
  std::vector<int64_t> var_intervals, local_intervals;
  for (int64_t t = 1; t <= 36; ++t) {
    const CommSchedule s = schedule_at(c, t, layout(), 2);
    const ZeroOneAdamStep k = zero_one_adam_step(c.as<ZeroOneAdamParams>(), t);
    if (t <= 20) {
      var_intervals.push_back(k.var_interval);
      ASSERT_EQ(s.calls.size(), 1u);
      if (s.phase == Phase::kVarianceStep) {
        variance.insert(t);
        EXPECT_EQ(s.calls[0].kind, CollKind::kAllreduce);
      } else {
        EXPECT_EQ(s.phase, Phase::kCompression);
        EXPECT_EQ(s.calls[0].kind, CollKind::kCompressedAllreduce);
        EXPECT_EQ(s.calls[0].what, "grad");
      }
    } else {
      local_intervals.push_back(k.local_interval);
      if (s.phase == Phase::kSyncStep) {
        sync.insert(t);
        ASSERT_EQ(s.calls.size(), 1u);
        EXPECT_EQ(s.calls[0].kind, CollKind::kCompressedAllreduce);
      } else {
        EXPECT_EQ(s.phase, Phase::kLocalStep);
        EXPECT_TRUE(s.calls.empty());
      }
    }
  }
  EXPECT_EQ(variance, (std::set<int64_t>{1, 2, 4, 6, 8, 12, 16}));
  EXPECT_EQ(var_intervals,
            (std::vector<int64_t>{1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8}));
  EXPECT_EQ(sync, (std::set<int64_t>{21, 22, 23, 24, 26, 28, 32, 36}));
  EXPECT_EQ(local_intervals,
            (std::vector<int64_t>{1, 1, 1, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}));
}

// With DeepSpeed's clock (its initialisation call is step 1) the modulo tests see t + 1.
TEST(Schedule, ZeroOneAdamDeepSpeedClock) {
  const OptimizerConfig c = config("ZeroOneAdam", {{"var_freeze_step", 20},
                                                   {"var_update_scaler", 2},
                                                   {"local_step_scaler", 3},
                                                   {"local_step_clipper", 4},
                                                   {"compat_deepspeed_step_count", true}});
  std::set<int64_t> variance, sync;
  for (int64_t t = 1; t <= 36; ++t) {
    const Phase ph = schedule_at(c, t, layout(), 2).phase;
    if (ph == Phase::kVarianceStep) variance.insert(t);
    if (ph == Phase::kSyncStep) sync.insert(t);
  }
  EXPECT_EQ(variance, (std::set<int64_t>{1, 2, 3, 5, 7, 11, 15}));
  // clock = t + 1: intervals 1,1,1 (t 21–23), 2 (t 24–26: clocks 25–27), 4 from t 27.
  EXPECT_EQ(sync, (std::set<int64_t>{21, 22, 23, 25, 27, 31, 35}));
}

TEST(Schedule, ZeroOneAdamScheduleOfLateStepsIsCheap) {
  const OptimizerConfig c = config("ZeroOneAdam");
  const auto start = std::chrono::steady_clock::now();
  const ZeroOneAdamStep k = zero_one_adam_step(c.as<ZeroOneAdamParams>(), 100000);
  EXPECT_TRUE(k.phase1);
  EXPECT_GT(k.var_interval, 1000);  // 16 variance steps per doubling: 2^12 by step 100000
  const ZeroOneAdamStep late = zero_one_adam_step(c.as<ZeroOneAdamParams>(), 5'000'000'000);
  EXPECT_FALSE(late.phase1);
  EXPECT_EQ(late.local_interval, 16);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(Schedule, SlambExpectedCountAndParamSync) {
  const OptimizerConfig c =
      config("Slamb", {{"compress_ratio", 0.25}, {"grad_size_thr", 40}, {"local_steps", 5}});
  const auto& sp = c.as<SlambParams>();
  // b1 is 1-D: always synced; w1 (96) and w2 (42) are masked.
  EXPECT_EQ(slamb_small_elements(sp, layout()), 12u);
  EXPECT_EQ(slamb_expected_count(sp, layout()), 12u + 35u);  // round(0.25·138) = 35 (34.5 → 35)
  for (int64_t t = 1; t <= 12; ++t) {
    const CommSchedule s = schedule_at(c, t, layout(), 4);
    const bool sync = t == 1 || t == 6 || t == 11;
    EXPECT_EQ(s.phase, sync ? Phase::kSyncStep : Phase::kCompression) << t;
    ASSERT_EQ(s.calls.size(), sync ? 2u : 1u);
    EXPECT_EQ(s.calls[0].kind, CollKind::kSparseAllreduce);
    EXPECT_EQ(s.calls[0].dtype, DType::kF16);
    EXPECT_EQ(s.calls[0].count, 47u);
    if (sync) {
      EXPECT_EQ(s.calls[1].kind, CollKind::kAllreduce);
      EXPECT_EQ(s.calls[1].count, 150u);
      EXPECT_EQ(s.calls[1].dtype, DType::kF32);
    }
  }
  // With the default threshold of 9000 every tensor here is small: all elements synced.
  EXPECT_EQ(slamb_expected_count(config("Slamb").as<SlambParams>(), layout()), 150u);
  // local_steps = 1 syncs every step (the authors' `t % H == 1` would never fire).
  const OptimizerConfig every = config("Slamb", {{"local_steps", 1}});
  for (int64_t t = 1; t <= 3; ++t)
    EXPECT_EQ(schedule_at(every, t, layout(), 2).phase, Phase::kSyncStep);
}

TEST(Schedule, BytesOfAOneBitStepAreAThirtySecondOfFp32) {
  // The point of 1-bit Adam in numbers: at p = 4 and n = 2^20 a compressed step sends
  // (p−1)·n/(4p) + 8(p−1) bytes against 2(p−1)/p·n·4 for the dense warmup.
  ParamLayout big;
  big.add("w", 1 << 20, {1024, 1024});
  const OptimizerConfig c = config("OneBitAdam", {{"freeze_step", 1}});
  uint64_t warm = 0, comp = 0;
  for (const auto& call : schedule_at(c, 1, big, 4).calls)
    warm += make_plan(call, 4).bytes_sent_by(0);
  for (const auto& call : schedule_at(c, 2, big, 4).calls)
    comp += make_plan(call, 4).bytes_sent_by(0);
  EXPECT_EQ(warm, 2u * 3 * (1 << 20) / 4 * 4);
  EXPECT_EQ(comp, 3u * (1 << 20) / 16 + 24);
}

}  // namespace
}  // namespace clbo
