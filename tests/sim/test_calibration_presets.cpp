// The Table 1 presets are the output of one `clbo calibrate` call each
// (experiments/calibration/): rerunning the calibration writes the committed preset exactly,
// so no fitted number is typed by hand. About two CPU minutes: its own binary, label slow.
#include <gtest/gtest.h>

#include "clbo/core/config.hpp"
#include "clbo/sim/calibration.hpp"

using namespace clbo;

TEST(CalibrationPresets, CommittedTable1PresetsAreWhatCalibrateWrites) {
  for (const char* name : {"paper-eth-v100", "paper-ib-v100"}) {
    // The relative path is what the committed preset records, as `clbo calibrate` run from
    // the source tree writes it.
    const std::string input = std::string("experiments/calibration/") + name + ".json";
    const sim::CalibrationResult r =
        sim::calibrate(load_json_file(std::string(CLBO_SOURCE_DIR) + "/" + input), input);
    const nlohmann::json committed =
        load_json_file(std::string(CLBO_SOURCE_DIR) + "/experiments/clusters/" + name + ".json");
    EXPECT_EQ(r.preset, committed)
        << name << ": rerun `clbo calibrate " << input << " -o experiments/clusters/" << name
        << ".json` from the source tree and commit the preset";
    EXPECT_LE(r.worst_residual_pct, 15.0) << name;
  }
}
