// Whole DeepSpeed configs read as DeepSpeed reads them (clbo_schedule only): hjson's
// leniencies, the batch triple with DeepSpeed's rule, the baseline twin, precision and
// backend, the scheduler's run length, and the configs DeepSpeed itself refuses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "clbo/core/error.hpp"
#include "clbo/core/json_reader.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "clbo_test/rejection.hpp"

namespace clbo {
namespace {

using clbo::test::contains;
using clbo::test::rejection;

// A 1-bit Adam config in the shape of DeepSpeed's tutorial: comments and trailing commas.
constexpr const char* kTutorial = R"(// 1-bit Adam, BERT pre-training
{
  "train_batch_size": 4096,
  "train_micro_batch_size_per_gpu": 16,
  "steps_per_print": 100,
  "optimizer": {
    "type": "OneBitAdam",
    "params": {
      "lr": 4e-4,
      "weight_decay": 0.01,
      "bias_correction": false,
      "freeze_step": 23000,
      "cuda_aware": false,
      "comm_backend_name": "nccl",
    }
  },
  "gradient_clipping": 0,
  "fp16": {
    "enabled": true,
    "loss_scale": 0,
    "initial_scale_power": 16,
  },
})";

DeepSpeedConfig parse(const std::string& text) {
  return parse_deepspeed_config(parse_json(text, "ds.json", deepspeed_json_options()), "ds.json");
}

std::string error_of(const std::string& text, std::string* field = nullptr) {
  const std::optional<InputError> e = rejection([&] { parse(text); });
  if (field && e) *field = e->field();
  return e ? e->what() : "";
}

TEST(DeepSpeedConfig, ReadsTheTutorialsOneBitAdamBlock) {
  const DeepSpeedConfig c = parse(kTutorial);
  EXPECT_EQ(c.optimizer.kind, OptimizerKind::kOneBitAdam);
  EXPECT_EQ(c.optimizer.as<OneBitAdamParams>().freeze_step, 23000);
  EXPECT_EQ(c.precision, Precision::kFp16);
  EXPECT_EQ(c.grad_dtype, DType::kF16);
  EXPECT_EQ(c.comm_backend, "nccl");
  EXPECT_FALSE(c.total_steps.has_value());
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  // The baseline twin: Adam with the same lr and weight decay.
  ASSERT_TRUE(c.baseline.has_value());
  EXPECT_EQ(c.baseline->kind, OptimizerKind::kAdam);
  EXPECT_EQ(c.baseline->common.lr, c.optimizer.common.lr);
  EXPECT_EQ(c.baseline->common.weight_decay, 0.01);
  EXPECT_THROW(parse_json(kTutorial, "ds.json"), InputError);  // strict JSON refuses it
}

TEST(DeepSpeedConfig, TwinsOfEveryCompressedKind) {
  const std::pair<const char*, OptimizerKind> cases[] = {{"OneBitAdam", OptimizerKind::kAdam},
                                                         {"ZeroOneAdam", OptimizerKind::kAdam},
                                                         {"OneBitLamb", OptimizerKind::kLamb},
                                                         {"Slamb", OptimizerKind::kLamb},
                                                         {"NaiveOneBitLamb", OptimizerKind::kLamb}};
  for (const auto& [type, twin] : cases) {
    const auto c = parse(fmt::format(
        R"({{"train_batch_size": 64, "optimizer": {{"type": "{}", "params": {{"lr": 0.002}}}}}})",
        type));
    ASSERT_TRUE(c.baseline) << type;
    EXPECT_EQ(c.baseline->kind, twin) << type;
    EXPECT_EQ(c.baseline->common.lr, 0.002) << type;
  }
  const auto slamb = parse(
      R"({"train_batch_size": 64, "optimizer": {"type": "Slamb", "params": {"max_coeff": 5}}})");
  EXPECT_EQ(slamb.baseline->as<LambParams>().max_coeff, 5);
  for (const char* plain : {"Adam", "Lamb", "AdamW"}) {
    const auto c =
        parse(fmt::format(R"({{"train_batch_size": 64, "optimizer": {{"type": "{}"}}}})", plain));
    EXPECT_FALSE(c.baseline) << plain;
  }
  const auto adamw =
      parse(R"({"train_batch_size": 64, "optimizer": {"type": "AdamW", "params": {}}})");
  EXPECT_EQ(adamw.optimizer.kind, OptimizerKind::kAdam);
  EXPECT_TRUE(adamw.optimizer.as<AdamParams>().adam_w_mode);
}

TEST(DeepSpeedConfig, AnyTwoBatchFieldsDetermineTheThird) {
  DeepSpeedBatch b;
  b.file = "ds.json";
  b.train_batch_size = 4096;
  b.micro_batch = 16;
  auto r = b.resolve(64, "");
  EXPECT_EQ(r.micro_batch, 16);
  EXPECT_EQ(r.grad_acc, 4);
  b.micro_batch.reset();
  b.grad_acc = 2;
  r = b.resolve(64, "");
  EXPECT_EQ(r.micro_batch, 32);
  EXPECT_EQ(r.grad_acc, 2);
  b.train_batch_size.reset();
  b.micro_batch = 8;
  r = b.resolve(1024, "");
  EXPECT_EQ(r.micro_batch, 8);
  EXPECT_EQ(r.grad_acc, 2);
  b.grad_acc.reset();
  EXPECT_EQ(b.resolve(3, "").grad_acc, 1);  // micro-batch alone: one accumulation step
  b.micro_batch.reset();
  b.train_batch_size = 256;
  r = b.resolve(16, "");  // train_batch_size alone
  EXPECT_EQ(r.micro_batch, 16);
  EXPECT_EQ(r.grad_acc, 1);
  // All three: consistent at exactly one GPU count.
  b.micro_batch = 16;
  b.grad_acc = 4;
  EXPECT_EQ(b.resolve(4, "").grad_acc, 4);
  EXPECT_EQ(b.implied_world_size(), 4);
}

TEST(DeepSpeedConfig, InconsistentBatchFieldsNameFieldValueAndGpus) {
  DeepSpeedBatch b;
  b.file = "ds.json";
  b.train_batch_size = 4096;
  b.micro_batch = 16;
  b.grad_acc = 4;
  try {
    b.resolve(16, "simulate.gpus[0] = 16");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "train_batch_size");
    EXPECT_EQ(e.value(), "4096");
    EXPECT_TRUE(contains(e.what(), "16 × 4 × 16 = 1024")) << e.what();
    EXPECT_TRUE(contains(e.what(), "simulate.gpus[0] = 16")) << e.what();
  }
  b.grad_acc.reset();
  EXPECT_THROW(b.resolve(3, ""), InputError);  // 4096 is not a multiple of 16 × 3
  // No GPU count satisfies these three.
  std::string field;
  const std::string msg = error_of(
      R"({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 16,
          "gradient_accumulation_steps": 4, "optimizer": {"type": "Adam"}})",
      &field);
  EXPECT_EQ(field, "train_batch_size");
  EXPECT_TRUE(contains(msg, "100")) << msg;
  EXPECT_TRUE(contains(
      error_of(R"({"gradient_accumulation_steps": 4, "optimizer": {"type": "Adam"}})", &field),
      "train_batch_size or train_micro_batch_size_per_gpu"));
  EXPECT_TRUE(
      contains(error_of(R"({"train_batch_size": "auto", "optimizer": {"type": "Adam"}})", &field),
               "Hugging Face"));
  EXPECT_TRUE(
      contains(error_of(R"({"train_batch_size": 0, "optimizer": {"type": "Adam"}})", &field),
               "train_batch_size"));
}

