// `clbo simulate [experiments/X.json]`: simulates an experiment on SimGrid clusters and
// writes results/X.json (atomically), then prints a table. Without a file it runs the
// default sweep compiled into the binary (experiments/sim/default-sweep.json).
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "clbo/core/config.hpp"
#include "clbo/core/result_files.hpp"
#include "clbo/core/results.hpp"
#include "clbo/report/paper_rows.hpp"
#include "clbo/sim/experiment.hpp"
#include "clbo/sim/presets.hpp"
#include "clbo/sim/results_json.hpp"
#include "cli.hpp"

namespace {

struct Args {
  std::string experiment, output;
  bool quiet = false, check = false;
};

void progress_bar(int done, int total, const std::string& label) {
  const int width = 30;
  const int filled = total > 0 ? done * width / total : width;
  const std::string bar = std::string(static_cast<size_t>(filled), '#') +
                          std::string(static_cast<size_t>(width - filled), '.');
  if (::isatty(STDERR_FILENO)) {
    std::fprintf(stderr, "\r[clbo] [%s] %d/%d %-40s", bar.c_str(), done, total, label.c_str());
    if (done == total) std::fprintf(stderr, "\n");
  } else {
    std::fprintf(stderr, "[clbo] [%s] %d/%d %s\n", bar.c_str(), done, total, label.c_str());
  }
  std::fflush(stderr);
}

int run(const Args& a) {
  nlohmann::json spec;
  std::string file = a.experiment, out = a.output;
  if (file.empty()) file = clbo::sim::preset_path("sim", "default-sweep");
  if (out.empty()) out = clbo::default_results_path(file);
  // The output first: a run never fails at its end for a reason known at its start.
  clbo::check_output_path(out, a.output.empty() ? "output (the default for EXPERIMENT)" : "--out",
                          {{"EXPERIMENT", a.experiment}});
  if (a.experiment.empty())
    spec = clbo::sim::preset_json("sim", "default-sweep", "<command line>", "experiment");
  else
    spec = clbo::load_json_file(file);
  // Everything is checked before any work: the simulate block, then the published values
  // its rows carry.
  for (const auto& w : clbo::sim::validate_experiment(spec, file))
    std::cerr << "clbo: warning: " << w << std::endl;
  clbo::report::check_paper_rows(spec, file);
  if (a.check) {
    std::cout << file << ": ok (output: " << out << ")" << std::endl;
    return 0;
  }
  clbo::sim::SimulateOptions opt;
  if (!a.quiet) opt.progress = progress_bar;
  if (!a.quiet) clbo::cli::progress("simulating " + file);
  nlohmann::json results = clbo::sim::simulate_experiment(spec, file, opt);
  clbo::report::attach_paper_rows(results, file);
  clbo::write_json_atomic(out, results);
  std::cout << clbo::sim::results_table(results);
  std::cout << "wrote " << out << " (simulated in " << results["timing"]["wall_s"].get<double>()
            << " s)" << std::endl;
  return 0;
}

clbo::cli::Registrar reg("simulate",
                         "Simulate training on a SimGrid cluster model (see docs/simulator.md)",
                         [](CLI::App& sub) {
                           auto args = std::make_shared<Args>();
                           sub.add_option("experiment", args->experiment,
                                          "experiment JSON (default: the built-in sweep)");
                           sub.add_option("-o,--out", args->output,
                                          "results file (default: results/<path under "
                                          "experiments/>)");
                           sub.add_flag("-q,--quiet", args->quiet, "no progress output");
                           sub.add_flag("--check", args->check,
                                        "only validate the experiment (every field, presets, "
                                        "referenced files); simulate nothing, write nothing");
                           return [args] { return run(*args); };
                         });

}  // namespace
