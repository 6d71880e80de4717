// LAMB baseline (docs/reference/algorithms.md §7): dense gradient average every step, bias
// correction on by default, per-tensor trust ratio clamp(‖θ_L‖/‖u_L‖, min_coeff, max_coeff).
#include "optimizers.hpp"

namespace clbo::optim_detail {

namespace {

class Lamb final : public OptimizerImpl<Lamb> {
 public:
  Lamb(OptimizerConfig c, ParamLayout l, int p, int rank)
      : OptimizerImpl(std::move(c), std::move(l), p, rank),
        params_(config_.as<LambParams>()),
        m_(n_, 0.0f),
        v_(n_, 0.0f),
        u_(n_, 0.0f) {}

 protected:
  void update(Communicator& comm, float* theta, const float* grad, int64_t t) override {
    const float* g = average_gradient(comm, grad);
    trust_ = lamb_dense_update(
        theta, m_.data(), v_.data(), g, u_.data(), layout_, adam_args(params_.bias_correction, t),
        static_cast<float>(params_.min_coeff), static_cast<float>(params_.max_coeff));
  }
  std::vector<float> layer_coefficients() const override { return trust_; }
  void save_fields(state_io::Writer& w) const override {
    w.floats(m_);
    w.floats(v_);
  }
  void load_fields(state_io::Reader& r) override {
    m_ = r.floats("m", n_);
    v_ = r.floats("v", n_);
  }

 private:
  LambParams params_;
  std::vector<float> m_, v_;
  std::vector<float> u_;      // workspace
  std::vector<float> trust_;  // of the last step (diagnostics, not state)
};

}  // namespace

std::unique_ptr<Optimizer> make_lamb(const OptimizerConfig& c, const ParamLayout& l, int p,
                                     int rank) {
  return std::make_unique<Lamb>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
