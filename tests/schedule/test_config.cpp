// Parsing and validation of DeepSpeed-style optimizer blocks (clbo_schedule only).
#include <gtest/gtest.h>

#include <string>

#include "clbo/core/error.hpp"
#include "clbo/schedule/config.hpp"

namespace clbo {
namespace {

nlohmann::json block(const std::string& type, nlohmann::json params = nlohmann::json::object()) {
  return nlohmann::json{{"type", type}, {"params", std::move(params)}};
}

// Parses `j` expecting an InputError on `field` whose message contains each of `parts`.
void expect_input_error(const nlohmann::json& j, const std::string& field,
                        const std::vector<std::string>& parts) {
  try {
    parse_optimizer_config(j, "exp.json");
    FAIL() << "no error for " << j.dump();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "exp.json");
    EXPECT_EQ(e.field(), field) << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find("exp.json"), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << " lacks " << p;
  }
}

TEST(OptimConfig, DefaultsFollowDeepSpeed) {
  const auto c = parse_optimizer_config(block("OneBitLamb"), "x.json");
  EXPECT_EQ(c.kind, OptimizerKind::kOneBitLamb);
  EXPECT_EQ(c.common.lr, 1e-3);
  EXPECT_EQ(c.common.beta1, 0.9);
  EXPECT_EQ(c.common.beta2, 0.999);
  EXPECT_EQ(c.common.eps, 1e-8);
  EXPECT_EQ(c.common.nonfinite, NonfinitePolicy::kError);
  const auto& l = c.as<OneBitLambParams>();
  EXPECT_EQ(l.freeze_step, 100000);
  EXPECT_EQ(l.max_coeff, 10.0);
  EXPECT_EQ(l.min_coeff, 0.01);
  EXPECT_EQ(l.coeff_beta, 0.9);
  EXPECT_EQ(l.factor_max, 4.0);
  EXPECT_EQ(l.factor_min, 0.5);
  EXPECT_EQ(l.factor_threshold, 0.1);
  EXPECT_EQ(l.comm_granularity, CommGranularity::kFlat);
  EXPECT_FALSE(l.compat_deepspeed_step_count);
  EXPECT_FALSE(l.compat_keep_padding_tail);

  const auto z = parse_optimizer_config(block("ZeroOneAdam"), "x.json").as<ZeroOneAdamParams>();
  EXPECT_EQ(z.var_freeze_step, 100000);
  EXPECT_EQ(z.var_update_scaler, 16);
  EXPECT_EQ(z.local_step_scaler, 32768);  // not DeepSpeed's typo 32678
  EXPECT_EQ(z.local_step_clipper, 16);

  const auto s = parse_optimizer_config(block("Slamb"), "x.json");
  EXPECT_EQ(s.common.eps, 1e-6);  // Slamb_V2's default
  EXPECT_EQ(s.as<SlambParams>().compress_ratio, 0.1);
  EXPECT_EQ(s.as<SlambParams>().beta3, 0.99);
  EXPECT_EQ(s.as<SlambParams>().local_steps, 100);
  EXPECT_EQ(s.as<SlambParams>().grad_size_thr, 9000);
  EXPECT_EQ(s.as<SlambParams>().max_coeff, 1000.0);
  EXPECT_EQ(s.as<SlambParams>().min_coeff, 0.01);
  EXPECT_EQ(s.as<SlambParams>().comm_dtype, DType::kF16);

  const auto a = parse_optimizer_config(block("Adam"), "x.json").as<AdamParams>();
  EXPECT_TRUE(a.bias_correction);
  EXPECT_TRUE(a.adam_w_mode);
}

TEST(OptimConfig, TypeNamesAreCaseInsensitive) {
  EXPECT_EQ(parse_optimizer_config(block("onebitadam"), "x").kind, OptimizerKind::kOneBitAdam);
  EXPECT_EQ(parse_optimizer_config(block("ONEBITLAMB"), "x").kind, OptimizerKind::kOneBitLamb);
  EXPECT_EQ(parse_optimizer_config(block("zerooneadam"), "x").kind, OptimizerKind::kZeroOneAdam);
  EXPECT_EQ(parse_optimizer_config(block("adam"), "x").kind, OptimizerKind::kAdam);
  EXPECT_EQ(parse_optimizer_config(block("LAMB"), "x").kind, OptimizerKind::kLamb);
  EXPECT_EQ(parse_optimizer_config(block("slamb"), "x").kind, OptimizerKind::kSlamb);
  EXPECT_EQ(parse_optimizer_config(block("slamb"), "x").type_name(), "Slamb");
}

TEST(OptimConfig, AcceptsAWholeDeepSpeedConfigAsPasted) {
  const auto j = nlohmann::json::parse(R"({
    "train_batch_size": 4096,
    "fp16": {"enabled": true},
    "optimizer": {"type": "OneBitLamb", "params": {
      "lr": 1e-3, "weight_decay": 0.01, "bias_correction": false, "max_coeff": 0.3,
      "min_coeff": 0.01, "freeze_step": 1000, "cuda_aware": false, "comm_backend_name": "nccl",
      "coeff_beta": 0.9, "factor_max": 4.0, "factor_min": 0.5, "factor_threshold": 0.1}}})");
  const auto c = parse_optimizer_config(j, "ds.json");
  EXPECT_EQ(c.kind, OptimizerKind::kOneBitLamb);
  EXPECT_EQ(c.as<OneBitLambParams>().freeze_step, 1000);
  EXPECT_EQ(c.as<OneBitLambParams>().max_coeff, 0.3);
  EXPECT_EQ(c.common.weight_decay, 0.01);
}

