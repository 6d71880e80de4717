// The convergence engine behind `clbo train`: real data-parallel training of a small model
// on Fashion-MNIST with p workers, each stepping its own optimizer over the `local`
// collectives, or one worker per MPI rank over the MPI backend (workers.hpp); no shortcut
// around the compressed allreduce either way.
//
// One step t of a run:
//   1. the global batch (B examples of an epoch's seeded permutation) is cut into p shards
//      of B/p (each example shifted first when `random_shift` > 0, augment.hpp); worker r
//      computes the mean gradient of shard r on ITS OWN parameters (ranks
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
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "clbo/train/experiment.hpp"
#include "clbo/train/fashion_mnist.hpp"
#include "clbo/train/workers.hpp"

namespace clbo::train {

// What can be checked only with the data, before any run starts (train_experiment does it
// first; `clbo train --check` too): the model's input size against the images, the batch
// against the training set, and every run's optimizer built on the model's real layout.
void check_experiment(const ExperimentSpec& spec, const FashionMnist& data);

struct TrainOptions {
  int threads = 2;  // gradient/eval threads; never changes a result
  // Called with progress lines ("run 2/10: ..."); may be empty.
  std::function<void(const std::string&)> progress;
  // Where the workers live; null: all of them here, over the local backend. A backend with
  // one worker per process runs train_experiment in every process; only the root's document
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
nlohmann::json train_experiment(const ExperimentSpec& spec, const FashionMnist& data,
                                const TrainOptions& opts);

}  // namespace clbo::train
