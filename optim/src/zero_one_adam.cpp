// 0/1 Adam (docs/reference/algorithms.md §5), with DeepSpeed's onebit/zoadam.py for the counters.
//   phase 1 (t ≤ var_freeze_step): variance steps average the gradient densely and update m
//     and v; other steps 1-bit-allreduce the gradient and update m only.
//   switch: the error buffers are zeroed once, at the end of step var_freeze_step.
//   phase 2: local steps accumulate u (the momentum_accumulator) and lrs; sync steps undo
//     the local steps, 1-bit-allreduce u·(√v+ε) and re-apply the averaged update.
// Which step is which comes from the schedule (zero_one_adam_step), the function the
// simulator and comm_schedule read: the intervals are a pure function of t, so the
// optimizer keeps no counters of its own that could drift from what was simulated.
#include <cmath>

#include "onebit_comm.hpp"
#include "optimizers.hpp"

namespace clbo::optim_detail {

namespace {

class ZeroOneAdam final : public OptimizerImpl<ZeroOneAdam> {
 public:
  ZeroOneAdam(OptimizerConfig c, ParamLayout l, int p, int rank)
      : OptimizerImpl(std::move(c), std::move(l), p, rank),
        params_(config_.as<ZeroOneAdamParams>()),
        m_(n_, 0.0f),
        v_(n_, 0.0f),
        u_(n_, 0.0f),
        onebit_(params_.comm_granularity, layout_, p, n_) {}

  void set_momentum_mask(std::vector<float> mask) override {
    onebit_.set_mask(std::move(mask), n_);
  }

 protected:
  void update(Communicator& comm, float* theta, const float* grad, int64_t t) override {
    const ZeroOneAdamStep k = zero_one_adam_step(params_, t);
    if (k.phase1)
      phase1_step(comm, theta, grad, t, k.variance_step);
    else
      phase2_step(comm, theta, grad, k.sync_step);
  }

  void save_fields(state_io::Writer& w) const override {
    w.floats(m_);
    w.floats(v_);
    w.floats(u_);
    w.f64(lrs_);
    onebit_.save(w);
  }
  void load_fields(state_io::Reader& r) override {
    m_ = r.floats("m", n_);
    v_ = r.floats("v", n_);
    u_ = r.floats("momentum_accumulator", n_);
    lrs_ = r.f64("lrs");
    onebit_.load(r);
  }

 private:
  void phase1_step(Communicator& comm, float* theta, const float* grad, int64_t t,
                   bool variance_step) {
    kernels::AdamArgs a = adam_args(/*bias_correction=*/false, t);
    if (variance_step) {
      kernels::adam_update(theta, m_.data(), v_.data(), average_gradient(comm, grad), n_, a);
    } else {
      // The 1-bit average of the gradient updates m only; v keeps its last variance step.
      float* g = scratch();
      std::copy(grad, grad + n_, g);
      onebit_.allreduce(comm, g);
      a.update_v = false;
      kernels::adam_update(theta, m_.data(), v_.data(), g, n_, a);
    }
    // The errors fed by gradients must not leak into the momentum syncs of phase 2.
    if (t == params_.var_freeze_step) onebit_.zero_errors();
  }

  void phase2_step(Communicator& comm, float* theta, const float* grad, bool sync_step) {
    lrs_ += static_cast<double>(lr_);
    kernels::momentum_update(m_.data(), grad, n_, beta1_);
    // d = m/(√v+ε) + λθ in the arithmetic of kernels::adam_update (bias correction off), so
    // θ moves exactly as an Adam step with frozen v would move it.
    for (size_t i = 0; i < n_; ++i) {
      const float d = m_[i] / (std::sqrt(v_[i]) + eps_) + weight_decay_ * theta[i];
      theta[i] = theta[i] - lr_ * d;
      u_[i] = u_[i] - lr_ * d;
    }
    if (sync_step) sync(comm, theta);
  }

  void sync(Communicator& comm, float* theta) {
    for (size_t i = 0; i < n_; ++i) {
      theta[i] = theta[i] - u_[i];  // undo the local steps
      u_[i] = u_[i] * (std::sqrt(v_[i]) + eps_);
    }
    onebit_.allreduce(comm, u_.data());
    const float lrs = static_cast<float>(lrs_);
    for (size_t i = 0; i < n_; ++i) {
      m_[i] = -(u_[i] / lrs);
      theta[i] = theta[i] + u_[i] / (std::sqrt(v_[i]) + eps_);
      u_[i] = 0.0f;
    }
    lrs_ = 0.0;
  }

  ZeroOneAdamParams params_;
  std::vector<float> m_, v_;
  std::vector<float> u_;  // DeepSpeed's momentum_accumulator
  double lrs_ = 0.0;      // Σ lr over the local steps since the last sync (a Python float there)
  OnebitComm onebit_;
};

}  // namespace

std::unique_ptr<Optimizer> make_zero_one_adam(const OptimizerConfig& c, const ParamLayout& l, int p,
                                              int rank) {
  return std::make_unique<ZeroOneAdam>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