TEST(OptimConfig, AcceptsDeepSpeedOnlyParameters) {
  EXPECT_NO_THROW(parse_optimizer_config(block("OneBitAdam", {{"freeze_step", 10},
                                                              {"bias_correction", true},
                                                              {"eps_inside_sqrt", false},
                                                              {"max_grad_norm", 1.0},
                                                              {"amsgrad", false},
                                                              {"cuda_aware", true},
                                                              {"comm_backend_name", "mpi"}}),
                                         "x"));
  EXPECT_EQ(parse_optimizer_config(block("ZeroOneAdam", {{"local_step_scaler", 32678}}), "x")
                .as<ZeroOneAdamParams>()
                .local_step_scaler,
            32678);
}

TEST(OptimConfig, UnknownTypeSuggestsTheNearestName) {
  expect_input_error(block("OneBitAdm"), "type", {"\"OneBitAdm\"", "did you mean 'OneBitAdam'"});
  expect_input_error(nlohmann::json{{"optimizer", {{"type", "Slam"}}}}, "optimizer.type",
                     {"did you mean 'Slamb'"});
  expect_input_error(nlohmann::json{{"params", nlohmann::json::object()}}, "type", {"missing"});
}

TEST(OptimConfig, UnknownParameterSuggestsTheNearestName) {
  expect_input_error(block("OneBitAdam", {{"freeze_stp", 10}}), "params.freeze_stp",
                     {"unknown parameter", "did you mean 'freeze_step'"});
  expect_input_error(nlohmann::json{{"optimizer", block("Lamb", {{"max_cooef", 1.0}})}},
                     "optimizer.params.max_cooef", {"did you mean 'max_coeff'"});
  expect_input_error(nlohmann::json{{"type", "Adam"}, {"parms", nlohmann::json::object()}}, "parms",
                     {"did you mean 'params'"});
  // A parameter of another optimizer is unknown here.
  expect_input_error(block("Adam", {{"freeze_step", 10}}), "params.freeze_step",
                     {"unknown parameter"});
}

