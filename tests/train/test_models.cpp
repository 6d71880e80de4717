// Model gradients against central finite differences (double precision, tiny shapes), the
// float path against the double path, layouts and initialisation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "clbo/core/error.hpp"
#include "clbo/train/model.hpp"

using namespace clbo::train;

namespace {

template <class T>
std::vector<T> random_inputs(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(d(gen));
  return v;
}

// Checks every parameter's analytic gradient against (L(θ+h) − L(θ−h)) / 2h.
void check_gradient(const Model<double>& m, size_t batch, uint64_t seed) {
  std::vector<double> params(m.num_params());
  m.init(params.data(), seed);
  // Non-zero biases so every code path (bias broadcast, ReLU boundaries) is exercised.
  auto jitter = random_inputs<double>(params.size(), 7);
  for (size_t i = 0; i < params.size(); ++i) params[i] += 0.05 * jitter[i];
  const auto x = random_inputs<double>(batch * m.input_size(), 11);
  std::vector<uint8_t> y(batch);
  for (size_t b = 0; b < batch; ++b) y[b] = static_cast<uint8_t>((b * 7 + 3) % m.num_classes());

  std::vector<double> grad(params.size()), scratch(params.size());
  m.loss_and_grad(params.data(), x.data(), y.data(), batch, grad.data());
  const double h = 1e-6;
  double worst = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const double keep = params[i];
    params[i] = keep + h;
    const double up = m.loss_and_grad(params.data(), x.data(), y.data(), batch, scratch.data());
    params[i] = keep - h;
    const double down = m.loss_and_grad(params.data(), x.data(), y.data(), batch, scratch.data());
    params[i] = keep;
    const double fd = (up - down) / (2 * h);
    const double err = std::abs(fd - grad[i]) / std::max(1.0, std::abs(fd));
    worst = std::max(worst, err);
    EXPECT_LT(err, 1e-6) << m.name() << " param " << i << ": analytic " << grad[i] << " vs " << fd;
  }
  EXPECT_LT(worst, 1e-6);
}

CnnShape tiny_cnn() {
  CnnShape s;
  s.height = 4;
  s.width = 8;
  s.in_channels = 2;
  s.conv1_channels = 3;
  s.conv1_kernel = 3;
  s.conv2_channels = 2;
  s.conv2_kernel = 3;
  s.classes = 3;
  return s;
}

}  // namespace

TEST(TrainModels, MlpGradientMatchesFiniteDifferences) {
  check_gradient(*make_mlp<double>({5, 4, 3, 3}), 4, 1);
}

TEST(TrainModels, CnnGradientMatchesFiniteDifferences) {
  check_gradient(*make_cnn<double>(tiny_cnn()), 3, 2);
}

TEST(TrainModels, CnnWithFiveByFiveKernelGradient) {
  CnnShape s = tiny_cnn();
  s.conv1_kernel = 5;
  s.height = 8;
  check_gradient(*make_cnn<double>(s), 2, 3);
}

// The float code (what training runs) computes the same function as the checked double code.
template <class MakeF, class MakeD>
void check_float_against_double(MakeF make_f, MakeD make_d, size_t batch) {
  auto mf = make_f();
  auto md = make_d();
  ASSERT_EQ(mf->num_params(), md->num_params());
  std::vector<double> pd(md->num_params());
  md->init(pd.data(), 5);
  std::vector<float> pf(pd.begin(), pd.end());
  const auto xd = random_inputs<double>(batch * md->input_size(), 3);
  std::vector<float> xf(xd.begin(), xd.end());
  std::vector<double> xd_rounded(xf.begin(), xf.end());
  std::vector<uint8_t> y(batch);
  for (size_t b = 0; b < batch; ++b) y[b] = static_cast<uint8_t>(b % md->num_classes());
  std::vector<double> gd(pd.size());
  std::vector<float> gf(pd.size());
  const double ld = md->loss_and_grad(pd.data(), xd_rounded.data(), y.data(), batch, gd.data());
  const double lf = mf->loss_and_grad(pf.data(), xf.data(), y.data(), batch, gf.data());
  EXPECT_NEAR(lf, ld, 1e-4 * std::abs(ld));
  double gmax = 0;
  for (double g : gd) gmax = std::max(gmax, std::abs(g));
  for (size_t i = 0; i < gd.size(); ++i) ASSERT_NEAR(gf[i], gd[i], 1e-4 * gmax) << i;
}

TEST(TrainModels, FloatMlpMatchesDouble) {
  check_float_against_double(
      [] {
        return make_mlp<float>({20, 16, 12, 10});
      },
      [] {
        return make_mlp<double>({20, 16, 12, 10});
      },
      8);
}

