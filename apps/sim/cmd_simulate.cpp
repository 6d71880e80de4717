// `clbo simulate [experiments/X.json] [flags]`: simulates an experiment on SimGrid clusters
// and writes results/X.json (atomically), then prints a table. Without a file it runs the
// default sweep compiled into the binary (experiments/sim/default-sweep.json), or with
// --ds-config the user's DeepSpeed config. The flags edit the experiment document (sweep.hpp)
// and every sweep point goes through the one parse path; all points are validated before any
// is simulated.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "clbo/core/config.hpp"
#include "clbo/core/result_files.hpp"
#include "clbo/core/results.hpp"
#include "clbo/report/paper_rows.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "clbo/sim/experiment.hpp"
#include "clbo/sim/presets.hpp"
#include "clbo/sim/results_json.hpp"
#include "clbo/sim/sweep.hpp"
#include "cli.hpp"
#include "results_formats.hpp"

namespace {

struct Args {
  std::string experiment, output, format = "table";
  clbo::sim::CommandLineFlags flags;
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

// The document the flags edit: the experiment file, the user's DeepSpeed config alone, or
// the built-in sweep.
nlohmann::json base_document(const Args& a, std::string& file) {
  if (!a.experiment.empty()) {
    file = a.experiment;
    return clbo::load_json_file(file);
  }
  if (!a.flags.ds_config.empty()) {
    file = "<command line>";
    const std::pair<const char*, bool> needed[] = {{"--workload", !a.flags.workload.empty()},
                                                   {"--cluster", !a.flags.clusters.empty()},
                                                   {"--gpus", !a.flags.gpus.empty()}};
    for (const auto& [flag, given] : needed)
      if (!given)
        throw clbo::InputError(file, flag, "missing",
                               "--ds-config without an experiment file needs --workload, "
                               "--cluster and --gpus (e.g. --workload bert-large-seq128 "
                               "--cluster paper-eth-v100 --gpus 16,64)");
    const std::string stem = std::filesystem::path(a.flags.ds_config).stem().string();
    return {{"name", stem},
            {"description", "the DeepSpeed config " + a.flags.ds_config +
                                " beside its uncompressed twin, from the command line"},
            {"simulate", nlohmann::json::object()}};
  }
  file = clbo::sim::preset_path("sim", "default-sweep");
  return clbo::sim::preset_json("sim", "default-sweep", "<command line>", "experiment");
}

int run(Args a) {
  // EXPERIMENT may itself be a whole DeepSpeed config: then it is --ds-config.
  if (!a.experiment.empty()) {
    bool is_deepspeed = false;
    clbo::load_experiment_or_deepspeed_config(a.experiment, &is_deepspeed);
    if (is_deepspeed) {
      if (!a.flags.ds_config.empty())
        throw clbo::InputError("<command line>", "--ds-config", a.flags.ds_config,
                               a.experiment + " is itself a DeepSpeed config; give one of them");
      a.flags.ds_config = a.experiment;
      a.experiment.clear();
    }
  }
  std::string file;
  const nlohmann::json base = base_document(a, file);
  std::string out = a.output;
  if (out.empty())
    out = clbo::default_results_path(
        a.experiment.empty() && !a.flags.ds_config.empty() ? a.flags.ds_config : file);
  // The output first: a run never fails at its end for a reason known at its start.
  std::vector<clbo::NamedPath> inputs = {{"EXPERIMENT", a.experiment}};
  if (!a.flags.ds_config.empty()) inputs.push_back({"--ds-config", a.flags.ds_config});
  clbo::check_output_path(out, a.output.empty() ? "output (the default for EXPERIMENT)" : "--out",
                          inputs);

  // Every flag and every sweep point is checked before any work.
  const nlohmann::json doc = clbo::sim::apply_flags(base, a.flags, file);
  std::vector<clbo::sim::SetAxis> axes;
  for (const std::string& s : a.flags.sets) axes.push_back(clbo::sim::parse_set_flag(s));
  const std::vector<clbo::sim::SweepPoint> points = clbo::sim::sweep_points(doc, axes, file);
  std::vector<std::string> warnings;
  for (const auto& pt : points) {
    try {
      for (const auto& w : clbo::sim::validate_experiment(pt.doc, file))
        if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
      clbo::report::check_paper_rows(pt.doc, file);
    } catch (const clbo::InputError& e) {
      if (pt.label.empty()) throw;
      throw clbo::InputError(e.where(), e.field(), e.value(),
                             e.why() + " (at the sweep point --set " + pt.label + ")");
    }
  }
  for (const auto& w : warnings) std::cerr << "clbo: warning: " << w << std::endl;
  if (a.check) {
    std::cout << file << ": ok (" << points.size() << (points.size() == 1 ? " point" : " points")
              << "; output: " << out << ")" << std::endl;
    return 0;
  }

  std::vector<nlohmann::json> results;
  for (size_t k = 0; k < points.size(); ++k) {
    clbo::sim::SimulateOptions opt;
    if (!a.quiet) opt.progress = progress_bar;
    if (!a.quiet)
      clbo::cli::progress(points.size() == 1
                              ? "simulating " + file
                              : fmt::format("simulating {}, sweep point {}/{}: {}", file, k + 1,
                                            points.size(), points[k].label));
    results.push_back(clbo::sim::simulate_experiment(points[k].doc, file, opt));
    clbo::report::attach_paper_rows(results.back(), file);
  }
  nlohmann::json merged = axes.empty() ? std::move(results.front())
                                       : clbo::sim::merge_sweep_results(doc, points, results);
  if (a.flags.any()) merged["command_line"] = clbo::sim::flags_record(a.flags, axes);
  clbo::write_json_atomic(out, merged);
  std::cout << clbo::cli::format_simulate_results(merged, a.format);
  std::cerr << "[clbo] wrote " << out << " (simulated in "
            << merged["timing"]["wall_s"].get<double>() << " s)" << std::endl;
  return 0;
}

constexpr const char* kFooter = R"(Examples:
  clbo simulate                                   the built-in sweep (BERT-Large, 1-1024 GPUs)
  clbo simulate experiments/sim/X.json            an experiment file
  clbo simulate --ds-config ds.json --workload bert-large-seq128 \
      --cluster paper-eth-v100 --gpus 16,64,256,1024 --steps 152500
                                                  a DeepSpeed config beside its uncompressed
                                                  twin (OneBitAdam, ZeroOneAdam -> Adam;
                                                  OneBitLamb, Slamb -> Lamb)
  clbo simulate ds.json --workload bert-large-seq128 --cluster paper-ib-v100 --gpus 64
                                                  the same: a DeepSpeed config in EXPERIMENT's place
  clbo simulate X.json --set micro_batch=8,16 --set cluster.nic.rate_Gbps=10,40 --format csv
                                                  a sweep: the product of every --set

--ds-config reads what DeepSpeed reads (comments and trailing commas allowed, as hjson):
train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps (any two
determine the third; train_batch_size = micro x accumulation x GPUs must hold at every GPU
count), the optimizer block, its comm_backend_name (nccl or mpi) and cuda_aware, fp16/bf16
(gradient dtype), and the scheduler's total_num_steps (the run length unless --steps is
given). ZeRO (stage > 0) with a 1-bit optimizer is an error, as in DeepSpeed; every field
that changes the answer and is not modelled is a warning, printed and recorded.

--set FIELD=V1,V2,...: FIELD is any field of the experiment's simulate block (micro_batch,
total_steps, bucket_mb, optimizers[1].optimizer.params.freeze_step, ds_config.fp16.enabled,
...) or cluster.FIELD for every cluster (cluster.nic.rate_Gbps, cluster.fabric.type). Values
are JSON where they parse, strings otherwise. An unknown field or a value of the wrong type
is an error before anything runs; the results record every point's settings under "sweep"
and the flags under "command_line". See docs/simulator.md.)";

