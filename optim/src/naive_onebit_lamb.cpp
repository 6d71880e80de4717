// NaiveOneBitLamb: 1-bit Adam's scheme carried over to LAMB as the 1-bit LAMB paper's
// motivation describes it (docs/reference/algorithms.md §9.3). No bias correction.
//   warmup (t ≤ freeze_step): LAMB on the dense gradient average (1-bit LAMB's warmup).
//   compression: m = β1·m + (1−β1)·g_local; m = compressed_allreduce(m); [m *= mask];
//                u = m/(√v+ε) + λθ with v frozen; θ_L −= lr·clamp(‖θ_L‖/‖u_L‖)·u_L.
// The trust ratio is recomputed every step from the compressed momentum, whose per-chunk
// magnitudes are the compressor's, not the gradient's: 1-bit LAMB freezes it instead.
#include "onebit_comm.hpp"
#include "optimizers.hpp"

namespace clbo::optim_detail {

namespace {

class NaiveOneBitLamb final : public OptimizerImpl<NaiveOneBitLamb> {
 public:
  NaiveOneBitLamb(OptimizerConfig c, ParamLayout l, int p, int rank)
      : OptimizerImpl(std::move(c), std::move(l), p, rank),
        params_(config_.as<NaiveOneBitLambParams>()),
        warmup_(onebit_warmup_steps(config_)),
        m_(n_, 0.0f),
        v_(n_, 0.0f),
        u_(n_, 0.0f),
        onebit_(params_.comm_granularity, layout_, p, n_) {}

  void set_momentum_mask(std::vector<float> mask) override {
    onebit_.set_mask(std::move(mask), n_);
  }
  std::vector<float> layer_coefficients() const override { return trust_; }

 protected:
  void update(Communicator& comm, float* theta, const float* grad, int64_t t) override {
    kernels::AdamArgs a = adam_args(/*bias_correction=*/false, t);
    const float lo = static_cast<float>(params_.min_coeff);
    const float hi = static_cast<float>(params_.max_coeff);
    if (t <= warmup_) {
      trust_ = lamb_dense_update(theta, m_.data(), v_.data(), average_gradient(comm, grad),
                                 u_.data(), layout_, a, lo, hi);
      return;
    }
    kernels::momentum_update(m_.data(), grad, n_, beta1_);
    onebit_.allreduce(comm, m_.data());
    a.update_m = a.update_v = false;
    trust_ = lamb_dense_update(theta, m_.data(), v_.data(), nullptr, u_.data(), layout_, a, lo, hi);
  }
  void save_fields(state_io::Writer& w) const override {
    w.floats(m_);
    w.floats(v_);
    onebit_.save(w);
  }
  void load_fields(state_io::Reader& r) override {
    m_ = r.floats("m", n_);
    v_ = r.floats("v", n_);
    onebit_.load(r);
  }

 private:
  NaiveOneBitLambParams params_;
  int64_t warmup_;
  std::vector<float> m_, v_;
  std::vector<float> u_;  // workspace
  OnebitComm onebit_;
  std::vector<float> trust_;  // of the last step (diagnostics, not state)
};

}  // namespace

std::unique_ptr<Optimizer> make_naive_onebit_lamb(const OptimizerConfig& c, const ParamLayout& l,
                                                  int p, int rank) {
  return std::make_unique<NaiveOneBitLamb>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
