// Adam baseline (docs/reference/algorithms.md §7): dense gradient average every step, bias
// correction on by default, AdamW-style decoupled weight decay (adam_w_mode) or L2 added to the
// gradient.
#include "optimizers.hpp"

namespace clbo::optim_detail {

namespace {

class Adam final : public OptimizerImpl<Adam> {
 public:
  Adam(OptimizerConfig c, ParamLayout l, int p, int rank)
      : OptimizerImpl(std::move(c), std::move(l), p, rank),
        params_(config_.as<AdamParams>()),
        m_(n_, 0.0f),
        v_(n_, 0.0f) {}

 protected:
  void update(Communicator& comm, float* theta, const float* grad, int64_t t) override {
    float* g = average_gradient(comm, grad);
    kernels::AdamArgs a = adam_args(params_.bias_correction, t);
    if (!params_.adam_w_mode) {
      // Classic Adam: λθ joins the gradient before the moments, and no decay term follows.
      for (size_t i = 0; i < n_; ++i) g[i] = g[i] + weight_decay_ * theta[i];
      a.weight_decay = 0.0f;
    }
    kernels::adam_update(theta, m_.data(), v_.data(), g, n_, a);
  }
  void save_fields(state_io::Writer& w) const override {
    w.floats(m_);
    w.floats(v_);
  }
  void load_fields(state_io::Reader& r) override {
    m_ = r.floats("m", n_);
    v_ = r.floats("v", n_);
  }

 private:
  AdamParams params_;
  std::vector<float> m_, v_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adam(const OptimizerConfig& c, const ParamLayout& l, int p,
                                     int rank) {
  return std::make_unique<Adam>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
