// `clbo train`'s options and its run, shared by the clbo binary (local backend) and
// clbo_train_mpi (one worker per MPI rank; `clbo train --backend mpi` execs it, since MPI
// must not share a process with the simulator's SimGrid).
#pragma once
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/output_file.hpp"
#include "clbo/core/result_files.hpp"
#include "clbo/core/results.hpp"
#include "clbo/kernels/gemm.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "clbo/train/fashion_mnist.hpp"
#include "clbo/train/summary.hpp"
#include "clbo/train/trainer.hpp"
#include "cli_integer.hpp"

namespace clbo::cli {

struct TrainArgs {
  std::vector<std::string> inputs;
  std::string out, data_dir, backend = "local", gemm = "auto", ds_config;
  int threads = 2;
  bool summary = false, quiet = false, check = false;
};

inline void add_train_options(CLI::App& sub, TrainArgs& a, bool with_backend) {
  sub.add_option("inputs", a.inputs,
                 "experiment JSON (experiments/convergence/X.json), or result files with "
                 "--summary");
  sub.add_option("--ds-config", a.ds_config,
                 "a whole DeepSpeed config: its optimizer beside the uncompressed twin, its "
                 "batch on the experiment's workers, its scheduler's total_num_steps as the run "
                 "length unless the experiment gives one (the experiment is optional then)");
  sub.add_option("-o,--out", a.out,
                 "output path (default: experiments/<dir>/X.json -> results/<dir>/X.json; "
                 "with --summary: stdout)");
  sub.add_option("--data-dir", a.data_dir,
                 std::string("folder with the Fashion-MNIST IDX files (default: ") +
                     train::kFashionMnistDefaultDir + ", from the Debian package " +
                     train::kFashionMnistPackage + ")");
  sub.add_option("--threads", a.threads,
                 "threads for gradients and evaluation, per process (results do not depend "
                 "on it)")
      ->transform(decimal_integer<int>())
      ->default_val(2);
  sub.add_option("--gemm", a.gemm,
                 "matrix-product kernel: auto (AVX2+FMA where the CPU has it) or portable "
                 "(std::fma loops); both give bit-identical results, so this only checks that")
      ->check(CLI::IsMember({"auto", "portable"}))
      ->default_val("auto");
  if (with_backend)
    sub.add_option("--backend", a.backend,
                   "local: all workers in this process, over threads; mpi: one worker per MPI "
                   "rank (run under mpirun -np <workers>; see docs/multinode.md)")
        ->check(CLI::IsMember({"local", "mpi"}))
        ->default_val("local");
  sub.add_flag("--summary", a.summary, "tabulate result files as Markdown instead of training");
  sub.add_flag("-q,--quiet", a.quiet, "no progress lines");
  sub.add_flag("--check", a.check,
               "only validate the experiment and load the data; train nothing, write nothing");
}

inline void train_progress(const std::string& message) {
  std::cerr << "[clbo] " << message << std::endl;
}

// Trains the experiment; with `workers` (one per process) every process trains its worker
// and the root writes the result.
inline int run_train(const TrainArgs& a, train::Workers* workers = nullptr) {
  if (a.inputs.size() != 1 && !(a.inputs.empty() && !a.ds_config.empty()))
    throw InputError("<command line>", "EXPERIMENT", std::to_string(a.inputs.size()),
                     "give exactly one experiment file, or --ds-config (or --summary RESULT...)");
  if (a.threads < 1 || a.threads > 64)
    throw InputError("<command line>", "--threads", std::to_string(a.threads), "must be in 1..64");
  const bool root = !workers || workers->is_root();
  // With --ds-config alone the experiment is the defaults (docs/convergence.md) and the
  // config; the results are named after the config.
  const std::string path = a.inputs.empty() ? a.ds_config : a.inputs[0];
  if (a.gemm == "portable") kernels::detail::set_gemm_path(kernels::detail::GemmPath::kPortable);
  // The output first, then the whole experiment, then the data: nothing that can be known
  // at the start fails at the end (and --check rejects whatever the run would).
  const std::string out = a.out.empty() ? default_results_path(path) : a.out;
  if (root)
    check_output_path(out, a.out.empty() ? "output (the default for EXPERIMENT)" : "--out",
                      {{"EXPERIMENT", path}});
  // EXPERIMENT may itself be a whole DeepSpeed config: then it is the ds_config of an
  // experiment of defaults.
  bool is_deepspeed = false;
  nlohmann::json doc = a.inputs.empty() ? nlohmann::json::object()
                                        : load_experiment_or_deepspeed_config(path, &is_deepspeed);
  if (is_deepspeed) {
    if (!a.ds_config.empty())
      throw InputError("<command line>", "--ds-config", a.ds_config,
                       path + " is itself a DeepSpeed config; give one of them");
    doc = {{"ds_config", path}};
  }
  if (!a.ds_config.empty() && doc.is_object()) doc["ds_config"] = a.ds_config;
  train::ExperimentSpec spec =
      train::parse_experiment(doc, a.inputs.empty() ? "<command line>" : path);
  if (root)
    for (const std::string& w : spec.warnings) std::cerr << "clbo: warning: " << w << "\n";
  if (!a.data_dir.empty()) spec.data_dir = a.data_dir;
  const train::FashionMnist data = train::load_fashion_mnist(spec.data_dir);
  train::check_experiment(spec, data);
  if (a.check) {  // the data loaded and checked too: a missing dataset fails here, not later
    if (root)
      std::cout << path << ": ok (data: " << spec.data_dir << ", output: " << out << ")"
                << std::endl;
    return 0;
  }
  train::TrainOptions opts;
  opts.threads = a.threads;
  opts.workers = workers;
  if (!a.quiet && root) opts.progress = train_progress;
  const nlohmann::json result = train::train_experiment(spec, data, opts);
  if (!root) return result["status"] == "complete" || result["error"].is_null() ? 0 : 3;
  write_json_atomic(out, result);
  train_progress(fmt::format("wrote {} (status {}, {:.1f} s)", out,
                             result["status"].get<std::string>(),
                             result["timing"]["wall_time_s"].get<double>()));
  if (!result["error"].is_null()) {
    // A stopped experiment is a failure; a diverged run under continue_after_nan is a result,
    // which the summary counts: say so without calling the experiment failed.
    if (result["status"] != "complete") {
      std::cerr << "clbo: error: " << result["error"].get<std::string>() << "\n";
      std::cerr << "clbo: partial results written to " << out << " (marked \"status\": "
                << "\"partial\")\n";
      return 3;
    }
    std::cerr << "clbo: warning: a run diverged and is kept as a result (continue_after_nan); "
                 "the first: "
              << result["error"].get<std::string>() << "\n";
  }
  return 0;
}

}  // namespace clbo::cli
