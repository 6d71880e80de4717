// Published values beside simulated ones (report/paper_rows.hpp): checked before any work,
// attached to the runs of the rows that carry them, with relative errors in percent.
#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/report/paper_rows.hpp"

using namespace clbo;
using nlohmann::json;

namespace {

json spec_with(json paper) {
  json row0 = {{"cluster", "c"}, {"gpus", 8}, {"paper", paper}, {"paper_source", "Table 1"}};
  json row1 = {{"cluster", "c"}, {"gpus", 16}};
  return {{"simulate",
           {{"optimizers", json::array({json::object(), json::object()})},
            {"rows", json::array({row0, row1})}}}};
}

json run(size_t point, double comm_ms, double step_ms) {
  return {
      {"point", point},
      {"step_kinds", json::array({{{"simulated", {{"comm_ms", comm_ms}, {"time_ms", step_ms}}}}})},
      {"simulated", {{"speedup", nullptr}}}};
}

}  // namespace

TEST(PaperRows, AttachesValuesAndErrorsToTheRunsOfEachRow) {
  json results = {
      {"config", spec_with({{"allreduce_ms", 100.0}, {"step_ms", 200.0}})},
      {"runs", json::array({run(0, 110, 190), run(0, 90, 210), run(1, 1, 2), run(1, 3, 4)})}};
  report::attach_paper_rows(results, "x.json");
  for (int r : {0, 1}) {  // both optimizers of row 0
    const json& run = results["runs"][r];
    EXPECT_EQ(run["paper"]["allreduce_ms"], 100.0);
    EXPECT_EQ(run["paper"]["source"], "Table 1");
  }
  EXPECT_NEAR(results["runs"][0]["simulated"]["error_pct_vs_paper"]["allreduce_ms"].get<double>(),
              10.0, 1e-9);
  EXPECT_NEAR(results["runs"][1]["simulated"]["error_pct_vs_paper"]["step_ms"].get<double>(), 5.0,
              1e-9);
  EXPECT_FALSE(results["runs"][2].contains("paper"));  // row 1 states nothing
  EXPECT_FALSE(results["runs"][3]["simulated"].contains("error_pct_vs_paper"));
}

TEST(PaperRows, UnknownQuantitiesAndNonNumbersAreInputErrors) {
  try {
    report::check_paper_rows(spec_with({{"allreduc_ms", 1.0}}), "x.json");
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "x.json");
    EXPECT_EQ(e.field(), "simulate.rows[0].paper.allreduc_ms");
    EXPECT_NE(std::string(e.what()).find("did you mean 'allreduce_ms'"), std::string::npos);
  }
  try {
    report::check_paper_rows(spec_with({{"step_ms", "fast"}}), "x.json");
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "simulate.rows[0].paper.step_ms");
  }
  EXPECT_NO_THROW(report::check_paper_rows(json::object(), "x.json"));
}
