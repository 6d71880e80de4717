// `clbo replay` on good input: the trajectory equals an independent Adam computation and,
// for every optimizer, the library driven directly with the same gradients, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "clbo/collectives/local.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/core/npy.hpp"
#include "clbo/optim/optimizer.hpp"
#include "cli_harness.hpp"

namespace {

using clbo::test::CliTest;
using nlohmann::json;

// Deterministic, varied gradients: different per step, rank and element, both signs.
std::vector<float> make_grads(size_t T, size_t p, size_t n) {
  std::vector<float> g(T * p * n);
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1) *
                              (1.0 + 0.25 * static_cast<double>(i % 7)));
  return g;
}

std::vector<float> make_theta0(size_t n) {
  std::vector<float> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = 0.5f - 0.1f * static_cast<float>(i % 11);
  return t;
}

// Every rank's parameters after every step, [T, p, n], from the optimizers run directly.
std::vector<float> library_trajectory(const json& block, const clbo::ParamLayout& layout,
                                      const std::vector<float>& theta0,
                                      const std::vector<float>& grads, size_t T, int p) {
  const size_t n = theta0.size();
  std::vector<float> out(T * static_cast<size_t>(p) * n);
  clbo::run_local(p, [&](clbo::Communicator& comm) {
    const size_t r = static_cast<size_t>(comm.rank());
    auto opt = clbo::make_optimizer(block, "test", layout, p, comm.rank());
    std::vector<float> params = theta0;
    for (size_t t = 0; t < T; ++t) {
      const size_t slab = (t * static_cast<size_t>(p) + r) * n;
      opt->step(comm, params.data(), grads.data() + slab);
      std::memcpy(out.data() + slab, params.data(), n * sizeof(float));
    }
  });
  return out;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ReplayCli : public CliTest {
 protected:
  // Writes theta0, grads and the config, runs replay, and returns the output array.
  clbo::NpyArray replay(const json& block, size_t T, size_t p, size_t n,
                        const std::vector<float>& grads, const std::string& layout_path = "") {
    const auto theta0 = make_theta0(n);
    std::vector<std::string> args = {
        "replay",
        "--optimizer",
        write_json("opt.json", block),
        "--params0",
        write_npy("theta0.npy", {int64_t(n)}, theta0),
        "--grads",
        write_npy("grads.npy", {int64_t(T), int64_t(p), int64_t(n)}, grads),
        "--out",
        path("out/params.npy")};
    if (!layout_path.empty()) args.insert(args.end(), {"--layout", layout_path});
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return {};
    return clbo::read_npy_f32(path("out/params.npy"));
  }
};

// Adam exactly as docs/reference/algorithms.md §7 states it, in double, from the mean gradient.
std::vector<double> adam_reference(const std::vector<float>& theta0,
                                   const std::vector<float>& grads, size_t T, size_t p, double lr) {
  const size_t n = theta0.size();
  // clbo rounds each hyperparameter to fp32 once (docs/optimizers.md, "Arithmetic").
  const double b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  lr = static_cast<float>(lr);
  std::vector<double> theta(theta0.begin(), theta0.end()), m(n, 0), v(n, 0), out;
  for (size_t t = 1; t <= T; ++t) {
    for (size_t i = 0; i < n; ++i) {
      double g = 0;
      for (size_t r = 0; r < p; ++r) g += grads[((t - 1) * p + r) * n + i];
      g /= static_cast<double>(p);
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double mh = m[i] / (1 - std::pow(b1, t)), vh = v[i] / (1 - std::pow(b2, t));
      theta[i] -= lr * (mh / (std::sqrt(vh) + eps));
    }
    for (size_t r = 0; r < p; ++r) out.insert(out.end(), theta.begin(), theta.end());
  }
  return out;
}

TEST_F(ReplayCli, AdamMatchesTheFormula) {
  const size_t T = 3, p = 2, n = 10;
  const auto grads = make_grads(T, p, n);
  const auto out = replay({{"type", "Adam"}, {"params", {{"lr", 0.01}}}}, T, p, n, grads);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{3, 2, 10}));
  const auto ref = adam_reference(make_theta0(n), grads, T, p, 0.01);
  ASSERT_EQ(out.data.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_NEAR(out.data[i], ref[i], 1e-6 * std::max(1.0, std::abs(ref[i]))) << "element " << i;
  // The parameters really moved: a replay that copied theta0 would fail above, but say so.
  EXPECT_GT(std::abs(out.data[0] - make_theta0(n)[0]), 1e-3);
}

