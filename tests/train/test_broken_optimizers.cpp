// The defining behaviour of "1-bit compression of Adam without frozen variance"
// (OneBitAdamUnfrozenVariance, train/src/broken_optimizers.cpp): after freeze_step every rank
// 1-bit allreduces its *gradient* with error feedback, and Adam keeps updating both m and v
// from that compressed gradient ĝ, so v sees ĝ² (one magnitude per server chunk) instead of
// being frozen as in 1-bit Adam. The test mirrors the compressed allreduce with its own
// error-feedback state and checks m and v bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/train/broken_optimizers.hpp"

namespace {

using clbo::Communicator;
using clbo::OnebitState;
using clbo::ParamLayout;

constexpr int kRanks = 4;
constexpr int kFreeze = 3;
constexpr float kBeta1 = 0.9f, kBeta2 = 0.999f;

// m and v as BrokenOneBitAdam::save_state writes them: step, lr, then m and v as
// (u64 count, floats).
struct Moments {
  std::vector<float> m, v;
};

std::vector<float> read_floats(std::istream& in) {
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), sizeof n);
  std::vector<float> x(n);
  in.read(reinterpret_cast<char*>(x.data()), static_cast<std::streamsize>(n * sizeof(float)));
  return x;
}

Moments moments_of(const clbo::Optimizer& opt) {
  std::stringstream s;
  opt.save_state(s);
  int64_t t = 0;
  float lr = 0;
  s.read(reinterpret_cast<char*>(&t), sizeof t);
  s.read(reinterpret_cast<char*>(&lr), sizeof lr);
  Moments mo;
  mo.m = read_floats(s);
  mo.v = read_floats(s);
  return mo;
}

// Deterministic, rank- and step-dependent gradients with a wide spread of magnitudes.
std::vector<float> gradient(size_t n, int rank, int step) {
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    const float a = static_cast<float>((i * 37 + static_cast<size_t>(rank) * 11 + step * 5) % 23);
    g[i] = (a - 11.0f) * 1e-3f * static_cast<float>(1 + i % 5);
  }
  return g;
}

class UnfrozenVariance : public ::testing::Test {
 protected:
  UnfrozenVariance() : layout_(ParamLayout::from_sizes({5, 40, 19})) {
    const auto block = nlohmann::json::parse(R"({"type": "OneBitAdamUnfrozenVariance",
        "params": {"lr": 0.01, "eps": 1e-6, "freeze_step": 3}})");
    for (int r = 0; r < kRanks; ++r) {
      opts_.push_back(clbo::train::make_broken_optimizer(block, "test.json", layout_, kRanks, r));
      params_.emplace_back(layout_.total(), 0.5f);
    }
  }

  // One step of every rank with gradient(step).
  void step_all(int step) {
    clbo::run_local(kRanks, [&](Communicator& comm) {
      const int r = comm.rank();
      const auto g = gradient(layout_.total(), r, step);
      opts_[static_cast<size_t>(r)]->step(comm, params_[static_cast<size_t>(r)].data(), g.data());
    });
  }

  ParamLayout layout_;
  std::vector<std::unique_ptr<clbo::Optimizer>> opts_;
  std::vector<std::vector<float>> params_;
};

TEST_F(UnfrozenVariance, VarianceKeepsLearningFromTheCompressedGradient) {
  const size_t n = layout_.total();
  for (int s = 1; s <= kFreeze; ++s) step_all(s);
  // The mirror of every rank's error feedback, fresh at the first compressed step as the
  // optimizer's is (warmup averages densely).
  std::vector<OnebitState> mirror(kRanks);
  for (int s = kFreeze + 1; s <= kFreeze + 4; ++s) {
    SCOPED_TRACE(s);
    const Moments before = moments_of(*opts_[0]);
    std::vector<std::vector<float>> ghat(kRanks);
    clbo::run_local(kRanks, [&](Communicator& comm) {
      const auto r = static_cast<size_t>(comm.rank());
      ghat[r] = gradient(n, comm.rank(), s);
      clbo::compressed_allreduce(comm, mirror[r], ghat[r].data(), n);
    });
    step_all(s);
    const Moments after = moments_of(*opts_[0]);
    bool v_moved = false;
    std::set<float> magnitudes;
    for (size_t i = 0; i < n; ++i) {
      const float g = ghat[0][i];
      // Adam's moment updates (kernels/adam.hpp order) on the compressed gradient.
      ASSERT_EQ(after.m[i], kBeta1 * before.m[i] + (1.0f - kBeta1) * g) << "m[" << i << "]";
      ASSERT_EQ(after.v[i], kBeta2 * before.v[i] + (1.0f - kBeta2) * g * g) << "v[" << i << "]";
      v_moved |= after.v[i] != before.v[i];
      magnitudes.insert(std::fabs(g));
    }
    EXPECT_TRUE(v_moved) << "the variance must not be frozen";
    // ĝ is a 1-bit reconstruction: one magnitude per server chunk, so v loses the
    // per-coordinate scale Adam relies on.
    EXPECT_LE(magnitudes.size(), static_cast<size_t>(kRanks));
    // Every rank holds the same moments (the compressed result is replicated).
    for (int r = 1; r < kRanks; ++r) {
      const Moments other = moments_of(*opts_[static_cast<size_t>(r)]);
      EXPECT_EQ(0, std::memcmp(other.v.data(), after.v.data(), n * sizeof(float))) << r;
    }
  }
}

// The contrast: the other variant runs 1-bit Adam's compression phase, whose v stays frozen
// after freeze_step (so the check above can tell a frozen variance from a moving one).
TEST_F(UnfrozenVariance, OneBitAdamsCompressionPhaseKeepsTheVarianceFrozen) {
  auto block = nlohmann::json::parse(R"({"type": "OneBitAdamNoErrorFeedback",
      "params": {"lr": 0.01, "eps": 1e-6, "freeze_step": 3}})");
  std::vector<std::unique_ptr<clbo::Optimizer>> no_ef;
  for (int r = 0; r < kRanks; ++r)
    no_ef.push_back(clbo::train::make_broken_optimizer(block, "test.json", layout_, kRanks, r));
  auto params = params_;
  auto run = [&](int s) {
    clbo::run_local(kRanks, [&](Communicator& comm) {
      const auto r = static_cast<size_t>(comm.rank());
      const auto g = gradient(layout_.total(), comm.rank(), s);
      no_ef[r]->step(comm, params[r].data(), g.data());
    });
  };
  for (int s = 1; s <= kFreeze; ++s) run(s);
  const auto frozen = moments_of(*no_ef[0]).v;
  for (int s = kFreeze + 1; s <= kFreeze + 3; ++s) run(s);
  EXPECT_EQ(moments_of(*no_ef[0]).v, frozen);
}

}  // namespace
