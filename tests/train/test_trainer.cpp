// The trainer on synthetic data: validation of experiment files, every optimizer through the
// real local collectives (counted bytes equal the CommPlans of the announced schedule),
// determinism across thread counts, NaN handling, the ablations, the warnings and errors about
// where a run's mechanisms fall, the momentum mask, the summary table.
#include <gtest/gtest.h>

#include <cmath>

#include "clbo/core/error.hpp"
#include "clbo/core/result_files.hpp"
#include "clbo/kernels/gemm.hpp"
#include "clbo/train/lr_schedule.hpp"
#include "clbo/train/summary.hpp"
#include "clbo/train/trainer.hpp"
#include "synthetic.hpp"

using namespace clbo::train;
using nlohmann::json;

namespace {

json base_experiment() {
  return json::parse(R"({
    "model": "mlp_small", "batch_size": 96, "workers": 3, "steps": 8, "eval_every": 4,
    "micro_batch": 16, "seeds": [1],
    "lr_schedule": {"warmup_fraction": 0.25, "decay": "linear"},
    "runs": [{"label": "Adam", "optimizer": {"type": "Adam", "params": {"lr": 0.002}}}]
  })");
}

const FashionMnist& data() {
  static const FashionMnist d = synthetic::synthetic_fashion();
  return d;
}

json run(const json& experiment, int threads = 2) {
  const ExperimentSpec spec = parse_experiment(experiment, "test.json", data().train.n);
  TrainOptions opts;
  opts.threads = threads;
  return train_experiment(spec, data(), opts);
}