TEST(DeepSpeedConfig, RefusesWhatDeepSpeedRefuses) {
  std::string field;
  std::string msg = error_of(R"({"train_batch_size": 64, "zero_optimization": {"stage": 2},
      "optimizer": {"type": "OneBitAdam"}})",
                             &field);
  EXPECT_EQ(field, "zero_optimization.stage");
  EXPECT_TRUE(contains(msg, "not compatible with ZeRO")) << msg;
  msg = error_of(R"({"train_batch_size": 64, "optimizer": {"type": "OneBitAdamm"}})", &field);
  EXPECT_EQ(field, "optimizer.type");
  EXPECT_TRUE(contains(msg, "did you mean 'OneBitAdam'")) << msg;
  // An optimizer DeepSpeed runs and clbo does not model is not called unknown.
  msg = error_of(R"({"train_batch_size": 64, "optimizer": {"type": "Lion"}})", &field);
  EXPECT_EQ(field, "optimizer.type");
  EXPECT_TRUE(contains(msg, "DeepSpeed runs this optimizer, but clbo does not model it")) << msg;
  msg = error_of(R"({"train_batch_size": 64, "optimizer": {"type": "OneBitAdam",
      "params": {"freeze_stp": 10}}})",
                 &field);
  EXPECT_EQ(field, "optimizer.params.freeze_stp");
  error_of(R"({"train_batch_size": 64})", &field);
  EXPECT_EQ(field, "optimizer");
  error_of(R"({"train_batch_size": 64, "optimizer": {"type": "Adam"}, "fp16": {"enabled": true},
      "bf16": {"enabled": true}})",
           &field);
  EXPECT_EQ(field, "bf16.enabled");
  error_of(R"({"train_batch_size": 64, "optimizer": {"type": "OneBitAdam",
      "params": {"comm_backend_name": "gloo"}}})",
           &field);
  EXPECT_EQ(field, "optimizer.params.comm_backend_name");
  error_of(R"({"train_batch_size": 64, "optimizer": {"type": "Adam"},
      "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}})",
           &field);
  EXPECT_EQ(field, "scheduler.params.total_num_steps");
}

