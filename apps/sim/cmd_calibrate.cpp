// `clbo calibrate X.json -o fitted.json`: fits a cluster preset to measurements by running
// the simulator (docs/calibration.md) and writes the preset atomically, with the parameters
// fitted, the measurements used and each residual. A poor fit is a warning; a fit that
// cannot be made, or bad input, is an error and nothing is written.
#include <fmt/format.h>

#include <iostream>

#include "clbo/core/config.hpp"
#include "clbo/core/results.hpp"
#include "clbo/sim/calibration.hpp"
#include "cli.hpp"

namespace {

struct Args {
  std::string input, output, cluster;
  bool quiet = false;
};

int run(const Args& a) {
  const nlohmann::json input = clbo::load_json_file(a.input);
  clbo::sim::CalibrationOptions opt;
  if (!a.cluster.empty()) opt.cluster_override = a.cluster;
  if (!a.quiet) opt.progress = [](const std::string& s) { clbo::cli::progress(s); };
  if (!a.quiet) clbo::cli::progress("calibrating " + a.input);
  const clbo::sim::CalibrationResult r = clbo::sim::calibrate(input, a.input, opt);
  for (const auto& w : r.warnings) std::cerr << "clbo: warning: " << w << std::endl;
  clbo::write_json_atomic(a.output, r.preset);
  const nlohmann::json& cal = r.preset["calibration"];
  std::cout << fmt::format("{:<60} {:>12} {:>12} {:>9}\n", "measurement", "measured", "simulated",
                           "residual");
  for (const auto& row : cal["residuals"])
    std::cout << fmt::format("{:<60} {:>12.4g} {:>12.4g} {:>+8.2f}%\n",
                             row["setting"].get<std::string>().substr(0, 60),
                             row["measured"].get<double>(), row["simulated"].get<double>(),
                             row["residual_pct"].get<double>());
  for (const auto& p : cal["parameters"])
    std::cout << fmt::format("fitted {} = {}\n", p["field"].get<std::string>(), p["value"].dump());
  std::cout << fmt::format("worst residual {:.2f}%; wrote {}\n", r.worst_residual_pct, a.output);
  return 0;
}

clbo::cli::Registrar reg(
    "calibrate",
    "Fit a cluster preset to measured step times, allreduce times or nccl-tests output by "
    "running the simulator (see docs/calibration.md)",
    [](CLI::App& sub) {
      auto args = std::make_shared<Args>();
      sub.add_option("input", args->input,
                     "calibration JSON: name, cluster, measurements (docs/calibration.md)")
          ->required();
      sub.add_option("-o,--out", args->output, "the fitted cluster preset to write")->required();
      sub.add_option("--cluster", args->cluster,
                     "base cluster instead of the input's: a preset name or a cluster JSON path");
      sub.add_flag("-q,--quiet", args->quiet, "no progress output");
      return [args] { return run(*args); };
    });

}  // namespace