// The message of the InputError parse_experiment throws for `j`.
std::string parse_error(const json& j) {
  try {
    parse_experiment(j, "exp.json", 60000);
  } catch (const clbo::InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError for " << j.dump();
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(TrainExperiment, BadInputGetsClearErrors) {
  json j = base_experiment();
  j["model"] = "resnet";
  EXPECT_TRUE(contains(parse_error(j), "unknown model"));

  j = base_experiment();
  j["runs"][0]["optimizer"]["type"] = "OneBitAdma";
  std::string msg = parse_error(j);
  EXPECT_TRUE(contains(msg, "runs[0].optimizer.type")) << msg;
  EXPECT_TRUE(contains(msg, "did you mean 'OneBitAdam'")) << msg;

  j = base_experiment();
  j["batch_size"] = 100;
  msg = parse_error(j);
  EXPECT_TRUE(contains(msg, "batch_size")) << msg;
  EXPECT_TRUE(contains(msg, "divisible by workers = 3")) << msg;

  j = base_experiment();
  j["batch_size"] = 2;
  msg = parse_error(j);
  EXPECT_TRUE(contains(msg, "exceeds the batch size 2")) << msg;

  j = base_experiment();
  j["workers"] = 65;
  j["batch_size"] = 65 * 4;
  EXPECT_TRUE(contains(parse_error(j), "at most 64 workers"));

  j = base_experiment();
  j["runs"][0]["freeze_fraction"] = 0.2;
  EXPECT_TRUE(contains(parse_error(j), "applies only to OneBitAdam"));

  j = base_experiment();
  j["runs"][0]["baseline"] = "Adma";
  EXPECT_TRUE(contains(parse_error(j), "did you mean 'Adam'"));

  j = base_experiment();
  j["epochs"] = 2;
  EXPECT_TRUE(contains(parse_error(j), "not both"));

  j = base_experiment();
  j["batch_sise"] = 96;
  EXPECT_TRUE(contains(parse_error(j), "did you mean 'batch_size'"));

  j = base_experiment();
  j["runs"][0]["optimizer"]["params"]["lr"] = -1;
  EXPECT_TRUE(contains(parse_error(j), "lr"));

  j = base_experiment();
  j["runs"].push_back(j["runs"][0]);
  EXPECT_TRUE(contains(parse_error(j), "unique"));
}

TEST(TrainExperiment, FreezeFractionsBecomeSteps) {
  json j = base_experiment();
  j["steps"] = 40;
  j["runs"].push_back(json::parse(
      R"({"label": "1bit", "freeze_fraction": 0.25, "optimizer": {"type": "onebitadam"}})"));
  j["runs"].push_back(json::parse(
      R"({"label": "01", "var_freeze_fraction": 0.5, "optimizer": {"type": "ZeroOneAdam"}})"));
  const ExperimentSpec s = parse_experiment(j, "exp.json");
  EXPECT_EQ(s.runs[1].optimizer.type_name(), "OneBitAdam");
  EXPECT_EQ(s.runs[1].optimizer.as<clbo::OneBitAdamParams>().freeze_step, 10);
  EXPECT_EQ(s.runs[2].optimizer.as<clbo::ZeroOneAdamParams>().var_freeze_step, 20);
  EXPECT_EQ(s.runs[0].lr.warmup_steps, 10);
  EXPECT_EQ(s.runs[1].lr.peak, 1e-3f);  // the optimizer's default lr is the peak

  j["runs"][1]["optimizer"]["params"] = {{"freeze_step", 3}};
  EXPECT_TRUE(contains(parse_error(j), "conflicts with optimizer.params.freeze_step"));
}

TEST(TrainExperiment, EpochsBecomeSteps) {
  json j = base_experiment();
  j.erase("steps");
  j["epochs"] = 2.5;
  EXPECT_EQ(parse_experiment(j, "e.json", 960).steps, 25);
}

// A whole DeepSpeed config stands for the runs (its optimizer beside the uncompressed twin),
// the batch on the experiment's workers by DeepSpeed's rule, and the scheduler's run length;
// what the trainer does not model is a warning naming it.
TEST(TrainExperiment, AWholeDeepSpeedConfigStandsForRunsBatchAndLength) {
  const json ds = json::parse(R"({"train_batch_size": 512, "gradient_accumulation_steps": 2,
      "fp16": {"enabled": true},
      "optimizer": {"type": "OneBitLamb", "params": {"lr": 0.01, "freeze_step": 5}},
      "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 30}}})");
  const json j = {{"model", "mlp_small"}, {"workers", 4}, {"ds_config", ds}};
  const ExperimentSpec s = parse_experiment(j, "exp.json");
  ASSERT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.runs[0].optimizer.type_name(), "Lamb");
  EXPECT_EQ(s.runs[1].optimizer.type_name(), "OneBitLamb");
  EXPECT_EQ(s.runs[1].baseline, "Lamb");
  EXPECT_EQ(s.batch_size, 512);
  EXPECT_EQ(s.micro_batch, 64);  // 512 / (2 accumulation steps × 4 workers)
  EXPECT_EQ(s.steps, 30);
  EXPECT_EQ(s.config, j);
  std::string all;
  for (const auto& w : s.warnings) all += w + "\n";
  EXPECT_TRUE(contains(all, "ds_config.fp16.enabled is not modelled by clbo train")) << all;
  EXPECT_TRUE(contains(all, "ds_config.scheduler (WarmupDecayLR)")) << all;

  json bad = j;
  bad["ds_config"]["zero_optimization"] = {{"stage", 1}};
  EXPECT_TRUE(contains(parse_error(bad), "ds_config.zero_optimization.stage"));
  bad = j;
  bad["workers"] = 3;  // 512 is not a multiple of 2 × 3
  EXPECT_TRUE(contains(parse_error(bad), "ds_config.train_batch_size"));
  bad = j;
  bad["batch_size"] = 256;
  EXPECT_TRUE(contains(parse_error(bad), "ds_config sets this"));
}

TEST(TrainLrSchedule, WarmupThenDecay) {
  LrSchedule s;
  s.peak = 1.0;
  s.warmup_steps = 4;
  s.total_steps = 14;
  s.decay = LrDecay::kLinear;
  s.final_fraction = 0.1;
  EXPECT_DOUBLE_EQ(s.lr_at(1), 0.25);
  EXPECT_DOUBLE_EQ(s.lr_at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(5), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(14), 0.1);
  EXPECT_NEAR(s.lr_at(10), 1.0 - 0.9 * 5.0 / 9.0, 1e-12);
  s.decay = LrDecay::kCosine;
  EXPECT_DOUBLE_EQ(s.lr_at(5), 1.0);
  EXPECT_NEAR(s.lr_at(14), 0.1, 1e-12);
  s.decay = LrDecay::kConstant;
  EXPECT_DOUBLE_EQ(s.lr_at(14), 1.0);
}

// Every optimizer, the broken variants included, trains through the real local collectives;
// the bytes each worker sent equal what the CommPlans of the announced schedule promise.
TEST(TrainRun, EveryOptimizerSendsWhatItsScheduleAnnounces) {
  json j = base_experiment();
  j["runs"] = json::parse(R"([
    {"label": "Adam", "optimizer": {"type": "Adam", "params": {"lr": 0.002}}},
    {"label": "LAMB", "optimizer": {"type": "Lamb", "params": {"lr": 0.01}}},
    {"label": "1-bit Adam", "freeze_fraction": 0.5,
     "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002, "eps": 1e-6}}},
    {"label": "1-bit LAMB", "freeze_fraction": 0.5,
     "optimizer": {"type": "OneBitLamb", "params": {"lr": 0.01}}},
    {"label": "0/1 Adam", "var_freeze_fraction": 0.5,
     "optimizer": {"type": "ZeroOneAdam", "params": {"lr": 0.002, "eps": 1e-6}}},
    {"label": "SLAMB", "optimizer": {"type": "Slamb", "params": {"lr": 0.01, "local_steps": 4}}},
    {"label": "no EF", "freeze_fraction": 0.5,
     "optimizer": {"type": "OneBitAdamNoErrorFeedback", "params": {"lr": 0.002, "eps": 1e-6}}},
    {"label": "naive 1-bit Adam",
     "optimizer": {"type": "NaiveOneBitAdam", "params": {"lr": 0.002, "eps": 1e-6}}},
    {"label": "naive 1-bit LAMB", "freeze_fraction": 0.5,
     "optimizer": {"type": "NaiveOneBitLamb", "params": {"lr": 0.01}}}
  ])");
  const json r = run(j);
  ASSERT_EQ(r["status"], "complete") << r["error"];
  ASSERT_EQ(r["runs"].size(), 9u);
  for (const auto& run : r["runs"]) {
    SCOPED_TRACE(run["label"].get<std::string>());
    EXPECT_EQ(run["status"], "complete");
    EXPECT_EQ(run["steps_completed"], 8);
    EXPECT_EQ(run["train_loss"].size(), 8u);
    EXPECT_EQ(run["eval"].size(), 2u);
    uint64_t total = 0;
    for (const auto& [phase, c] : run["comm"]["phases"].items()) {
      EXPECT_EQ(c["bytes_sent_per_worker"], c["planned_bytes_per_worker"]) << phase;
      for (const auto& b : c["bytes_sent_per_worker"]) total += b.get<uint64_t>();
    }
    EXPECT_GT(total, 0u);
  }
  // The 1-bit optimizers warm up densely, then compress.
  const auto& onebit = r["runs"][2]["comm"]["phases"];
  EXPECT_EQ(onebit["warmup"]["steps"], 4);
  EXPECT_EQ(onebit["compression"]["steps"], 4);
  EXPECT_LT(onebit["compression"]["mean_bytes_sent_per_worker"].get<double>(),
            onebit["warmup"]["mean_bytes_sent_per_worker"].get<double>() / 10);
  // The summary compares against baselines only where one is named.
  EXPECT_TRUE(r["summary"][0]["gap_to_baseline_points"].is_null());
}

// Warmup is shared: the ablations follow 1-bit Adam exactly until freeze_step (dense_steps)
// and leave it afterwards (the loss at step t reflects updates 1..t−1).
TEST(TrainRun, AblationsMatchOneBitAdamUntilFreeze) {
  json j = base_experiment();
  j["steps"] = 10;
  j["runs"] = json::parse(R"([
    {"label": "1-bit Adam", "freeze_fraction": 0.4,
     "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002, "eps": 1e-6}}},
    {"label": "no EF", "freeze_fraction": 0.4,
     "optimizer": {"type": "OneBitAdamNoErrorFeedback", "params": {"lr": 0.002, "eps": 1e-6}}},
    {"label": "naive after dense steps",
     "optimizer": {"type": "NaiveOneBitAdam", "params": {"lr": 0.002, "eps": 1e-6,
                                                          "dense_steps": 4}}}
  ])");
  const json r = run(j);
  const auto& ref = r["runs"][0]["train_loss"];
  for (size_t k = 1; k < 3; ++k) {
    const auto& loss = r["runs"][k]["train_loss"];
    SCOPED_TRACE(r["runs"][k]["label"].get<std::string>());
    for (size_t t = 0; t < 5; ++t) EXPECT_EQ(loss[t], ref[t]) << "step " << t + 1;
    bool differs = false;
    for (size_t t = 5; t < 10; ++t) differs |= loss[t] != ref[t];
    EXPECT_TRUE(differs);
  }
  // No EF throws the compression error away: the first compressed step (6) sends the same
  // bytes as 1-bit Adam, but the updates differ from step 7 on.
  EXPECT_EQ(r["runs"][1]["comm"]["phases"], r["runs"][0]["comm"]["phases"]);
  EXPECT_EQ(r["runs"][2]["optimizer"]["type"], "NaiveOneBitAdam");
}

// Where a run's mechanisms fall: a freeze at step 0 or a SLAMB sync interval that never syncs
// after step 1 are errors naming the field; a freeze beyond the run and a last step that is
// not a sync are warnings, printed and recorded in the result.
TEST(TrainExperiment, MechanismsOutsideTheRun) {
  json j = base_experiment();
  j["runs"][0] = json::parse(
      R"({"label": "1-bit", "optimizer": {"type": "OneBitAdam", "params": {"freeze_step": 0}}})");
  std::string msg = parse_error(j);
  EXPECT_TRUE(contains(msg, "runs[0].optimizer.params.freeze_step")) << msg;
  EXPECT_TRUE(contains(msg, "before any update")) << msg;

  j["runs"][0] = json::parse(
      R"({"label": "0/1", "optimizer": {"type": "ZeroOneAdam", "params": {"var_freeze_step": 0}}})");
  EXPECT_TRUE(contains(parse_error(j), "runs[0].optimizer.params.var_freeze_step"));

  j["runs"][0] = json::parse(
      R"({"label": "S", "optimizer": {"type": "Slamb", "params": {"local_steps": 8}}})");
  msg = parse_error(j);  // 8 steps: the next sync would be step 9
  EXPECT_TRUE(contains(msg, "runs[0].optimizer.params.local_steps")) << msg;
  EXPECT_TRUE(contains(msg, "8")) << msg;

  j["runs"][0] = json::parse(
      R"({"label": "S", "optimizer": {"type": "Slamb", "params": {"local_steps": 3}}})");
  ExperimentSpec s = parse_experiment(j, "exp.json");
  ASSERT_EQ(s.warnings.size(), 1u);  // syncs at 1, 4, 7: step 8 is not one
  EXPECT_TRUE(contains(s.warnings[0], "not a parameter sync")) << s.warnings[0];
  j["runs"][0]["optimizer"]["params"]["local_steps"] = 7;  // syncs at 1 and 8
  EXPECT_TRUE(parse_experiment(j, "exp.json").warnings.empty());

  j["runs"][0] = json::parse(R"({"label": "1-bit", "optimizer": {"type": "OneBitAdam"}})");
  s = parse_experiment(j, "exp.json");  // DeepSpeed's default freeze_step 100000
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_TRUE(contains(s.warnings[0], "nothing is compressed")) << s.warnings[0];
  EXPECT_TRUE(contains(s.warnings[0], "'1-bit'")) << s.warnings[0];

  j["runs"][0] = json::parse(
      R"({"label": "0/1", "var_freeze_fraction": 0.5, "optimizer": {"type": "ZeroOneAdam"}})");
  s = parse_experiment(j, "exp.json");  // local_step_scaler 32768: never a local step
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_TRUE(contains(s.warnings[0], "no local step")) << s.warnings[0];

  j["runs"][0] = json::parse(
      R"({"label": "A", "exp_avg_mask": "zero_variance", "optimizer": {"type": "Adam"}})");
  EXPECT_TRUE(contains(parse_error(j), "runs[0].exp_avg_mask"));
  j["runs"][0]["exp_avg_mask"] = "everything";
  EXPECT_TRUE(contains(parse_error(j), "zero_variance"));
  j["runs"][0] = json::parse(R"({"label": "S", "exp_avg_mask": "zero_variance",
                                 "optimizer": {"type": "Slamb", "params": {"local_steps": 7}}})");
  EXPECT_TRUE(contains(parse_error(j), "applies only to the kinds that freeze"));
}