TEST(DeepSpeedConfig, ReadsBackendPrecisionAndRunLength) {
  const auto c = parse(R"({"train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": true},
      "optimizer": {"type": "OneBitLamb", "params": {"comm_backend_name": "mpi",
                                                     "cuda_aware": true}},
      "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 5000}}})");
  EXPECT_EQ(c.comm_backend, "mpi");
  EXPECT_TRUE(c.cuda_aware);
  EXPECT_EQ(c.precision, Precision::kBf16);
  EXPECT_EQ(c.grad_dtype, DType::kF16);
  ASSERT_TRUE(c.total_steps);
  EXPECT_EQ(*c.total_steps, 5000);
  EXPECT_EQ(c.total_steps_field, "scheduler.params.total_num_steps");
  const auto fp32 = parse(R"({"train_batch_size": 8, "fp16": {"enabled": true},
      "communication_data_type": "fp32", "optimizer": {"type": "Adam"}})");
  EXPECT_EQ(fp32.grad_dtype, DType::kF32);
  const auto plain = parse(R"({"train_batch_size": 8, "optimizer": {"type": "Adam"}})");
  EXPECT_EQ(plain.precision, Precision::kFp32);
  EXPECT_EQ(plain.grad_dtype, DType::kF32);
}

TEST(DeepSpeedConfig, UnmodelledAndUnknownFieldsAreWarningsNamingThem) {
  const auto c = parse(R"({"train_batch_size": 64, "optimizer": {"type": "Adam"},
      "zero_optimization": {"stage": 1}, "gradient_clipping": 1.0,
      "activation_checkpointing": {"partition_activations": true},
      "curriculum_learning": {"enabled": false}, "train_batch_sise": 3,
      "wall_clock_breakdown": true})");
  std::string all;
  for (const auto& w : c.warnings) all += w + "\n";
  EXPECT_EQ(c.warnings.size(), 4u) << all;
  EXPECT_TRUE(contains(all, "zero_optimization.stage = 1 is not modelled")) << all;
  EXPECT_TRUE(contains(all, "gradient_clipping = 1.0 is not modelled")) << all;
  EXPECT_TRUE(contains(all, "activation_checkpointing is not modelled")) << all;
  EXPECT_TRUE(contains(all, "train_batch_sise is not a DeepSpeed field")) << all;
  EXPECT_TRUE(contains(all, "did you mean 'train_batch_size'")) << all;
  EXPECT_FALSE(contains(all, "curriculum_learning")) << all;   // switched off
  EXPECT_FALSE(contains(all, "wall_clock_breakdown")) << all;  // changes nothing

  // A misspelt field inside fp16, bf16 or zero_optimization leaves its default in force.
  const auto nested = parse(R"({"train_batch_size": 64, "optimizer": {"type": "Adam"},
      "fp16": {"enabeld": true, "loss_scale": 0}, "zero_optimization": {"stag": 2}})");
  all.clear();
  for (const auto& w : nested.warnings) all += w + "\n";
  EXPECT_EQ(nested.precision, Precision::kFp32) << all;
  EXPECT_EQ(nested.warnings.size(), 2u) << all;
  EXPECT_TRUE(contains(all, "fp16.enabeld is not a field of DeepSpeed's fp16 block")) << all;
  EXPECT_TRUE(contains(all, "did you mean 'enabled'")) << all;
  EXPECT_TRUE(contains(all, "zero_optimization.stag is not a field")) << all;
  EXPECT_TRUE(contains(all, "did you mean 'stage'")) << all;

  const auto ignored =
      deepspeed_fields_ignored_by(parse(R"({"train_batch_size": 64, "fp16": {"enabled": true},
          "optimizer": {"type": "OneBitAdam", "params": {"comm_backend_name": "mpi"}},
          "scheduler": {"type": "WarmupLR"}})"),
                                  {"batch"}, "clbo replay");
  ASSERT_EQ(ignored.size(), 3u);
  EXPECT_TRUE(contains(ignored[0], "fp16.enabled")) << ignored[0];
  EXPECT_TRUE(contains(ignored[1], "comm_backend_name")) << ignored[1];
  EXPECT_TRUE(contains(ignored[2], "scheduler (WarmupLR)")) << ignored[2];
}

