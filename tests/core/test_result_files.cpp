// The one rule from experiment file to results file, and the timing-free comparison every
// determinism test uses.
#include "clbo/core/result_files.hpp"

#include <gtest/gtest.h>

using clbo::default_results_path;
using nlohmann::json;

TEST(ResultFiles, ExperimentsFolderBecomesResults) {
  EXPECT_EQ(default_results_path("experiments/convergence/lamb.json"),
            "results/convergence/lamb.json");
  EXPECT_EQ(default_results_path("experiments/x.json"), "results/x.json");
  EXPECT_EQ(default_results_path("/a/b/experiments/x/y.json"), "/a/b/results/x/y.json");
  EXPECT_EQ(default_results_path("./experiments/sim/../sim/s.json"), "results/sim/s.json");
}

TEST(ResultFiles, TheLastExperimentsFolderCounts) {
  EXPECT_EQ(default_results_path("/home/experiments/clbo/experiments/paper/t.json"),
            "/home/experiments/clbo/results/paper/t.json");
}

TEST(ResultFiles, OtherPathsGoToResultsByFileName) {
  EXPECT_EQ(default_results_path("/tmp/custom.json"), "results/custom.json");
  EXPECT_EQ(default_results_path("mine.json"), "results/mine.json");
  // A file named "experiments" is not a folder of experiments.
  EXPECT_EQ(default_results_path("a/experiments"), "results/experiments");
}

TEST(ResultFiles, WithoutTimingRemovesTimingAtEveryDepthOnly) {
  const json doc = {{"timing", {{"wall_s", 1.5}}},
                    {"runs", {{{"x", 1}, {"timing", 2}}, {{"y", {{"timing", 3}, {"z", 4}}}}}},
                    {"timing_note", "kept"}};
  const json expected = {{"runs", {{{"x", 1}}, {{"y", {{"z", 4}}}}}}, {"timing_note", "kept"}};
  EXPECT_EQ(clbo::without_timing(doc), expected);
}