TEST(OptimConfig, RejectsBadValuesNamingFieldAndValue) {
  expect_input_error(block("Adam", {{"lr", 0}}), "params.lr", {"= 0", "> 0"});
  expect_input_error(block("OneBitAdam", {{"lr", -0.1}}), "params.lr", {"-0.1"});
  expect_input_error(nlohmann::json{{"optimizer", block("Lamb", {{"lr", -1}})}},
                     "optimizer.params.lr", {"-1"});
  expect_input_error(block("OneBitAdam", {{"freeze_step", -1}}), "params.freeze_step",
                     {"-1", ">= 0"});
  expect_input_error(block("OneBitLamb", {{"freeze_step", -5}}), "params.freeze_step", {"-5"});
  expect_input_error(block("Slamb", {{"compress_ratio", 0}}), "params.compress_ratio", {"(0, 1]"});
  expect_input_error(block("Slamb", {{"compress_ratio", 1.5}}), "params.compress_ratio",
                     {"1.5", "(0, 1]"});
  expect_input_error(block("Adam", {{"betas", {0.9, 1.0}}}), "params.betas",
                     {"[0.9,1.0]", "[0, 1)"});
  expect_input_error(block("Adam", {{"betas", {0.9}}}), "params.betas", {"[beta1, beta2]"});
  expect_input_error(block("Adam", {{"eps", 0}}), "params.eps", {"> 0"});
  expect_input_error(block("Adam", {{"weight_decay", -0.1}}), "params.weight_decay", {">= 0"});
  expect_input_error(block("Adam", {{"lr", "fast"}}), "params.lr", {"expected a number"});
  expect_input_error(block("Slamb", {{"beta3", 1.0}}), "params.beta3", {"[0, 1)"});
  expect_input_error(block("Slamb", {{"local_steps", 0}}), "params.local_steps", {">= 1"});
  expect_input_error(block("Slamb", {{"comm_dtype", "bf16"}}), "params.comm_dtype",
                     {"fp16", "fp32"});
  expect_input_error(block("ZeroOneAdam", {{"var_update_scaler", 0}}), "params.var_update_scaler",
                     {">= 1"});
  expect_input_error(block("ZeroOneAdam", {{"local_step_clipper", 0}}), "params.local_step_clipper",
                     {">= 1"});
  expect_input_error(block("OneBitLamb", {{"factor_max", 0.1}}), "params.factor_max",
                     {"factor_min"});
  expect_input_error(block("Lamb", {{"max_coeff", 0.001}}), "params.max_coeff", {"min_coeff"});
  expect_input_error(block("Adam", {{"nonfinite", "ignore"}}), "params.nonfinite",
                     {"error", "skip"});
  expect_input_error(block("OneBitAdam", {{"comm_granularity", "group"}}),
                     "params.comm_granularity", {"flat", "tensor"});
}

TEST(OptimConfig, RejectsUnsupportedDeepSpeedValues) {
  expect_input_error(block("OneBitAdam", {{"amsgrad", true}}), "params.amsgrad", {"AMSGrad"});
  expect_input_error(block("Adam", {{"amsgrad", true}}), "params.amsgrad", {"AMSGrad"});
  expect_input_error(block("ZeroOneAdam", {{"eps_inside_sqrt", true}}), "params.eps_inside_sqrt",
                     {"outside the square root"});
  expect_input_error(block("Lamb", {{"max_grad_norm", 1.0}}), "params.max_grad_norm", {"clipping"});
  expect_input_error(block("OneBitAdam", {{"comm_backend_name", "gloo"}}),
                     "params.comm_backend_name", {"nccl"});
  expect_input_error(
      block("OneBitLamb", {{"comm_granularity", "tensor"}, {"compat_keep_padding_tail", true}}),
      "params.compat_keep_padding_tail", {"flat"});
}

TEST(OptimConfig, CanonicalJsonRoundTrips) {
  const std::vector<nlohmann::json> blocks = {
      block("Adam", {{"adam_w_mode", false}, {"lr", 0.5}}),
      block("Lamb", {{"bias_correction", false}, {"max_coeff", 0.3}}),
      block("OneBitAdam", {{"freeze_step", 7}, {"nonfinite", "skip"}}),
      block("OneBitLamb", {{"compat_keep_padding_tail", true}, {"coeff_beta", 0.8}}),
      block("ZeroOneAdam", {{"local_step_scaler", 32678}, {"comm_granularity", "tensor"}}),
      block("Slamb", {{"comm_dtype", "fp32"}, {"seed", 42}, {"betas", {0.8, 0.99}}}),
      block("OneBitAdamNoErrorFeedback", {{"freeze_step", 3}, {"comm_granularity", "tensor"}}),
      block("NaiveOneBitAdam", {{"dense_steps", 2}, {"eps", 1e-6}}),
      block("NaiveOneBitLamb", {{"freeze_step", 9}, {"max_coeff", 0.3}})};
  for (const auto& b : blocks) {
    const OptimizerConfig c = parse_optimizer_config(b, "x");
    const nlohmann::json j = to_json(c);
    EXPECT_EQ(parse_optimizer_config(j, "canonical"), c) << j.dump();
    EXPECT_EQ(to_json(parse_optimizer_config(j, "canonical")), j);
  }
}

