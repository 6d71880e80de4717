// `clbo replay` on bad input: each case must exit nonzero, print an error naming the file,
// the field and the offending value, and leave no output (nor a temporary) behind.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/core/npy.hpp"
#include "cli_harness.hpp"

namespace {

using nlohmann::json;

constexpr size_t T = 2, P = 2, N = 10;

class ReplayErrors : public clbo::test::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    grads_.assign(T * P * N, 0.25f);
    for (size_t i = 0; i < grads_.size(); ++i) grads_[i] -= 0.01f * static_cast<float>(i % 9);
    write_npy("theta0.npy", {int64_t(N)}, std::vector<float>(N, 1.0f));
    write_grads();
    write_json("opt.json", {{"type", "Adam"}, {"params", {{"lr", 0.01}}}});
  }
  void write_grads() { write_npy("grads.npy", {int64_t(T), int64_t(P), int64_t(N)}, grads_); }

  std::vector<std::string> args(const std::string& layout = "") const {
    std::vector<std::string> a = {"replay",           "--optimizer", path("opt.json"),  "--params0",
                                  path("theta0.npy"), "--grads",     path("grads.npy"), "--out",
                                  path("out.npy")};
    if (!layout.empty()) a.insert(a.end(), {"--layout", layout});
    return a;
  }

  // Runs replay and checks the failure contract; `parts` must all appear on stderr.
  void expect_rejected(const std::vector<std::string>& parts, const std::string& layout = "") {
    const auto before = listing();
    const auto r = run(args(layout));
    EXPECT_NE(r.exit_code, 0) << r.err;
    for (const auto& s : parts) EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
    EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
    EXPECT_EQ(listing(), before) << "replay left files behind:\n" << r.err;
  }
  void expect_config_rejected(const json& block, const std::vector<std::string>& parts) {
    write_json("opt.json", block);
    std::vector<std::string> all = parts;
    all.push_back(path("opt.json"));
    expect_rejected(all);
  }

  std::vector<float> grads_;
};

TEST_F(ReplayErrors, TheBaseCaseIsValid) {
  // Guards the tests below: each one breaks exactly one thing of this run.
  const auto r = run(args());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(clbo::read_npy_f32(path("out.npy")).shape, (std::vector<int64_t>{2, 2, 10}));
}

TEST_F(ReplayErrors, UnknownOptimizerTypeSuggestsTheNearest) {
  expect_config_rejected({{"type", "OneBitAdm"}, {"params", {{"lr", 0.01}}}},
                         {"type", "OneBitAdm", "did you mean 'OneBitAdam'"});
}

TEST_F(ReplayErrors, UnknownParameterSuggestsTheNearest) {
  expect_config_rejected({{"type", "OneBitAdam"}, {"params", {{"lr", 0.01}, {"freze_step", 5}}}},
                         {"freze_step", "5", "did you mean 'freeze_step'"});
}

TEST_F(ReplayErrors, NonPositiveLearningRate) {
  expect_config_rejected({{"type", "Adam"}, {"params", {{"lr", 0}}}}, {"lr", "0"});
  expect_config_rejected({{"type", "Lamb"}, {"params", {{"lr", -0.5}}}}, {"lr", "-0.5"});
}

TEST_F(ReplayErrors, NegativeFreezeStep) {
  expect_config_rejected({{"type", "OneBitAdam"}, {"params", {{"lr", 0.01}, {"freeze_step", -1}}}},
                         {"freeze_step", "-1"});
}

TEST_F(ReplayErrors, CompressRatioOutsideZeroOne) {
  for (double k : {0.0, 1.5, -0.1})
    expect_config_rejected({{"type", "Slamb"}, {"params", {{"lr", 0.01}, {"compress_ratio", k}}}},
                           {"compress_ratio", json(k).dump()});
}

