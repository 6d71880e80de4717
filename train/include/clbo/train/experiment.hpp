// A convergence experiment as `clbo train` reads it (docs/convergence.md for the fields):
// parsed and validated once into typed run specs, each with its optimizer config, before
// any data is read (experiment.cpp). trainer.hpp runs it.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "clbo/schedule/config.hpp"
#include "clbo/train/lr_schedule.hpp"

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
inline constexpr auto kMomentumMaskNames = name_table<MomentumMask>(
    {{MomentumMask::kNone, "none"}, {MomentumMask::kZeroVariance, "zero_variance"}});

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
  // false: no test-set or training-set evaluation at all (timing runs such as clbo validate's
  // steps, where rank 0's evaluation would only keep the other ranks waiting).
  bool evaluate = true;
  int64_t micro_batch = 256;
  // Random-shift augmentation: each training example moved by up to this many pixels in x and
  // y (train/include/clbo/train/augment.hpp); 0 = none. The test set is never shifted.
  int random_shift = 0;
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
//
// "ds_config" (a path or an object) is a whole DeepSpeed config that stands for the runs (its
// optimizer beside the uncompressed twin as baseline), batch_size and micro_batch (DeepSpeed's
// rule on `workers` GPUs; without workers, the GPU count its three batch fields imply, else 1)
// and, without steps or epochs, the run length (its scheduler's total_num_steps). Its fields
// the trainer does not model (fp16, the scheduler's learning rates, ZeRO stage > 0 with a
// plain optimizer, ...) become warnings.
ExperimentSpec parse_experiment(const nlohmann::json& j, const std::string& file,
                                size_t train_examples = 60000);
ExperimentSpec load_experiment(const std::string& path, size_t train_examples = 60000);

}  // namespace clbo::train
