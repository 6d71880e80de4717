// Calibration: experiments/sim/table1-calibration.json reproduces every row of Table 1
// (docs/reference/published.md) within ±15% for the allreduce and the step time, with the fitted
// parameters documented in docs/simulator.md.
#include <gtest/gtest.h>

#include "clbo/core/config.hpp"
#include "clbo/report/paper_rows.hpp"
#include "clbo/sim/experiment.hpp"

using namespace clbo;

TEST(Calibration, Table1RowsWithin15Percent) {
  const std::string file =
      std::string(CLBO_SOURCE_DIR) + "/experiments/sim/table1-calibration.json";
  nlohmann::json results = sim::simulate_experiment(load_json_file(file), file);
  report::attach_paper_rows(results, file);
  ASSERT_EQ(results["runs"].size(), 13u);
  for (const auto& run : results["runs"]) {
    const auto& err = run["simulated"]["error_pct_vs_paper"];
    const std::string row = run["cluster"].get<std::string>() + " " +
                            std::to_string(run["gpus"].get<int>()) + " GPUs, batch/GPU " +
                            std::to_string(run["micro_batch"].get<int>()) + ", grad-acc " +
                            std::to_string(run["grad_acc"].get<int>());
    for (const char* key : {"allreduce_ms", "step_ms", "fwd_ms", "bwd_ms", "optimizer_ms"})
      EXPECT_LE(std::abs(err[key].get<double>()), 15.0) << row << " " << key;
    EXPECT_EQ(run["paper"]["allreduce_ms"].is_number(), true);
  }
}
