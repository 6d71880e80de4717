// Bit-identities between optimizers that docs/reference/algorithms.md says must coincide: before
// freeze_step, 1-bit Adam and 1-bit LAMB are Adam and LAMB without bias correction.
#include "optim_test_util.hpp"

namespace clbo::test {
namespace {

const nlohmann::json kHyper = {
    {"lr", 0.01}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.01}};

nlohmann::json with_hyper(nlohmann::json extra) {
  nlohmann::json p = kHyper;
  p.update(extra);
  return p;
}

// Runs both configs side by side; params must be bit-identical on every rank for the first
// `same` steps, and differ somewhere after step `same + 1` (or the test could not fail).
void expect_identical_warmup(const nlohmann::json& a, const nlohmann::json& b, int p, int same) {
  World wa(a, test_layout(), p), wb(b, test_layout(), p);
  for (int s = 1; s <= same; ++s) {
    wa.step();
    wb.step();
    for (int r = 0; r < p; ++r)
      ASSERT_TRUE(bit_equal(wa.params[r], wb.params[r])) << "step " << s << " rank " << r;
  }
  wa.step();
  wb.step();
  EXPECT_FALSE(bit_equal(wa.params[0], wb.params[0]))
      << "the first compressed step changed nothing";
}

class WarmupTest : public ::testing::TestWithParam<int> {};

TEST_P(WarmupTest, OneBitAdamWarmupIsAdamWithoutBiasCorrection) {
  expect_identical_warmup(block("OneBitAdam", with_hyper({{"freeze_step", 5}})),
                          block("Adam", with_hyper({{"bias_correction", false}})), GetParam(), 5);
}

TEST_P(WarmupTest, OneBitLambWarmupIsLambWithoutBiasCorrection) {
  expect_identical_warmup(
      block("OneBitLamb", with_hyper({{"freeze_step", 5}, {"max_coeff", 0.3}})),
      block("Lamb", with_hyper({{"bias_correction", false}, {"max_coeff", 0.3}})), GetParam(), 5);
}

TEST_P(WarmupTest, DeepSpeedStepCountRunsOneDenseStepFewer) {
  expect_identical_warmup(
      block("OneBitAdam", with_hyper({{"freeze_step", 5}, {"compat_deepspeed_step_count", true}})),
      block("Adam", with_hyper({{"bias_correction", false}})), GetParam(), 4);
  expect_identical_warmup(
      block("OneBitLamb", with_hyper({{"freeze_step", 5}, {"compat_deepspeed_step_count", true}})),
      block("Lamb", with_hyper({{"bias_correction", false}})), GetParam(), 4);
}

// With κ larger than the phase, every phase-1 step of 0/1 Adam is a variance step.
TEST_P(WarmupTest, ZeroOneAdamVarianceStepsAreAdamWithoutBiasCorrection) {
  expect_identical_warmup(
      block("ZeroOneAdam", with_hyper({{"var_freeze_step", 6}, {"var_update_scaler", 100}})),
      block("Adam", with_hyper({{"bias_correction", false}})), GetParam(), 6);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, WarmupTest, ::testing::Values(1, 3), world_size_name);

TEST(Equivalence, KeepingThePaddingTailChangesLaterSteps) {
  // The tail only enters from the second compressed step on (it starts at zero).
  const auto base = with_hyper({{"freeze_step", 2}});
  auto compat = base;
  compat["compat_keep_padding_tail"] = true;
  World a(block("OneBitLamb", base), test_layout(), 3),
      b(block("OneBitLamb", compat), test_layout(), 3);
  for (int s = 1; s <= 3; ++s) a.step(), b.step();
  EXPECT_TRUE(bit_equal(a.params[0], b.params[0]));
  for (int s = 4; s <= 6; ++s) a.step(), b.step();
  EXPECT_FALSE(bit_equal(a.params[0], b.params[0]));
}

TEST(Equivalence, MomentumMaskFreezesMaskedCoordinates) {
  // No weight decay: a zero momentum leaves the parameter where it is.
  const auto cfg = block("OneBitAdam", {{"lr", 0.01}, {"freeze_step", 2}});
  World w(cfg, test_layout(), 3);
  std::vector<float> mask(w.layout.total(), 1.0f);
  const size_t b_begin = w.layout[1].offset, b_end = b_begin + w.layout[1].size;
  for (size_t i = b_begin; i < b_end; ++i) mask[i] = 0.0f;
  for (auto& o : w.opts) o->set_momentum_mask(mask);
  w.run(2);  // warmup moves everything
  const std::vector<float> after_warmup = w.params[0];
  w.run(3);
  for (size_t i = 0; i < w.layout.total(); ++i) {
    if (i >= b_begin && i < b_end)
      EXPECT_EQ(w.params[0][i], after_warmup[i]) << i;
    else
      EXPECT_NE(w.params[0][i], after_warmup[i]) << i;
  }
  World plain(block("Adam", {{"lr", 0.01}}), test_layout(), 1);
  EXPECT_THROW(plain.opts[0]->set_momentum_mask(mask), Error);
  EXPECT_THROW(w.opts[0]->set_momentum_mask(std::vector<float>(3, 1.0f)), InputError);
}

}  // namespace
}  // namespace clbo::test
