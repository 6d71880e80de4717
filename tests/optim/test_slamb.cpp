// SLAMB specifics: ranks agree bit for bit after each parameter sync (and drift apart in
// between), and the exact compacted count of the schedule is the mask's popcount.
#include "clbo/core/philox.hpp"
#include "clbo/schedule/schedule.hpp"
#include "optim_test_util.hpp"

namespace clbo::test {
namespace {

const nlohmann::json kParams = {
    {"lr", 0.01},          {"weight_decay", 0.01}, {"compress_ratio", 0.3},
    {"grad_size_thr", 40}, {"local_steps", 3},     {"seed", 11}};

TEST(Slamb, RanksAgreeBitwiseAfterEverySyncStep) {
  for (const char* wire : {"fp16", "fp32"}) {
    nlohmann::json params = kParams;
    params["comm_dtype"] = wire;
    World w(block("Slamb", params), test_layout(), 3);
    int diverged = 0;
    for (int t = 1; t <= 10; ++t) {
      w.step();
      const bool sync = (t - 1) % 3 == 0;
      bool all_equal = true;
      for (int r = 1; r < 3; ++r) all_equal = all_equal && bit_equal(w.params[r], w.params[0]);
      if (sync)
        EXPECT_TRUE(all_equal) << wire << " step " << t;
      else
        diverged += all_equal ? 0 : 1;
    }
    // Between syncs the local updates differ, or the sync test above proves nothing.
    EXPECT_EQ(diverged, 6) << wire;
  }
}

TEST(Slamb, ExactCountIsTheMaskPopcount) {
  World w(block("Slamb", kParams), test_layout(), 2);
  const ParamLayout& l = w.layout;
  const uint64_t threshold = mask_threshold(0.3);
  size_t total = 0;
  for (int64_t t = 1; t <= 20; ++t) {
    size_t want = 0;
    for (size_t k = 0; k < l.num_tensors(); ++k)
      for (size_t i = l[k].offset; i < l[k].offset + l[k].size; ++i) {
        const Philox4x32 x = philox4x32_10(uint32_t(i / 4), 0, uint32_t(t), 0, 11, 0);
        want += l.ndim(k) == 1 || l[k].size < 40 || x.v[i % 4] < threshold ? 1 : 0;
      }
    const CommSchedule s = w.opts[1]->comm_schedule(t);
    ASSERT_EQ(s.calls[0].kind, CollKind::kSparseAllreduce);
    EXPECT_EQ(s.calls[0].count, want) << t;
    EXPECT_EQ(w.opts[0]->comm_schedule(t).calls[0].count, want);  // same on every rank
    total += want;
  }
  // The expected count of the config library is the mean of the exact ones.
  const double expected =
      static_cast<double>(slamb_expected_count(w.opts[0]->config().as<SlambParams>(), l));
  EXPECT_NEAR(static_cast<double>(total) / 20.0, expected, 6.0);
}

TEST(Slamb, SmallTensorsAreAlwaysSynced) {
  // Without shapes every tensor counts as 1-D: the whole buffer is averaged every step, so
  // ranks hold identical momenta and, with identical gradients, identical params.
  ParamLayout flat = ParamLayout::from_sizes({100, 50});
  World w(block("Slamb", kParams), flat, 3);
  for (int t = 1; t <= 4; ++t) {
    EXPECT_EQ(w.opts[0]->comm_schedule(t).calls[0].count, 150u);
    w.step([&](int, int64_t iter) { return make_grad(flat, 0, iter); });
    EXPECT_TRUE(bit_equal(w.params[1], w.params[0]));
    EXPECT_TRUE(bit_equal(w.params[2], w.params[0]));
  }
}

}  // namespace
}  // namespace clbo::test