TEST_F(ReplayErrors, BetasOutsideZeroOne) {
  expect_config_rejected({{"type", "Adam"}, {"params", {{"lr", 0.01}, {"betas", {0.9, 1.0}}}}},
                         {"betas", "[0.9,1.0]"});
  expect_config_rejected({{"type", "Adam"}, {"params", {{"lr", 0.01}, {"betas", {-0.1, 0.9}}}}},
                         {"betas", "[-0.1,0.9]"});
}

TEST_F(ReplayErrors, LayoutNotSummingToN) {
  const std::string layout = write_json(
      "layout.json", {{"tensors", {{{"name", "a"}, {"size", 4}}, {{"name", "b"}, {"size", 5}}}}});
  expect_rejected({layout, "tensors", "sum 9", "n = 10"}, layout);
}

TEST_F(ReplayErrors, GradsNotFloat32) {
  std::string bytes = clbo::encode_npy_f32({int64_t(T), int64_t(P), int64_t(N)}, grads_.data());
  bytes.replace(bytes.find("<f4"), 3, "<i4");
  write_raw("grads.npy", bytes);
  expect_rejected({path("grads.npy"), "descr", "'<i4'"});
}

TEST_F(ReplayErrors, GradsFortranOrdered) {
  std::string bytes = clbo::encode_npy_f32({int64_t(T), int64_t(P), int64_t(N)}, grads_.data());
  bytes.replace(bytes.find("False"), 5, "True ");
  write_raw("grads.npy", bytes);
  expect_rejected({path("grads.npy"), "fortran_order", "True"});
}

TEST_F(ReplayErrors, GradsTruncated) {
  std::string bytes = clbo::encode_npy_f32({int64_t(T), int64_t(P), int64_t(N)}, grads_.data());
  bytes.resize(bytes.size() - 4);
  write_raw("grads.npy", bytes);
  expect_rejected({path("grads.npy"), "payload", "156 bytes", "truncated"});
}

TEST_F(ReplayErrors, GradsOfTheWrongRank) {
  write_npy("grads.npy", {int64_t(T * P), int64_t(N)}, grads_);
  expect_rejected({path("grads.npy"), "shape", "(4, 10)", "[T, p, n]"});
}

TEST_F(ReplayErrors, Params0OfTheWrongRankOrLength) {
  write_npy("theta0.npy", {2, 5}, std::vector<float>(N, 1.0f));
  expect_rejected({path("theta0.npy"), "shape", "(2, 5)"});
  write_npy("theta0.npy", {int64_t(N + 1)}, std::vector<float>(N + 1, 1.0f));
  expect_rejected({path("theta0.npy"), "shape", "(11,)", "(10,)"});
}

TEST_F(ReplayErrors, NaNInGradsNamesStepRankAndIndex) {
  grads_[(1 * P + 0) * N + 3] = std::nanf("");
  write_grads();
  expect_rejected(
      {path("grads.npy"), "grads[1, 0, 3]", "nan", "step 2", "rank 0", "element 3", "nonfinite"});
}

TEST_F(ReplayErrors, InfInGradsNamesStepRankAndIndex) {
  grads_[(0 * P + 1) * N + 9] = -INFINITY;
  grads_[(1 * P + 1) * N + 0] = INFINITY;  // later: the first one is reported
  write_grads();
  expect_rejected({path("grads.npy"), "grads[0, 1, 9]", "-inf"});
}

TEST_F(ReplayErrors, MissingInputFiles) {
  std::filesystem::remove(path("grads.npy"));
  expect_rejected({path("grads.npy"), "cannot open"});
}

TEST_F(ReplayErrors, FailedRunKeepsAnExistingOutputUntouched) {
  write_raw("out.npy", "previous contents");
  write_json("opt.json", {{"type", "Adam"}, {"params", {{"lr", -1}}}});
  expect_rejected({"lr"});
  EXPECT_EQ(clbo::test::slurp(path("out.npy")), "previous contents");
}

}  // namespace