TEST_F(ReplayCli, SingleRankMatchesTheFormula) {
  const size_t T = 4, p = 1, n = 10;
  const auto grads = make_grads(T, p, n);
  const auto out = replay({{"type", "Adam"}, {"params", {{"lr", 0.05}}}}, T, p, n, grads);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{4, 1, 10}));
  const auto ref = adam_reference(make_theta0(n), grads, T, p, 0.05);
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_NEAR(out.data[i], ref[i], 1e-6 * std::max(1.0, std::abs(ref[i]))) << "element " << i;
}

// Every optimizer, in phases where it compresses, against the library driven directly.
TEST_F(ReplayCli, EveryOptimizerMatchesTheLibraryBitForBit) {
  const size_t T = 6, n = 40;
  const int p = 3;
  const json layout_json = {{"tensors",
                             {{{"name", "bias"}, {"size", 8}, {"shape", {8}}},
                              {{"name", "w"}, {"size", 32}, {"shape", {4, 8}}}}}};
  const std::string layout_path = write_json("layout.json", layout_json);
  const auto layout = clbo::ParamLayout::from_json(layout_json, layout_path);
  const std::vector<json> blocks = {
      {{"type", "Adam"}, {"params", {{"lr", 0.01}, {"weight_decay", 0.01}}}},
      {{"type", "Lamb"}, {"params", {{"lr", 0.01}}}},
      {{"type", "OneBitAdam"}, {"params", {{"lr", 0.01}, {"freeze_step", 2}}}},
      {{"type", "OneBitLamb"}, {"params", {{"lr", 0.01}, {"freeze_step", 2}}}},
      {{"type", "ZeroOneAdam"},
       {"params",
        {{"lr", 0.01},
         {"var_freeze_step", 2},
         {"var_update_scaler", 1},
         {"local_step_scaler", 1},
         {"local_step_clipper", 2}}}},
      {{"type", "Slamb"}, {"params", {{"lr", 0.01}, {"local_steps", 3}, {"grad_size_thr", 10}}}},
  };
  const auto grads = make_grads(T, p, n);
  for (const auto& block : blocks) {
    SCOPED_TRACE(block.dump());
    const auto out = replay(block, T, p, n, grads, layout_path);
    const auto expected = library_trajectory(block, layout, make_theta0(n), grads, T, p);
    EXPECT_TRUE(bitwise_equal(out.data, expected));
    // Each step changed the parameters (compression phases included).
    for (size_t t = 1; t < T; ++t)
      EXPECT_NE(std::memcmp(&out.data[t * p * n], &out.data[(t - 1) * p * n], n * sizeof(float)), 0)
          << "step " << t;
  }
}

TEST_F(ReplayCli, AWholeDeepSpeedConfigIsAccepted) {
  const size_t T = 2, p = 2, n = 10;
  const auto grads = make_grads(T, p, n);
  const json ds = {{"train_batch_size", 64},
                   {"optimizer", {{"type", "Adam"}, {"params", {{"lr", 0.01}}}}}};
  const auto out = replay(ds, T, p, n, grads);
  const auto ref = adam_reference(make_theta0(n), grads, T, p, 0.01);
  ASSERT_EQ(out.data.size(), ref.size());
  EXPECT_NEAR(out.data[5], ref[5], 1e-6);
  // The block in DeepSpeed's wrapper alone, {"optimizer": {...}}, needs no batch fields.
  const json wrapped = {{"optimizer", {{"type", "Adam"}, {"params", {{"lr", 0.01}}}}}};
  EXPECT_EQ(replay(wrapped, T, p, n, grads).data, out.data);
}

