// The convergence engine behind `clbo train`: real data-parallel training of a small model
// on Fashion-MNIST with p workers, each stepping its own optimizer over the `local`
// collectives, or one worker per MPI rank over the MPI backend (workers.hpp); no shortcut
// around the compressed allreduce either way.
//
// One step t of a run:
//   1. the global batch (B examples of an epoch's seeded permutation) is cut into p shards
//      of B/p; worker r computes the mean gradient of shard r on ITS OWN parameters (ranks
//      of SLAMB and 0/1 Adam drift apart between syncs, as on a real cluster);
//   2. every rank's optimizer gets set_lr(schedule(t)) and steps through its worker's
//      communicator (workers.hpp), whose backend counts the bytes the rank really sent,
//      attributed to the phase comm_schedule(t) announces.
// Evaluations use the parameters a user would keep: the replicated ones when every rank holds
// the same (always after a sync step), else the mean over the ranks. With one worker per
// process the root evaluates, from every worker's parameters gathered at the evaluation
// steps; the harness's FreezeWatch likewise sees every worker's gradient at the dense steps
// before the switch (a gather outside the timed step), so every process builds the same
// momentum mask and the run stays bit-identical to the local one.
//
// Determinism: a worker's gradient is the left fold, in chunk order, of the gradients of
// fixed-size chunks (`micro_batch`), whichever thread computes them; every other sum has a
// fixed order. So results depend on the config and seed only, never on `threads`.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clbo/schedule/config.hpp"
#include "clbo/train/fashion_mnist.hpp"
#include "clbo/train/lr_schedule.hpp"
#include "clbo/train/workers.hpp"

namespace clbo::train {

// Which coordinates a run's 1-bit optimizer masks (DeepSpeed's exp_avg_mask: the compressed
// buffer is multiplied by a 0/1 mask after every 1-bit allreduce, docs/convergence.md).
enum class MomentumMask {
  kNone,
  // 0 for every coordinate whose gradient was exactly zero on every rank at every dense step
  // before the switch to compression (1-bit Adam and LAMB: the warmup steps; 0/1 Adam: the
  // variance steps up to var_freeze_step), 1 elsewhere. These are the coordinates whose
  // variance freezes at exactly 0: 1-bit compression cannot represent their zero momentum,
  // and the ±scale they receive instead is divided by eps alone. Built once, at the switch.
  kZeroVariance,
};

// One optimizer configuration of an experiment, run once per seed.
struct RunSpec {
  std::string label;
  OptimizerConfig optimizer;  // parsed once, with the run-level fractions filled in
  std::string baseline;       // label of the run this one is compared against ("" = none)
  LrSchedule lr;
  std::optional<double> freeze_fraction, var_freeze_fraction;
  MomentumMask momentum_mask = MomentumMask::kNone;
};

struct ExperimentSpec {
  std::string file;       // the experiment file (for errors and the result)
  nlohmann::json config;  // as read
  std::string description;
  std::string model = "mlp";
  std::string data_dir;  // "" = the Debian package's folder
  int64_t batch_size = 1024;
  int workers = 1;
  int64_t steps = 0;
  int64_t eval_every = 0;  // steps between test evaluations (the last step always evaluates)
  int64_t micro_batch = 256;
  bool continue_after_nan = false;
  std::vector<uint64_t> seeds{1};
  std::vector<RunSpec> runs;
  // Valid but suspicious settings (a freeze beyond the run, a run that does not end on a
  // parameter sync, ...): printed before training and recorded in the result.
  std::vector<std::string> warnings;
};

// Parses and validates an experiment (see docs/convergence.md for the fields). Everything
// that can be checked without data is checked here: unknown model or optimizer type (with a
// suggestion), batch not divisible by p, p > batch, p outside 1..64, optimizer params (each
// run's optimizer is constructed once on a 2-tensor layout), a freeze or variance-freeze
// step of 0 or a SLAMB sync interval at least as long as the run, unknown fields, baselines
// naming no run. `train_examples` turns "epochs" into steps.
ExperimentSpec parse_experiment(const nlohmann::json& j, const std::string& file,
                                size_t train_examples = 60000);
ExperimentSpec load_experiment(const std::string& path, size_t train_examples = 60000);

// What can be checked only with the data, before any run starts (run_experiment does it
// first; `clbo train --check` too): the model's input size against the images, the batch
// against the training set, and every run's optimizer built on the model's real layout.
void check_experiment(const ExperimentSpec& spec, const FashionMnist& data);

struct TrainOptions {
  int threads = 2;  // gradient/eval threads; never changes a result
  // Called with progress lines ("run 2/10: ..."); may be empty.
  std::function<void(const std::string&)> progress;
  // Where the workers live; null: all of them here, over the local backend. A backend with
  // one worker per process runs run_experiment in every process; only the root's document
  // is complete (evaluation runs there).
  Workers* workers = nullptr;
};

// Runs every (run, seed) pair and returns the result document (schema "clbo.train/1"); its
// "timing" blocks add per-step and per-phase times (gradient, optimizer step, communication
// and compression kernels inside it, the slowest worker's each). A NaN
// or Inf training loss stops that run at the step it appeared: the run is marked
// "status": "nan" with "nan_step", the document "status": "partial" and "error" names the
// run and step; the remaining runs are skipped unless continue_after_nan. An optimizer
// error (e.g. a non-finite gradient) is handled the same way.
nlohmann::json run_experiment(const ExperimentSpec& spec, const FashionMnist& data,
                              const TrainOptions& opts);

}  // namespace clbo::train
