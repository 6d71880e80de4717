// The smoke subset of the convergence engine on the real Fashion-MNIST package: it must learn
// (accuracy far above the 10% of chance) and be deterministic (same document, timing aside,
// for a different thread count).
#include <gtest/gtest.h>

#include "clbo/core/result_files.hpp"
#include "clbo/train/trainer.hpp"

using namespace clbo::train;

TEST(TrainSmoke, LearnsFashionMnistDeterministically) {
  if (find_idx_file(kFashionMnistDefaultDir, "train-images-idx3-ubyte").empty())
    FAIL() << "Fashion-MNIST is missing: apt-get install " << kFashionMnistPackage;
  const FashionMnist data = load_fashion_mnist("");
  const ExperimentSpec spec =
      load_experiment(std::string(CLBO_SOURCE_DIR) + "/experiments/convergence/smoke.json");
  TrainOptions two, one;
  two.threads = 2;
  one.threads = 1;
  const nlohmann::json a = train_experiment(spec, data, two);
  ASSERT_EQ(a["status"], "complete") << a["error"];
  for (const auto& run : a["runs"]) {
    SCOPED_TRACE(run["label"].get<std::string>());
    EXPECT_GT(run["final_test_accuracy"].get<double>(), 0.70);
    EXPECT_LT(run["final_train_loss"].get<double>(), run["train_loss"][0].get<double>() / 2);
  }
  const nlohmann::json b = train_experiment(spec, data, one);
  EXPECT_EQ(clbo::without_timing(a).dump(), clbo::without_timing(b).dump());
}