clbo::cli::Registrar reg(
    "simulate", "Simulate training on a SimGrid cluster model (see docs/simulator.md)",
    [](CLI::App& sub) {
      auto args = std::make_shared<Args>();
      sub.add_option("experiment", args->experiment,
                     "experiment JSON, or a whole DeepSpeed config (as --ds-config) (default: "
                     "the built-in sweep, or with --ds-config the DeepSpeed config alone)");
      sub.add_option("-o,--out", args->output,
                     "results file (default: results/<path under experiments/>, or "
                     "results/<ds config name>.json)");
      sub.add_option("--ds-config", args->flags.ds_config,
                     "a whole DeepSpeed config (ds_config.json): its optimizer beside the "
                     "uncompressed twin, its batch, backend and precision");
      sub.add_option("--workload", args->flags.workload, "workload preset or JSON file");
      sub.add_option("--cluster", args->flags.clusters,
                     "cluster preset or JSON file; repeat for several")
          ->take_all()
          ->allow_extra_args(false);
      sub.add_option("--gpus", args->flags.gpus, "GPU counts, comma-separated: 16,64,256");
      sub.add_option("--steps", args->flags.steps,
                     "run length in steps (default: the experiment's, or the DeepSpeed "
                     "scheduler's total_num_steps)");
      sub.add_option("--set", args->flags.sets,
                     "FIELD=V1,V2,...: sweep a field of the experiment or cluster (repeatable; "
                     "the sweep is the product)")
          ->allow_extra_args(false);
      sub.add_option("--format", args->format, "what is printed: table, csv, json or md")
          ->check(CLI::IsMember(clbo::cli::simulate_formats()))
          ->default_val("table");
      sub.add_flag("-q,--quiet", args->quiet, "no progress output");
      sub.add_flag("--check", args->check,
                   "only validate the experiment and the flags (every field and sweep point, "
                   "presets, referenced files); simulate nothing, write nothing");
      sub.footer(kFooter);
      return [args] { return run(*args); };
    });

}  // namespace
