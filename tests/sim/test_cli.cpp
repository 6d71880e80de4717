// `clbo simulate` end to end: results land atomically in the named file with a table on
// stdout; a bad experiment exits nonzero, names file, field and value, and writes nothing.
#include <gtest/gtest.h>

#include "cli_harness.hpp"
#include "sim_test_util.hpp"

using clbo::test::CliTest;

class SimulateCli : public CliTest {};

TEST_F(SimulateCli, WritesResultsAndPrintsATable) {
  nlohmann::json s = {{"name", "cli"},
                      {"simulate",
                       {{"workload", "bert-base-seq128"},
                        {"clusters", {"paper-ib-v100"}},
                        {"gpus", {8, 16}},
                        {"micro_batch", 16},
                        {"total_steps", 10},
                        {"optimizers", {{{"label", "Adam"}, {"optimizer", {{"type", "Adam"}}}}}}}}};
  write_json("exp.json", s);
  const auto r = run({"simulate", path("exp.json"), "-o", path("out/res.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json res = nlohmann::json::parse(clbo::test::slurp(path("out/res.json")));
  EXPECT_EQ(res["runs"].size(), 2u);
  EXPECT_NE(r.out.find("samples/s"), std::string::npos);
  EXPECT_NE(r.out.find("paper-ib-v100"), std::string::npos);
  EXPECT_NE(r.err.find("2/2"), std::string::npos);  // progress
  EXPECT_EQ(r.err.find("[0.0"), std::string::npos) << "SimGrid log leaked: " << r.err;
}

TEST_F(SimulateCli, BadInputExitsNonzeroAndWritesNothing) {
  nlohmann::json s = {{"simulate",
                       {{"workload", "bert-base-seq128"},
                        {"clusters", {"paper-ib-v100"}},
                        {"gpus", {12}},
                        {"micro_batch", 16},
                        {"optimizers", {{{"label", "Adam"}, {"optimizer", {{"type", "Adam"}}}}}}}}};
  write_json("bad.json", s);
  const auto r = run({"simulate", path("bad.json"), "-o", path("res.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("simulate.gpus[0]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("12"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("res.json")));
}