TEST(OptimConfig, WarmupStepsHonourTheDeepSpeedStepCount) {
  EXPECT_EQ(
      onebit_warmup_steps(parse_optimizer_config(block("OneBitAdam", {{"freeze_step", 5}}), "x")),
      5);
  EXPECT_EQ(
      onebit_warmup_steps(parse_optimizer_config(
          block("OneBitAdam", {{"freeze_step", 5}, {"compat_deepspeed_step_count", true}}), "x")),
      4);
  EXPECT_EQ(
      onebit_warmup_steps(parse_optimizer_config(
          block("OneBitLamb", {{"freeze_step", 0}, {"compat_deepspeed_step_count", true}}), "x")),
      0);
  EXPECT_EQ(onebit_warmup_steps(parse_optimizer_config(block("NaiveOneBitAdam"), "x")), 0);
  EXPECT_EQ(onebit_warmup_steps(
                parse_optimizer_config(block("NaiveOneBitAdam", {{"dense_steps", 6}}), "x")),
            6);
  EXPECT_EQ(onebit_warmup_steps(
                parse_optimizer_config(block("NaiveOneBitLamb", {{"freeze_step", 7}}), "x")),
            7);
  EXPECT_EQ(onebit_warmup_steps(parse_optimizer_config(
                block("OneBitAdamNoErrorFeedback", {{"freeze_step", 8}}), "x")),
            8);
  EXPECT_THROW(onebit_warmup_steps(parse_optimizer_config(block("Adam"), "x")), Error);
}

// The ablations are kinds of their own: their own fields, defaults and errors, never a
// OneBitAdam in disguise.
TEST(OptimConfig, NaiveSchemesHaveTheirOwnTypedConfigs) {
  const auto naive = parse_optimizer_config(block("naiveonebitadam"), "x");
  EXPECT_EQ(naive.kind, OptimizerKind::kNaiveOneBitAdam);
  EXPECT_EQ(naive.type_name(), "NaiveOneBitAdam");
  EXPECT_EQ(naive.as<NaiveOneBitAdamParams>().dense_steps, 0);  // the paper's scheme
  const auto lamb = parse_optimizer_config(block("NaiveOneBitLamb"), "x");
  EXPECT_EQ(lamb.as<NaiveOneBitLambParams>().freeze_step, 100000);
  EXPECT_EQ(lamb.as<NaiveOneBitLambParams>().max_coeff, 10.0);
  const auto no_ef = parse_optimizer_config(block("OneBitAdamNoErrorFeedback"), "x");
  EXPECT_EQ(no_ef.kind, OptimizerKind::kOneBitAdamNoErrorFeedback);
  EXPECT_EQ(comm_granularity(no_ef), CommGranularity::kFlat);
  // A field of another kind is unknown here.
  expect_input_error(block("NaiveOneBitAdam", {{"freeze_step", 5}}), "params.freeze_step", {});
  expect_input_error(block("NaiveOneBitLamb", {{"coeff_beta", 0.9}}), "params.coeff_beta", {});
  expect_input_error(block("OneBitAdamNoErrorFeedback", {{"compat_deepspeed_step_count", true}}),
                     "params.compat_deepspeed_step_count", {});
  expect_input_error(block("NaiveOneBitAdam", {{"dense_steps", -1}}), "params.dense_steps", {"-1"});
  expect_input_error(block("NaiveOneBitLamb", {{"max_coeff", 0.001}}), "params.max_coeff",
                     {"min_coeff"});
}

}  // namespace
}  // namespace clbo