TEST(TrainModels, FloatCnnMatchesDouble) {
  CnnShape s;
  s.height = s.width = 12;
  check_float_against_double([&] { return make_cnn<float>(s); },
                             [&] { return make_cnn<double>(s); }, 5);
}

TEST(TrainModels, LossIsAdditiveOverBatchSplits) {
  auto m = make_mlp<double>({6, 5, 4});
  std::vector<double> p(m->num_params());
  m->init(p.data(), 9);
  const auto x = random_inputs<double>(6 * 6, 4);
  const std::vector<uint8_t> y{0, 1, 2, 3, 0, 1};
  std::vector<double> g_all(p.size()), g_a(p.size()), g_b(p.size());
  const double l_all = m->loss_and_grad(p.data(), x.data(), y.data(), 6, g_all.data());
  const double l_a = m->loss_and_grad(p.data(), x.data(), y.data(), 2, g_a.data());
  const double l_b = m->loss_and_grad(p.data(), x.data() + 2 * 6, y.data() + 2, 4, g_b.data());
  EXPECT_NEAR(l_all, l_a + l_b, 1e-12);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(g_all[i], g_a[i] + g_b[i], 1e-12);
}

TEST(TrainModels, FashionMnistModelsHaveTheDocumentedLayouts) {
  auto mlp = make_model("mlp", "test", "model");
  EXPECT_EQ(mlp->num_params(), 784u * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10);
  ASSERT_EQ(mlp->layout().num_tensors(), 6u);
  EXPECT_EQ(mlp->layout()[0].name, "fc1.weight");
  EXPECT_EQ(mlp->layout()[0].shape, (std::vector<int64_t>{512, 784}));
  auto cnn = make_model("cnn", "test", "model");
  ASSERT_EQ(cnn->layout().num_tensors(), 6u);
  EXPECT_EQ(cnn->layout()[0].shape, (std::vector<int64_t>{8, 1, 5, 5}));
  EXPECT_EQ(cnn->layout()[2].shape, (std::vector<int64_t>{32, 8, 3, 3}));
  EXPECT_EQ(cnn->layout()[4].shape, (std::vector<int64_t>{10, 7 * 7 * 32}));
  EXPECT_EQ(cnn->input_size(), 784u);
}

TEST(TrainModels, UnknownModelNamesTheFieldAndSuggests) {
  try {
    make_model("mpl", "exp.json", "model");
    FAIL() << "expected an error";
  } catch (const clbo::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("exp.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("did you mean 'mlp'"), std::string::npos) << e.what();
  }
}

TEST(TrainModels, InitIsSeededAndBounded) {
  auto m = make_mlp<float>({100, 50, 10});
  std::vector<float> a(m->num_params()), b(a.size()), c(a.size());
  m->init(a.data(), 1);
  m->init(b.data(), 1);
  m->init(c.data(), 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const auto& L = m->layout();
  const float bound = std::sqrt(6.0f / 100);
  double sum = 0;
  for (size_t i = 0; i < L[0].size; ++i) {
    ASSERT_LE(std::abs(a[i]), bound);
    sum += a[i];
  }
  EXPECT_LT(std::abs(sum / L[0].size), 0.05 * bound);  // centred
  for (size_t i = L[1].offset; i < L[1].offset + L[1].size; ++i) ASSERT_EQ(a[i], 0.f);
}

// Gradients must not depend on where the buffers live (Eigen may pick a summation order from
// a pointer's alignment); otherwise runs would differ from one allocation to the next.
TEST(TrainModels, GradientsDoNotDependOnBufferAlignment) {
  CnnShape s;
  s.height = s.width = 12;
  std::vector<std::unique_ptr<Model<float>>> models;
  models.push_back(make_mlp<float>({784, 64, 32, 10}));
  models.push_back(make_cnn<float>(s));
  for (const auto& m : models) {
    const size_t n = m->num_params(), batch = 13, f = m->input_size();
    std::vector<float> p0(n);
    m->init(p0.data(), 3);
    const auto x0 = random_inputs<float>(batch * f, 5);
    std::vector<uint8_t> y(batch);
    for (size_t b = 0; b < batch; ++b) y[b] = static_cast<uint8_t>(b % 10);
    std::vector<float> ref;
    for (size_t off = 0; off < 8; ++off) {
      std::vector<float> p(n + 8), x(batch * f + 8), g(n + 8);
      std::copy(p0.begin(), p0.end(), p.begin() + off);
      std::copy(x0.begin(), x0.end(), x.begin() + off);
      m->loss_and_grad(p.data() + off, x.data() + off, y.data(), batch, g.data() + off);
      std::vector<float> got(g.begin() + off, g.begin() + off + n);
      if (off == 0) ref = got;
      EXPECT_TRUE(got == ref) << m->name() << " offset " << off;
    }
  }
}