// Where only an optimizer block is read, a whole config is refused rather than read in part.
TEST(DeepSpeedConfig, AWholeConfigWhereABlockIsExpectedIsRefused) {
  const auto whole = nlohmann::json::parse(
      R"({"train_batch_size": 64, "fp16": {"enabled": true}, "optimizer": {"type": "Adam"}})");
  try {
    require_optimizer_block(whole, "exp.json", "runs[0].optimizer", "\"ds_config\"");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "runs[0].optimizer");
    EXPECT_TRUE(contains(e.what(), "its fp16, train_batch_size would be ignored")) << e.what();
    EXPECT_TRUE(contains(e.what(), "\"ds_config\"")) << e.what();
  }
  EXPECT_NO_THROW(
      require_optimizer_block(nlohmann::json::parse(R"({"type": "Adam"})"), "e", "f", "x"));
  EXPECT_NO_THROW(require_optimizer_block(
      nlohmann::json::parse(R"({"optimizer": {"type": "Adam"}})"), "e", "f", "x"));
}

// A DeepSpeed config given where an experiment is expected is recognised; hjson's syntax is
// accepted only there.
TEST(DeepSpeedConfig, ADeepSpeedConfigInAnExperimentsPlaceIsRecognised) {
  const auto dir = std::filesystem::temp_directory_path() / "clbo_ds_or_experiment";
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const char* text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  bool ds = false;
  load_experiment_or_deepspeed_config(write("ds.json", kTutorial), &ds);
  EXPECT_TRUE(ds);
  load_experiment_or_deepspeed_config(write("exp.json", R"({"steps": 3, "runs": []})"), &ds);
  EXPECT_FALSE(ds);
  load_experiment_or_deepspeed_config(write("sim.json", R"({"simulate": {}})"), &ds);
  EXPECT_FALSE(ds);
  // An experiment with a trailing comma keeps the strict reader's error.
  EXPECT_THROW(
      load_experiment_or_deepspeed_config(write("bad.json", R"({"steps": 3, "runs": [],})"), &ds),
      InputError);
  std::filesystem::remove_all(dir);
}

TEST(DeepSpeedConfig, PrefixLocatesAnInlineConfig) {
  try {
    parse_deepspeed_config(nlohmann::json::parse(R"({"train_batch_size": 64,
        "optimizer": {"type": "Adam", "params": {"lr": -1}}})"),
                           "exp.json", "simulate.ds_config");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "simulate.ds_config.optimizer.params.lr");
  }
  EXPECT_FALSE(is_whole_deepspeed_config(nlohmann::json::object()));
  EXPECT_FALSE(is_whole_deepspeed_config(nlohmann::json::parse(R"({"type": "Adam"})")));
  EXPECT_TRUE(is_whole_deepspeed_config(nlohmann::json::parse(R"({"optimizer": {}})")));
}

}  // namespace
}  // namespace clbo
