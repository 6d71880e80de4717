// Every optimizer against the plain re-implementation of docs/reference/algorithms.md in
// reference.hpp, for p = 1 and p = 3, through all of its phases. Uncompressed arithmetic is checked
// against independent loops; compressed phases share only the collective call.
#include <functional>

#include "optim_test_util.hpp"
#include "reference.hpp"

namespace clbo::test {
namespace {

const nlohmann::json kHyper = {
    {"lr", 0.01}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.01}};
const ref::Hyper kRefHyper{0.01f, 0.9f, 0.999f, 1e-8f, 0.01f};

nlohmann::json with_hyper(nlohmann::json extra) {
  nlohmann::json p = kHyper;
  p.update(extra);
  return p;
}

// Steps the optimizers and p reference ranks side by side and compares every rank's params
// after every step, relative to max(1, |reference|).
template <class Ref>
using RefStep =
    std::function<void(Ref&, Communicator&, const ParamLayout&, float*,
                       const std::vector<float>& local, const std::vector<float>& mean)>;

template <class Ref>
void expect_matches_reference(const nlohmann::json& cfg, int p, int steps, const Ref& proto,
                              const RefStep<Ref>& ref_step, double tol = 5e-6) {
  World world(cfg, test_layout(), p);
  std::vector<Ref> refs(static_cast<size_t>(p), proto);
  std::vector<std::vector<float>> ref_params(static_cast<size_t>(p),
                                             initial_params(world.layout.total()));
  double worst = 0;
  for (int s = 1; s <= steps; ++s) {
    world.step();
    std::vector<std::vector<float>> grads;
    for (int r = 0; r < p; ++r) grads.push_back(make_grad(world.layout, r, s));
    const std::vector<float> mean = ref::mean_of(grads);
    run_local(p, [&](Communicator& comm) {
      const size_t r = static_cast<size_t>(comm.rank());
      ref_step(refs[r], comm, world.layout, ref_params[r].data(), grads[r], mean);
    });
    for (size_t r = 0; r < static_cast<size_t>(p); ++r) {
      for (size_t i = 0; i < world.layout.total(); ++i) {
        const double want = ref_params[r][i], got = world.params[r][i];
        const double err = std::abs(got - want) / std::max(1.0, std::abs(want));
        worst = std::max(worst, err);
        ASSERT_LE(err, tol) << "step " << s << " rank " << r << " element " << i << ": got " << got
                            << ", reference " << want;
      }
    }
  }
  // The run must have moved the parameters, or the comparison proves nothing.
  EXPECT_GT(std::abs(world.params[0][0] - initial_params(1)[0]), 1e-4f);
  std::ostringstream worst_text;
  worst_text << std::scientific << worst;
  ::testing::Test::RecordProperty("worst_relative_error", worst_text.str());
}

class ReferenceTest : public ::testing::TestWithParam<int> {};

const RefStep<ref::Dense> kDenseStep = [](ref::Dense& d, Communicator&, const ParamLayout& l,
                                          float* w, const std::vector<float>&,
                                          const std::vector<float>& mean) { d.step(l, w, mean); };

TEST_P(ReferenceTest, AdamWithBiasCorrection) {
  ref::Dense proto;
  proto.h = kRefHyper;
  expect_matches_reference<ref::Dense>(block("Adam", kHyper), GetParam(), 6, proto, kDenseStep);
}

TEST_P(ReferenceTest, AdamL2Mode) {
  ref::Dense proto;
  proto.h = kRefHyper;
  proto.l2 = true;
  expect_matches_reference<ref::Dense>(block("Adam", with_hyper({{"adam_w_mode", false}})),
                                       GetParam(), 6, proto, kDenseStep);
}

TEST_P(ReferenceTest, Lamb) {
  ref::Dense proto;
  proto.h = kRefHyper;
  proto.lamb = true;
  proto.max_coeff = 0.3f;
  expect_matches_reference<ref::Dense>(block("Lamb", with_hyper({{"max_coeff", 0.3}})), GetParam(),
                                       6, proto, kDenseStep);
}

const RefStep<ref::OneBitAdam> kOneBitAdamStep =
    [](ref::OneBitAdam& o, Communicator& comm, const ParamLayout& l, float* w,
       const std::vector<float>& local,
       const std::vector<float>& mean) { o.step(comm, l, w, local, mean); };

TEST_P(ReferenceTest, OneBitAdamWarmupThenCompression) {
  ref::OneBitAdam proto;
  proto.h = kRefHyper;
  proto.warmup = 4;
  expect_matches_reference<ref::OneBitAdam>(block("OneBitAdam", with_hyper({{"freeze_step", 4}})),
                                            GetParam(), 12, proto, kOneBitAdamStep);
}

TEST_P(ReferenceTest, OneBitAdamPerTensorAndDeepSpeedStepCount) {
  ref::OneBitAdam proto;
  proto.h = kRefHyper;
  proto.warmup = 3;  // DeepSpeed runs freeze_step − 1 dense updates
  proto.per_tensor = true;
  const auto cfg = block("OneBitAdam", with_hyper({{"freeze_step", 4},
                                                   {"comm_granularity", "tensor"},
                                                   {"compat_deepspeed_step_count", true}}));
  expect_matches_reference<ref::OneBitAdam>(cfg, GetParam(), 10, proto, kOneBitAdamStep);
}

TEST_P(ReferenceTest, OneBitAdamNoErrorFeedback) {
  ref::OneBitAdam proto;
  proto.h = kRefHyper;
  proto.warmup = 4;
  proto.error_feedback = false;
  expect_matches_reference<ref::OneBitAdam>(
      block("OneBitAdamNoErrorFeedback", with_hyper({{"freeze_step", 4}})), GetParam(), 12, proto,
      kOneBitAdamStep);
}

const RefStep<ref::NaiveOneBitAdam> kNaiveAdamStep =
    [](ref::NaiveOneBitAdam& o, Communicator& comm, const ParamLayout& l, float* w,
       const std::vector<float>& local,
       const std::vector<float>& mean) { o.step(comm, l, w, local, mean); };

TEST_P(ReferenceTest, NaiveOneBitAdamFromTheFirstStep) {
  ref::NaiveOneBitAdam proto;
  proto.h = kRefHyper;
  expect_matches_reference<ref::NaiveOneBitAdam>(block("NaiveOneBitAdam", kHyper), GetParam(), 10,
                                                 proto, kNaiveAdamStep);
}

TEST_P(ReferenceTest, NaiveOneBitAdamAfterDenseSteps) {
  ref::NaiveOneBitAdam proto;
  proto.h = kRefHyper;
  proto.dense = 3;
  expect_matches_reference<ref::NaiveOneBitAdam>(
      block("NaiveOneBitAdam", with_hyper({{"dense_steps", 3}})), GetParam(), 10, proto,
      kNaiveAdamStep);
}

const RefStep<ref::NaiveOneBitLamb> kNaiveLambStep =
    [](ref::NaiveOneBitLamb& o, Communicator& comm, const ParamLayout& l, float* w,
       const std::vector<float>& local,
       const std::vector<float>& mean) { o.step(comm, l, w, local, mean); };

TEST_P(ReferenceTest, NaiveOneBitLamb) {
  ref::NaiveOneBitLamb proto;
  proto.h = kRefHyper;
  proto.warmup = 4;
  proto.max_coeff = 0.3f;
  expect_matches_reference<ref::NaiveOneBitLamb>(
      block("NaiveOneBitLamb", with_hyper({{"freeze_step", 4}, {"max_coeff", 0.3}})), GetParam(),
      12, proto, kNaiveLambStep);
}

const RefStep<ref::OneBitLamb> kOneBitLambStep =
    [](ref::OneBitLamb& o, Communicator& comm, const ParamLayout& l, float* w,
       const std::vector<float>& local,
       const std::vector<float>& mean) { o.step(comm, l, w, local, mean); };

TEST_P(ReferenceTest, OneBitLambWarmupThenCompression) {
  ref::OneBitLamb proto;
  proto.h = kRefHyper;
  proto.warmup = 4;
  proto.max_coeff = 0.3f;
  expect_matches_reference<ref::OneBitLamb>(
      block("OneBitLamb", with_hyper({{"freeze_step", 4}, {"max_coeff", 0.3}})), GetParam(), 14,
      proto, kOneBitLambStep);
}

// Wide factor clamps and a strong weight decay, so the factor estimate itself (max ratio,
// the λ blend with rr) reaches the update instead of the clamps.
TEST_P(ReferenceTest, OneBitLambUnclampedFactor) {
  ref::OneBitLamb proto;
  proto.h = kRefHyper;
  proto.h.wd = 0.5f;
  proto.warmup = 3;
  proto.factor_max = 100, proto.factor_min = 0.01, proto.factor_threshold = 50;
  const auto cfg = block("OneBitLamb", with_hyper({{"freeze_step", 3},
                                                   {"weight_decay", 0.5},
                                                   {"factor_max", 100},
                                                   {"factor_min", 0.01},
                                                   {"factor_threshold", 50}}));
  expect_matches_reference<ref::OneBitLamb>(cfg, GetParam(), 10, proto, kOneBitLambStep);
}

TEST_P(ReferenceTest, OneBitLambDeepSpeedCompat) {
  ref::OneBitLamb proto;
  proto.h = kRefHyper;
  proto.warmup = 4;
  proto.keep_tail = true;
  const auto cfg = block("OneBitLamb", with_hyper({{"freeze_step", 5},
                                                   {"compat_deepspeed_step_count", true},
                                                   {"compat_keep_padding_tail", true}}));
  expect_matches_reference<ref::OneBitLamb>(cfg, GetParam(), 12, proto, kOneBitLambStep);
}

const RefStep<ref::ZeroOneAdam> kZeroOneStep =
    [](ref::ZeroOneAdam& o, Communicator& comm, const ParamLayout& l, float* w,
       const std::vector<float>& local,
       const std::vector<float>& mean) { o.step(comm, l, w, local, mean); };

ref::ZeroOneAdam zero_one_proto(int64_t offset) {
  ref::ZeroOneAdam z;
  z.h = kRefHyper;
  z.var_freeze_step = 10;
  z.kappa = 2;
  z.local_scaler = 3;
  z.local_clipper = 4;
  z.offset = offset;
  return z;
}

const nlohmann::json kZeroOneParams = {{"var_freeze_step", 10},
                                       {"var_update_scaler", 2},
                                       {"local_step_scaler", 3},
                                       {"local_step_clipper", 4}};

TEST_P(ReferenceTest, ZeroOneAdamBothPhases) {
  expect_matches_reference<ref::ZeroOneAdam>(block("ZeroOneAdam", with_hyper(kZeroOneParams)),
                                             GetParam(), 30, zero_one_proto(0), kZeroOneStep);
}

TEST_P(ReferenceTest, ZeroOneAdamDeepSpeedClock) {
  nlohmann::json params = with_hyper(kZeroOneParams);
  params["compat_deepspeed_step_count"] = true;
  expect_matches_reference<ref::ZeroOneAdam>(block("ZeroOneAdam", params), GetParam(), 26,
                                             zero_one_proto(1), kZeroOneStep);
}

const RefStep<ref::Slamb> kSlambStep = [](ref::Slamb& o, Communicator& comm, const ParamLayout& l,
                                          float* w, const std::vector<float>& local,
                                          const std::vector<float>&) { o.step(comm, l, w, local); };

void check_slamb(const std::string& wire, DType dtype, int p) {
  ref::Slamb proto;
  proto.h = kRefHyper;
  proto.h.eps = 1e-6f;
  proto.k = 0.3;
  proto.thr = 40;
  proto.local_steps = 4;
  proto.seed = 7;
  proto.wire = dtype;
  const auto cfg = block("Slamb", {{"lr", 0.01},
                                   {"weight_decay", 0.01},
                                   {"compress_ratio", 0.3},
                                   {"grad_size_thr", 40},
                                   {"local_steps", 4},
                                   {"seed", 7},
                                   {"comm_dtype", wire}});
  expect_matches_reference<ref::Slamb>(cfg, p, 10, proto, kSlambStep);
}

TEST_P(ReferenceTest, SlambFp16Wire) {
  check_slamb("fp16", DType::kF16, GetParam());
}
TEST_P(ReferenceTest, SlambFp32Wire) {
  check_slamb("fp32", DType::kF32, GetParam());
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ReferenceTest, ::testing::Values(1, 3), world_size_name);

}  // namespace
}  // namespace clbo::test
