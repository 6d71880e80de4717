// `clbo train`: real data-parallel convergence runs on Fashion-MNIST (train/trainer.hpp),
// `clbo train --backend mpi` with one worker per MPI rank (execs clbo_train_mpi, built
// beside clbo), and `clbo train --summary` to tabulate result files.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "child_process.hpp"
#include "clbo/core/json_reader.hpp"
#include "cli.hpp"
#include "train_run.hpp"

namespace {

namespace fs = std::filesystem;

int run_summary(const clbo::cli::TrainArgs& a) {
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

// Replaces this process with clbo_train_mpi, so under mpirun the rank process stays the one
// mpirun started; every argument but --backend passes on.
int exec_mpi(const std::vector<std::string>& args) {
  const fs::path bin = clbo::cli::sibling_binary("clbo_train_mpi");
  if (!fs::exists(bin))
    throw clbo::InputError(
        "<command line>", "--backend", "mpi",
        bin.string() + " was not built (configure with OpenMPI present: libopenmpi-dev)");
  std::vector<std::string> argv{bin.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  clbo::cli::exec_replacing(argv, "clbo train");
}

std::vector<std::string> forwarded_args(const clbo::cli::TrainArgs& a) {
  std::vector<std::string> v = a.inputs;
  if (!a.out.empty()) v.insert(v.end(), {"--out", a.out});
  if (!a.data_dir.empty()) v.insert(v.end(), {"--data-dir", a.data_dir});
  if (!a.ds_config.empty()) v.insert(v.end(), {"--ds-config", a.ds_config});
  v.insert(v.end(), {"--threads", std::to_string(a.threads), "--gemm", a.gemm});
  if (a.quiet) v.push_back("--quiet");
  if (a.check) v.push_back("--check");
  return v;
}

clbo::cli::Registrar reg(
    "train",
    "Train a small model on Fashion-MNIST with p data-parallel workers through the real "
    "compressed collectives (local threads, or MPI ranks); writes results/<...>/X.json",
    [](CLI::App& sub) {
      auto a = std::make_shared<clbo::cli::TrainArgs>();
      clbo::cli::add_train_options(sub, *a, true);
      return [a] {
        if (a->summary) {
          if (a->inputs.empty())
            throw clbo::InputError("<command line>", "RESULT", "missing",
                                   "--summary tabulates result files; give at least one");
          if (a->backend != "local")
            throw clbo::InputError("<command line>", "--backend", a->backend,
                                   "--summary reads result files; it has no backend");
          return run_summary(*a);
        }
        if (a->backend == "mpi") return exec_mpi(forwarded_args(*a));
        return clbo::cli::run_train(*a);
      };
    });

}  // namespace
