// Random-shift augmentation (train/include/clbo/train/augment.hpp): the shift itself against a
// hand-written expectation, the offsets' range, spread and keying, and the trainer with it:
// the same bits on any thread count, a different training than without it, recorded in the
// result, and bad values refused by name.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/core/result_files.hpp"
#include "clbo/train/augment.hpp"
#include "clbo/train/trainer.hpp"
#include "synthetic.hpp"

using namespace clbo::train;
using nlohmann::json;

TEST(TrainAugment, ShiftMovesThePictureAndFillsTheEdge) {
  // 3 rows x 4 cols, pixel (i, j) = 10 i + j.
  std::vector<float> in(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) in[static_cast<size_t>(i * 4 + j)] = static_cast<float>(10 * i + j);
  const float F = -7.f;
  const auto shifted = [&](int dx, int dy) {
    std::vector<float> out(12, 99.f);
    shift_image(in.data(), 3, 4, {dx, dy}, F, out.data());
    return out;
  };
  EXPECT_EQ(shifted(0, 0), in);
  // One right: column 0 is fill, column j holds the old column j - 1.
  EXPECT_EQ(shifted(1, 0), (std::vector<float>{F, 0, 1, 2, F, 10, 11, 12, F, 20, 21, 22}));
  // One up (dy = -1): row i holds the old row i + 1, the last row is fill.
  EXPECT_EQ(shifted(0, -1), (std::vector<float>{10, 11, 12, 13, 20, 21, 22, 23, F, F, F, F}));
  // Two left and one down.
  EXPECT_EQ(shifted(-2, 1), (std::vector<float>{F, F, F, F, 2, 3, F, F, 12, 13, F, F}));
  // Further than the picture: all fill.
  EXPECT_EQ(shifted(4, 0), std::vector<float>(12, F));
}

TEST(TrainAugment, OffsetsCoverTheSquareEvenlyAndFollowTheirKey) {
  std::map<std::pair<int, int>, int> count;
  const int n = 25000;
  for (int pos = 0; pos < n; ++pos) {
    const PixelShift s = random_pixel_shift(7, 3, static_cast<uint64_t>(pos), 2);
    ASSERT_GE(s.dx, -2);
    ASSERT_LE(s.dx, 2);
    ASSERT_GE(s.dy, -2);
    ASSERT_LE(s.dy, 2);
    ++count[{s.dx, s.dy}];
  }
  ASSERT_EQ(count.size(), 25u);
  for (const auto& [offset, c] : count) {  // 1000 expected each; 5 sigma is about 155
    EXPECT_GT(c, 840) << offset.first << "," << offset.second;
    EXPECT_LT(c, 1160) << offset.first << "," << offset.second;
  }
  // A pure function of (seed, step, position); each of the three changes the draws.
  const auto draws = [](uint64_t seed, uint64_t step, uint64_t first) {
    std::vector<std::pair<int, int>> v;
    for (uint64_t pos = first; pos < first + 64; ++pos) {
      const PixelShift s = random_pixel_shift(seed, step, pos, 3);
      v.emplace_back(s.dx, s.dy);
    }
    return v;
  };
  EXPECT_EQ(draws(1, 2, 0), draws(1, 2, 0));
  EXPECT_NE(draws(1, 2, 0), draws(2, 2, 0));
  EXPECT_NE(draws(1, 2, 0), draws(1, 3, 0));
  EXPECT_NE(draws(1, 2, 0), draws(1, 2, 64));
  EXPECT_NE(draws(1, uint64_t{1} << 32, 0), draws(1, 0, 0));  // the step's high word counts
  EXPECT_THROW(random_pixel_shift(1, 2, 3, 9), std::invalid_argument);
  EXPECT_THROW(random_pixel_shift(1, 2, 3, -1), std::invalid_argument);
  // No shift asked for: none drawn.
  const PixelShift none = random_pixel_shift(1, 2, 3, 0);
  EXPECT_EQ(none.dx, 0);
  EXPECT_EQ(none.dy, 0);
}

namespace {

const FashionMnist& data() {
  static const FashionMnist d = synthetic::synthetic_fashion();
  return d;
}

json experiment(int shift) {
  json j = json::parse(R"({
    "model": "mlp_small", "batch_size": 128, "workers": 2, "steps": 6, "eval_every": 3,
    "micro_batch": 16, "seeds": [3],
    "runs": [{"label": "Adam", "optimizer": {"type": "Adam", "params": {"lr": 0.002}}},
             {"label": "1-bit Adam", "baseline": "Adam", "freeze_fraction": 0.5,
              "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002, "eps": 1e-6}}}]
  })");
  if (shift >= 0) j["random_shift"] = shift;
  return j;
}

json train(const json& j, int threads) {
  TrainOptions opts;
  opts.threads = threads;
  return train_experiment(parse_experiment(j, "aug.json", data().train.n), data(), opts);
}

}  // namespace

TEST(TrainAugment, ShiftedTrainingIsDeterministicRecordedAndDifferent) {
  const json one = clbo::without_timing(train(experiment(2), 1));
  const json three = clbo::without_timing(train(experiment(2), 3));
  EXPECT_EQ(one.dump(), three.dump());  // whole workers on 1 thread, chunks split over threads on 3
  ASSERT_EQ(one["status"], "complete");
  EXPECT_EQ(one["resolved"]["random_shift_pixels"], 2);

  const json plain = clbo::without_timing(train(experiment(-1), 2));
  EXPECT_FALSE(plain["resolved"].contains("random_shift_pixels"));
  // 0 is the default: the same document as without the field, config aside.
  json zero = clbo::without_timing(train(experiment(0), 2));
  zero["config"].erase("random_shift");
  EXPECT_EQ(zero.dump(), plain.dump());
  // The shifted run trains on other inputs: its very first loss differs.
  EXPECT_NE(one["runs"][0]["train_loss"][0], plain["runs"][0]["train_loss"][0]);
}

TEST(TrainAugment, BadShiftsAreRefusedByName) {
  for (const json& bad : {json(9), json(-1), json(1.5), json("2")}) {
    json j = experiment(0);
    j["random_shift"] = bad;
    try {
      parse_experiment(j, "aug.json", 60000);
      ADD_FAILURE() << "accepted random_shift = " << bad.dump();
    } catch (const clbo::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("random_shift"), std::string::npos) << e.what();
    }
  }
}