// DeepSpeed's own syntax (hjson's comments and trailing commas) through the one DeepSpeed
// reader: the trajectory is the block's, and what replay does not model is a warning.
TEST_F(ReplayCli, ADeepSpeedConfigWithCommentsMatchesItsBlockAndNamesWhatIsNotModelled) {
  const size_t T = 3, p = 2, n = 10;
  const auto grads = make_grads(T, p, n);
  const std::string ds = write_raw("ds.json", R"(// 1-bit Adam
{
  "train_batch_size": 64,
  "optimizer": {"type": "OneBitAdam", "params": {"lr": 0.01, "freeze_step": 1,},},
  "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}},
  "fp16": {"enabled": true,},
})");
  const auto r = run({"replay", "--optimizer", ds, "--params0",
                      write_npy("theta0.npy", {int64_t(n)}, make_theta0(n)), "--grads",
                      write_npy("grads.npy", {int64_t(T), int64_t(p), int64_t(n)}, grads), "--out",
                      path("out.npy")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("scheduler (WarmupLR) is not modelled by clbo replay"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("fp16.enabled is not modelled by clbo replay"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("train_batch_size"), std::string::npos) << r.err;  // no effect on replay
  const json block = {{"type", "OneBitAdam"}, {"params", {{"lr", 0.01}, {"freeze_step", 1}}}};
  const auto expected =
      library_trajectory(block, clbo::ParamLayout::single(n), make_theta0(n), grads, T, p);
  EXPECT_TRUE(bitwise_equal(clbo::read_npy_f32(path("out.npy")).data, expected));
}

TEST_F(ReplayCli, ZeroWithAOneBitOptimizerIsRefusedAsDeepSpeedRefusesIt) {
  const std::string ds =
      write_json("ds.json", {{"train_batch_size", 64},
                             {"zero_optimization", {{"stage", 1}}},
                             {"optimizer", {{"type", "OneBitAdam"}, {"params", {{"lr", 0.01}}}}}});
  const auto r =
      run({"replay", "--optimizer", ds, "--params0", write_npy("theta0.npy", {4}, make_theta0(4)),
           "--grads", write_npy("grads.npy", {1, 1, 4}, make_grads(1, 1, 4)), "--out",
           path("out.npy")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("zero_optimization.stage"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not compatible with ZeRO"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("out.npy")));
}

TEST_F(ReplayCli, SkipsNonFiniteStepsWhenTheConfigAsks) {
  const size_t T = 3, p = 2, n = 10;
  auto grads = make_grads(T, p, n);
  grads[(1 * p + 1) * n + 4] = std::nanf("");  // step 2, rank 1
  const auto out =
      replay({{"type", "Adam"}, {"params", {{"lr", 0.01}, {"nonfinite", "skip"}}}}, T, p, n, grads);
  ASSERT_EQ(out.data.size(), T * p * n);
  for (size_t r = 0; r < p; ++r) {
    // Step 2 was skipped on every rank: its parameters repeat step 1's.
    EXPECT_EQ(
        std::memcmp(&out.data[(1 * p + r) * n], &out.data[(0 * p + r) * n], n * sizeof(float)), 0);
    EXPECT_NE(
        std::memcmp(&out.data[(2 * p + r) * n], &out.data[(1 * p + r) * n], n * sizeof(float)), 0);
  }
  for (float v : out.data) EXPECT_TRUE(std::isfinite(v));
}

TEST_F(ReplayCli, HelpDescribesEveryFlagAndTheFileFormats) {
  const auto r = run({"replay", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--optimizer", "--params0", "--grads", "--layout", "--out", "(T, p, n)",
                        "(n,)", "'<f4'", "\"tensors\"", "nonfinite"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

}  // namespace