TEST(TrainRun, WarningsAndTheKeptParametersAreRecorded) {
  json j = base_experiment();
  j["lr_schedule"]["final_fraction"] = 0.5;  // a last step with lr 0 would move no rank
  j["runs"] = json::parse(R"([
    {"label": "SLAMB ends on a sync", "optimizer": {"type": "Slamb",
     "params": {"lr": 0.01, "local_steps": 7}}},
    {"label": "SLAMB ends between syncs", "optimizer": {"type": "Slamb",
     "params": {"lr": 0.01, "local_steps": 3}}},
    {"label": "LAMB", "optimizer": {"type": "Lamb", "params": {"lr": 0.01}}}
  ])");
  const json r = run(j);
  ASSERT_EQ(r["warnings"].size(), 1u);
  EXPECT_TRUE(contains(r["warnings"][0].get<std::string>(), "SLAMB ends between syncs"));
  EXPECT_EQ(r["runs"][0]["final_params"], "replicated");
  EXPECT_EQ(r["runs"][1]["final_params"], "rank mean");
  EXPECT_EQ(r["runs"][1]["eval"][0]["params"], "replicated");  // step 4 is a sync
  EXPECT_EQ(r["runs"][2]["final_params"], "replicated");
  // LAMB's per-tensor trust ratios are recorded at every evaluation, one per tensor.
  EXPECT_EQ(r["runs"][2]["eval"][0]["layer_coefficients"].size(), 6u);
  EXPECT_GT(r["runs"][2]["final_train_set_loss"].get<double>(), 0.0);
}

