// `clbo plot`: draws the paper figures (report/plots/plot_all.py, matplotlib) from a results
// directory, or with a PATH the figures that fit each results file in it. The scripts are found in
// ./report/plots when run from a checkout, else in the source tree this binary was built from
// (CLBO_SOURCE_DIR). Returns the script's exit code.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "clbo/core/error.hpp"
#include "cli.hpp"

#ifndef CLBO_SOURCE_DIR
#define CLBO_SOURCE_DIR "."
#endif

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct PlotArgs {
  std::string path;  // a results file or folder: the figures that fit each file
  std::string results = "results", out = "figures", python = "/usr/bin/python3", specs;
  std::vector<std::string> only;
  bool skip_missing = false;
};

fs::path find_plot_all() {
  for (const fs::path& dir :
       {fs::current_path() / "report" / "plots", fs::path(CLBO_SOURCE_DIR) / "report" / "plots"}) {
    if (fs::is_regular_file(dir / "plot_all.py")) return dir / "plot_all.py";
  }
  throw clbo::InputError("clbo plot", "scripts", "report/plots/plot_all.py",
                         "not found in ./report/plots nor in the source tree " +
                             std::string(CLBO_SOURCE_DIR) +
                             "/report/plots; run from the repository");
}

// A python given as a bare name is looked up in PATH, as a shell would.
std::string resolve_python(const std::string& python) {
  if (python.find('/') != std::string::npos)
    return ::access(python.c_str(), X_OK) == 0 ? python : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / python;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return {};
}

int run(const PlotArgs& a) {
  const std::string python = resolve_python(a.python);
  if (python.empty())
    throw clbo::InputError("clbo plot", "--python", a.python,
                           "no such interpreter; install Debian's python3 and "
                           "python3-matplotlib (apt-get install python3-matplotlib)");
  std::vector<std::string> all{python, find_plot_all().string()};
  if (a.path.empty()) {
    all.insert(all.end(), {"--results", a.results});
  } else {
    // Checked here so the message names the argument before Python starts.
    std::error_code ec;
    if (!fs::exists(a.path, ec))
      throw clbo::InputError("clbo plot", "PATH", a.path, "no such results file or folder");
    all.push_back(a.path);
  }
  all.insert(all.end(), {"--out", a.out});
  if (!a.specs.empty()) all.insert(all.end(), {"--specs", a.specs});
  for (const auto& name : a.only) {
    all.push_back("--only");
    all.push_back(name);
  }
  if (a.skip_missing) all.push_back("--skip-missing");
  // The scripts live in the source tree; keep it free of __pycache__.
  ::setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
  clbo::cli::progress("plotting " + (a.path.empty() ? a.results : a.path) + " -> " + a.out + " (" +
                      all[1] + ")");
  const int code = clbo::cli::run_attached(all, "clbo plot");
  if (code == 0) return 0;
  // plot_all.py exits 2 without matplotlib after printing which package to install; any
  // other failure of the interpreter is named here, since it may have printed nothing.
  std::cerr << "clbo: error: plot: the interpreter --python " << python << " "
            << clbo::cli::describe_exit(code) << " running " << all[1]
            << " (its own messages, if any, are above)" << std::endl;
  return code;
}

clbo::cli::Registrar reg(
    "plot",
    "Draw the paper figures (PNG and SVG) from results/, or the figures that fit any results "
    "file or folder, with matplotlib (see docs/plots.md)",
    [](CLI::App& sub) {
      auto args = std::make_shared<PlotArgs>();
      sub.add_option("path", args->path,
                     "a results file or folder (yours): draw every figure that fits each "
                     "results file in it, named <file>-<figure>, instead of the paper figures");
      sub.add_option("--results", args->results,
                     "results directory with the paper figures' inputs (without PATH)")
          ->capture_default_str();
      sub.add_option("--specs", args->specs,
                     "claim specs whose published values the figures overlay (default: "
                     "./experiments/paper, else the source tree's)");
      sub.add_option("-o,--out", args->out, "where to write the figures")->capture_default_str();
      sub.add_option("--python", args->python,
                     "Python interpreter with matplotlib (Debian's python3-matplotlib)")
          ->capture_default_str();
      sub.add_option("--only", args->only, "draw only these figures (names: plot_all.py --help)");
      sub.add_flag("--skip-missing", args->skip_missing,
                   "skip figures whose input file is missing instead of failing");
      sub.footer(
          "Without PATH: the paper figures of report/plots/plot_all.py's FIGURES table from "
          "--results (a missing input is an error naming it, unless --skip-missing). With "
          "PATH: every results file in it (or PATH itself) is checked first, a file that is "
          "not a clbo result is an error naming it, and each gets the figures its schema "
          "fits: throughput, speedup, volume, breakdown and calibration for simulations, "
          "convergence for training, roofline for kernel benchmarks, collectives for "
          "collective sweeps, validation for "
          "clbo validate. Published points are drawn where a claim spec reads that very "
          "simulation.");
      return [args] { return run(*args); };
    });

}  // namespace
