// Non-finite gradients: detected before any communication; "error" names rank, step and
// element; "skip" makes every rank skip the step with no state change anywhere.
#include <limits>

#include "optim_test_util.hpp"

namespace clbo::test {
namespace {

const std::vector<std::pair<std::string, nlohmann::json>> kAll = {
    {"Adam", {{"lr", 0.01}}},
    {"Lamb", {{"lr", 0.01}}},
    {"OneBitAdam", {{"lr", 0.01}, {"freeze_step", 2}}},
    {"OneBitLamb", {{"lr", 0.01}, {"freeze_step", 2}}},
    {"ZeroOneAdam", {{"lr", 0.01}, {"var_freeze_step", 3}, {"var_update_scaler", 1}}},
    {"Slamb", {{"lr", 0.01}, {"grad_size_thr", 40}, {"local_steps", 2}, {"compress_ratio", 0.5}}},
    {"OneBitAdamNoErrorFeedback", {{"lr", 0.01}, {"freeze_step", 2}}},
    {"NaiveOneBitAdam", {{"lr", 0.01}, {"dense_steps", 1}}},
    {"NaiveOneBitLamb", {{"lr", 0.01}, {"freeze_step", 2}}},
};

// Gradients of iteration `iter` with a bad value on rank `bad_rank` at iteration `bad_iter`.
GradFn poisoned(const ParamLayout& l, int bad_rank, int64_t bad_iter, size_t index, float value) {
  return [=](int rank, int64_t iter) {
    std::vector<float> g = make_grad(l, rank, iter);
    if (rank == bad_rank && iter == bad_iter) g[index] = value;
    return g;
  };
}

TEST(Nonfinite, ErrorNamesRankStepAndElement) {
  for (const auto& [type, params] : kAll) {
    World w(block(type, params), test_layout(), 3);
    const GradFn fn = poisoned(w.layout, 1, 2, 100, std::numeric_limits<float>::quiet_NaN());
    w.step(fn);
    try {
      w.step(fn);
      FAIL() << type << ": no error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const char* part : {"rank 1", "step 2", "element 100", "tensor 'b1'", "nan", "skip"})
        EXPECT_NE(msg.find(part), std::string::npos) << type << ": " << msg << " lacks " << part;
    }
  }
}

TEST(Nonfinite, ErrorAtOneRankOnly) {
  // p = 1: no collective is involved at all.
  World w(block("OneBitAdam", {{"freeze_step", 0}}), test_layout(), 1);
  EXPECT_THROW(w.step(poisoned(w.layout, 0, 1, 0, std::numeric_limits<float>::infinity())), Error);
  EXPECT_EQ(w.opts[0]->steps_taken(), 0);
}

class SkipTest : public ::testing::TestWithParam<std::pair<std::string, nlohmann::json>> {};

TEST_P(SkipTest, SkippedStepChangesNothingOnAnyRank) {
  const auto& [type, base] = GetParam();
  nlohmann::json params = base;
  params["nonfinite"] = "skip";
  const int p = 3;
  World w(block(type, params), test_layout(), p);
  w.run(2);
  std::vector<std::string> states;
  for (auto& o : w.opts) states.push_back(saved_state(*o));
  const auto params_before = w.params;

  // Iteration 3 is poisoned on rank 2 only: every rank must skip it.
  const GradFn fn = poisoned(w.layout, 2, 3, 5, -std::numeric_limits<float>::infinity());
  const std::vector<uint64_t> sent = w.step(fn);
  for (int r = 0; r < p; ++r) {
    EXPECT_FALSE(w.stepped[r]) << "rank " << r;
    EXPECT_TRUE(bit_equal(w.params[r], params_before[r]));
    // The whole state is unchanged except the skipped-steps counter, which went 0 → 1.
    std::string after = saved_state(*w.opts[r]);
    const size_t at = skip_counter_offset(*w.opts[r], w.layout.num_tensors());
    EXPECT_EQ(skip_counter(states[r], at), 0u);
    EXPECT_EQ(skip_counter(after, at), 1u);
    after.replace(at, 8, std::string(8, '\0'));
    EXPECT_TRUE(after == states[r]) << type << " rank " << r << ": state changed";
    EXPECT_EQ(w.opts[r]->steps_taken(), 2);
    EXPECT_EQ(w.opts[r]->steps_skipped(), 1);
    // Only the flag allreduce went over the wire.
    EXPECT_EQ(sent[r],
              make_plan(CommCall{CollKind::kAllreduce, 1, DType::kF32, ""}, p).bytes_sent_by(r));
  }

  // Continuing equals a run that never saw the bad iteration.
  w.run(3);  // iterations 4, 5, 6 as steps 3, 4, 5
  World clean(block(type, params), test_layout(), p);
  const GradFn skip_third = [&](int rank, int64_t iter) {
    return make_grad(clean.layout, rank, iter >= 3 ? iter + 1 : iter);
  };
  for (int s = 0; s < 5; ++s) clean.step(skip_third);
  for (int r = 0; r < p; ++r) {
    EXPECT_TRUE(bit_equal(w.params[r], clean.params[r])) << type << " rank " << r;
    EXPECT_TRUE(w.stepped[r]);
  }
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, SkipTest, ::testing::ValuesIn(kAll),
                         [](const auto& info) { return info.param.first; });

}  // namespace
}  // namespace clbo::test