// The exp_avg_mask rule zero_variance: built at the switch from the coordinates whose
// gradient was exactly zero on every rank throughout the warmup. Input pixel 0 is blank in
// every image, so fc1's 64 weights reading it never get a gradient; nothing else is masked.
TEST(TrainRun, ZeroInWarmupMaskCoversTheAlwaysZeroGradients) {
  FashionMnist blank = data();
  for (size_t i = 0; i < blank.train.n; ++i) blank.train.pixels[i * 784] = 0.0f;
  json j = base_experiment();
  j["runs"] = json::parse(R"([
    {"label": "1-bit Adam masked", "freeze_fraction": 0.5, "exp_avg_mask": "zero_variance",
     "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002}}},
    {"label": "1-bit Adam", "freeze_fraction": 0.5,
     "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002}}}
  ])");
  const ExperimentSpec spec = parse_experiment(j, "test.json", blank.train.n);
  const json r = train_experiment(spec, blank, TrainOptions{});
  ASSERT_EQ(r["status"], "complete") << r["error"];
  const auto& mask = r["runs"][0]["exp_avg_mask"];
  EXPECT_EQ(mask["applied_after_step"], 4);
  EXPECT_EQ(mask["masked_coordinates"], 64);
  EXPECT_FALSE(r["runs"][1].contains("exp_avg_mask"));
  // Identical until the switch, different after it.
  const auto& a = r["runs"][0]["train_loss"];
  const auto& b = r["runs"][1]["train_loss"];
  for (size_t t = 0; t < 5; ++t) EXPECT_EQ(a[t], b[t]) << t;
  EXPECT_NE(a[7], b[7]);
  // Unmasked, the blank pixel's weights receive the compressed momentum's scale divided by
  // eps: the watch names such a coordinate as the largest update, with no nonzero gradient
  // and a frozen variance of 0. Masked, no update after the switch comes near that.
  const auto& unmasked = r["runs"][1]["largest_updates"];
  const auto& jump = unmasked["after_switch"];
  EXPECT_EQ(jump["tensor"], "fc1.weight");
  EXPECT_EQ(jump["element"].get<size_t>() % 784, 0u);  // column 0: pixel 0
  EXPECT_EQ(jump["dense_steps_with_nonzero_gradient"], 0);
  EXPECT_EQ(jump["dense_steps"], 4);
  EXPECT_EQ(jump["sqrt_frozen_variance"], 0.0);
  EXPECT_FALSE(unmasked["first_jump"].is_null());
  const auto& masked = r["runs"][0]["largest_updates"];
  EXPECT_LT(masked["after_switch"]["abs_change"].get<double>(),
            jump["abs_change"].get<double>() / 100);
}

// The thread count splits work but never changes a number: p < threads (chunks of one worker
// in parallel) and p >= threads (whole workers in parallel) give identical documents.
TEST(TrainRun, ThreadsDoNotChangeResults) {
  for (int p : {1, 4}) {
    json j = base_experiment();
    j["workers"] = p;
    j["batch_size"] = 128;
    j["steps"] = 5;
    j["runs"].push_back(json::parse(
        R"({"label": "1-bit Adam", "freeze_fraction": 0.4,
            "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002, "eps": 1e-6}}})"));
    const json one = clbo::without_timing(run(j, 1));
    const json three = clbo::without_timing(run(j, 3));
    EXPECT_EQ(one.dump(), three.dump()) << "p = " << p;
    EXPECT_EQ(one["status"], "complete");
  }
}

// "evaluate": false (clbo validate's timing runs) skips every evaluation and changes nothing
// else: the same losses, bytes and final parameters, no eval entries, null accuracies and
// training-set loss, and a summary that still counts the runs. eval_every beside it is an
// error: it would have no meaning.
TEST(TrainRun, EvaluateFalseSkipsEvaluationsOnly) {
  json j = base_experiment();
  j["runs"].push_back(json::parse(
      R"({"label": "SLAMB", "optimizer": {"type": "Slamb", "params": {"lr": 0.01, "local_steps": 3}}})"));
  j["runs"].push_back(json::parse(
      R"({"label": "1-bit Adam", "freeze_fraction": 0.5,
          "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002, "eps": 1e-6}}})"));
  j["runs"].push_back(json::parse(
      R"({"label": "1-bit Adam, mask", "freeze_fraction": 0.5, "exp_avg_mask": "zero_variance",
          "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002, "eps": 1e-6}}})"));
  const json with = run(j);
  j.erase("eval_every");
  j["evaluate"] = false;
  const json without = run(j);
  EXPECT_EQ(without["resolved"]["eval_every"], nullptr);
  EXPECT_EQ(without["resolved"]["evaluated_params"], "none (\"evaluate\": false)");
  ASSERT_EQ(with["runs"].size(), without["runs"].size());
  for (size_t i = 0; i < with["runs"].size(); ++i) {
    const json& a = with["runs"][i];
    const json& b = without["runs"][i];
    EXPECT_EQ(b["status"], "complete");
    EXPECT_FALSE(a["eval"].empty());
    EXPECT_TRUE(b["eval"].empty());
    EXPECT_TRUE(b["final_test_accuracy"].is_null());
    EXPECT_TRUE(b["final_train_set_loss"].is_null());
    EXPECT_TRUE(a["final_train_set_loss"].is_number());
    for (const char* k : {"train_loss", "bytes_sent_per_worker_per_step", "final_params_fnv1a64"})
      EXPECT_EQ(a[k].dump(), b[k].dump()) << k;
    // The switch watch gathers every gradient (slow over MPI): a timing run keeps it only
    // where its mask needs it.
    const std::string label = a["label"];
    if (label == "1-bit Adam") {
      EXPECT_TRUE(a.contains("largest_updates"));
      EXPECT_FALSE(b.contains("largest_updates"));
    } else if (label == "1-bit Adam, mask") {
      EXPECT_TRUE(b.contains("largest_updates"));
      EXPECT_EQ(a["exp_avg_mask"].dump(), b["exp_avg_mask"].dump());
    }
  }
  for (const json& e : without["summary"]) {
    EXPECT_EQ(e["seeds_run"], 1);
    EXPECT_EQ(e["seeds_not_complete"], 0);
  }
  j["eval_every"] = 2;
  const std::string msg = parse_error(j);
  EXPECT_TRUE(contains(msg, "eval_every")) << msg;
  EXPECT_TRUE(contains(msg, "\"evaluate\": false")) << msg;
}

// The product kernel never changes a number: the AVX2+FMA kernel and the portable std::fma
// loops give the same document (only the recorded kernel name differs). Together with the
// portable exp/log and -ffp-contract=off this is what makes results independent of the CPU.
TEST(TrainRun, GemmKernelDoesNotChangeResults) {
  json j = base_experiment();
  j["runs"].push_back(json::parse(
      R"({"label": "SLAMB", "optimizer": {"type": "Slamb", "params": {"lr": 0.01, "local_steps": 7}}})"));
  const json fast = clbo::without_timing(run(j));
  ASSERT_TRUE(clbo::kernels::detail::set_gemm_path(clbo::kernels::detail::GemmPath::kPortable));
  json portable = clbo::without_timing(run(j));
  clbo::kernels::detail::set_gemm_path(clbo::kernels::detail::GemmPath::kAuto);
  EXPECT_EQ(portable["environment"]["gemm_kernel"], "portable");
  portable["environment"]["gemm_kernel"] = fast["environment"]["gemm_kernel"];
  EXPECT_EQ(fast.dump(), portable.dump());
}

TEST(TrainRun, SeedsChangeInitAndOrderAndAreSummarized) {
  json j = base_experiment();
  j["seeds"] = {1, 2};
  j["runs"].push_back(json::parse(
      R"({"label": "1-bit Adam", "baseline": "Adam", "freeze_fraction": 0.5,
          "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.002, "eps": 1e-6}}})"));
  const json r = run(j);
  ASSERT_EQ(r["runs"].size(), 4u);
  EXPECT_NE(r["runs"][0]["train_loss"][0], r["runs"][1]["train_loss"][0]);
  // Same seed, same initial parameters and first batch: same first loss for every optimizer.
  EXPECT_EQ(r["runs"][0]["train_loss"][0], r["runs"][2]["train_loss"][0]);
  const auto& s = r["summary"][1];
  EXPECT_EQ(s["final_test_accuracy"]["n"], 2);
  ASSERT_FALSE(s["gap_to_baseline_points"].is_null());
  const double gap0 = 100 * (r["runs"][2]["final_test_accuracy"].get<double>() -
                             r["runs"][0]["final_test_accuracy"].get<double>());
  const double gap1 = 100 * (r["runs"][3]["final_test_accuracy"].get<double>() -
                             r["runs"][1]["final_test_accuracy"].get<double>());
  EXPECT_NEAR(s["gap_to_baseline_points"]["mean"].get<double>(), (gap0 + gap1) / 2, 1e-9);
  EXPECT_LT(s["comm_relative_to_baseline"].get<double>(), 1.0);

  const std::string md = summary_markdown({{"results/convergence/x.json", r}});
  EXPECT_TRUE(contains(md, "| x | 1-bit Adam | OneBitAdam | mlp_small | 96 | 3 | 8 | 2/2 |")) << md;
  EXPECT_TRUE(contains(md, "results/convergence/x.json"));

  // A result file is input: a missing or mistyped field names the file, never a crash.
  json broken = r;
  broken.erase("resolved");
  json mistyped = r;
  mistyped["runs"][0]["seed"] = "one";
  for (const json& bad : {broken, mistyped}) {
    try {
      summary_markdown({{"results/convergence/x.json", bad}});
      FAIL() << "expected an error";
    } catch (const clbo::InputError& e) {
      EXPECT_TRUE(contains(e.what(), "results/convergence/x.json")) << e.what();
      EXPECT_TRUE(contains(e.what(), "not a complete `clbo train` result")) << e.what();
    }
  }
}

// A NaN loss names the step, stops the run, and the document says it is partial.
TEST(TrainRun, NanLossStopsWithPartialResults) {
  json j = base_experiment();
  j["steps"] = 30;
  j["runs"][0]["optimizer"]["params"]["lr"] = 1e30;
  j["runs"].push_back(json::parse(R"({"label": "after", "optimizer": {"type": "Adam"}})"));
  json r = run(j);
  EXPECT_EQ(r["status"], "partial");
  ASSERT_EQ(r["runs"].size(), 1u);  // the next run never started
  const auto& bad = r["runs"][0];
  EXPECT_EQ(bad["status"], "nan");
  const int64_t step = bad["nan_step"].get<int64_t>();
  EXPECT_GT(step, 1);
  EXPECT_EQ(bad["train_loss"].size(), static_cast<size_t>(step - 1));
  EXPECT_TRUE(bad["final_test_accuracy"].is_null());
  const std::string err = r["error"].get<std::string>();
  EXPECT_TRUE(contains(err, "at step " + std::to_string(step))) << err;
  EXPECT_TRUE(contains(err, "'Adam'")) << err;

  j["continue_after_nan"] = true;
  r = run(j);
  EXPECT_EQ(r["status"], "complete");
  ASSERT_EQ(r["runs"].size(), 2u);
  EXPECT_EQ(r["runs"][1]["status"], "complete");
  EXPECT_EQ(r["summary"][0]["seeds_not_complete"], 1);
}

TEST(TrainRun, LearnsTheSyntheticTask) {
  json j = base_experiment();
  j["steps"] = 30;
  j["eval_every"] = 30;
  const json r = run(j);
  EXPECT_GT(r["runs"][0]["final_test_accuracy"].get<double>(), 0.9);
}
