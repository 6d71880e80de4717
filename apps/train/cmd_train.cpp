// `clbo train`: real data-parallel convergence runs on Fashion-MNIST (train/trainer.hpp),
// and `clbo train --summary` to tabulate result files.
#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/result_files.hpp"
#include "clbo/core/results.hpp"
#include "clbo/kernels/gemm.hpp"
#include "clbo/train/fashion_mnist.hpp"
#include "clbo/train/summary.hpp"
#include "clbo/train/trainer.hpp"
#include "cli.hpp"
#include "cli_integer.hpp"

namespace {

struct TrainArgs {
  std::vector<std::string> inputs;
  std::string out, data_dir, gemm = "auto";
  int threads = 2;
  bool summary = false, quiet = false, check = false;
};

int run_summary(const TrainArgs& a) {
  if (!a.out.empty()) {
    std::vector<clbo::NamedPath> inputs;
    for (const auto& path : a.inputs) inputs.push_back({"RESULT", path});
    clbo::check_output_path(a.out, "--out", inputs);
  }
  std::vector<std::pair<std::string, nlohmann::json>> docs;
  for (const auto& path : a.inputs) {
    nlohmann::json doc = clbo::load_json_file(path);
    const auto schema = doc.is_object() ? doc.find("schema") : doc.end();
    if (schema == doc.end() || *schema != "clbo.train/1")
      throw clbo::InputError(path, "schema",
                             schema == doc.end() ? "missing" : clbo::json_excerpt(*schema),
                             "not a `clbo train` result (expected \"clbo.train/1\")");
    docs.emplace_back(path, std::move(doc));
  }
  const std::string md = clbo::train::summary_markdown(docs);
  if (a.out.empty()) {
    std::cout << md;
  } else {
    clbo::write_file_atomic(a.out, md);
    clbo::cli::progress("wrote " + a.out);
  }
  return 0;
}

int run_train(const TrainArgs& a) {
  if (a.inputs.size() != 1)
    throw clbo::InputError("<command line>", "EXPERIMENT", std::to_string(a.inputs.size()),
                           "give exactly one experiment file (or --summary RESULT...)");
  if (a.threads < 1 || a.threads > 64)
    throw clbo::InputError("<command line>", "--threads", std::to_string(a.threads),
                           "must be in 1..64");
  const std::string& path = a.inputs[0];
  if (a.gemm == "portable")
    clbo::kernels::detail::set_gemm_path(clbo::kernels::detail::GemmPath::kPortable);
  // The output first, then the whole experiment, then the data: nothing that can be known
  // at the start fails at the end (and --check rejects whatever the run would).
  const std::string out = a.out.empty() ? clbo::default_results_path(path) : a.out;
  clbo::check_output_path(out, a.out.empty() ? "output (the default for EXPERIMENT)" : "--out",
                          {{"EXPERIMENT", path}});
  clbo::train::ExperimentSpec spec = clbo::train::load_experiment(path);
  for (const std::string& w : spec.warnings) std::cerr << "clbo: warning: " << w << "\n";
  if (!a.data_dir.empty()) spec.data_dir = a.data_dir;
  const clbo::train::FashionMnist data = clbo::train::load_fashion_mnist(spec.data_dir);
  clbo::train::check_experiment(spec, data);
  if (a.check) {  // the data loaded and checked too: a missing dataset fails here, not later
    std::cout << path << ": ok (data: " << spec.data_dir << ", output: " << out << ")" << std::endl;
    return 0;
  }
  clbo::train::TrainOptions opts;
  opts.threads = a.threads;
  if (!a.quiet) opts.progress = [](const std::string& m) { clbo::cli::progress(m); };
  const nlohmann::json result = clbo::train::run_experiment(spec, data, opts);
  clbo::write_json_atomic(out, result);
  clbo::cli::progress(fmt::format("wrote {} (status {}, {:.1f} s)", out,
                                  result["status"].get<std::string>(),
                                  result["timing"]["wall_time_s"].get<double>()));
  if (!result["error"].is_null()) {
    std::cerr << "clbo: error: " << result["error"].get<std::string>() << "\n";
    // A stopped experiment is a failure; a diverged run under continue_after_nan is a result.
    if (result["status"] != "complete") {
      std::cerr << "clbo: partial results written to " << out << " (marked \"status\": "
                << "\"partial\")\n";
      return 3;
    }
  }
  return 0;
}

clbo::cli::Registrar reg(
    "train",
    "Train a small model on Fashion-MNIST with p data-parallel workers through the real "
    "compressed collectives; writes results/<...>/X.json",
    [](CLI::App& sub) {
      auto a = std::make_shared<TrainArgs>();
      sub.add_option("inputs", a->inputs,
                     "experiment JSON (experiments/convergence/X.json), or result files with "
                     "--summary")
          ->required();
      sub.add_option("-o,--out", a->out,
                     "output path (default: experiments/<dir>/X.json -> results/<dir>/X.json; "
                     "with --summary: stdout)");
      sub.add_option("--data-dir", a->data_dir,
                     std::string("folder with the Fashion-MNIST IDX files (default: ") +
                         clbo::train::kFashionMnistDefaultDir + ", from the Debian package " +
                         clbo::train::kFashionMnistPackage + ")");
      sub.add_option("--threads", a->threads,
                     "threads for gradients and evaluation (results do not depend on it)")
          ->transform(clbo::cli::decimal_integer<int>())
          ->default_val(2);
      sub.add_option("--gemm", a->gemm,
                     "matrix-product kernel: auto (AVX2+FMA where the CPU has it) or portable "
                     "(std::fma loops); both give bit-identical results, so this only checks that")
          ->check(CLI::IsMember({"auto", "portable"}))
          ->default_val("auto");
      sub.add_flag("--summary", a->summary,
                   "tabulate result files as Markdown instead of training");
      sub.add_flag("-q,--quiet", a->quiet, "no progress lines");
      sub.add_flag("--check", a->check,
                   "only validate the experiment and load the data; train nothing, write "
                   "nothing");
      return [a] { return a->summary ? run_summary(*a) : run_train(*a); };
    });

}  // namespace
