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
        s_(params_.comm_granularity, layout_, p, n_),
        u_(n_, 0.0f) {}

  void set_momentum_mask(std::vector<float> mask) override { s_.set_mask(std::move(mask)); }
  std::vector<float> layer_coefficients() const override { return trust_; }

 protected:
  void update(Communicator& comm, float* theta, const float* grad, int64_t t) override {
    kernels::AdamArgs a = adam_args(/*bias_correction=*/false, t);
    const float lo = static_cast<float>(params_.min_coeff);
    const float hi = static_cast<float>(params_.max_coeff);
    if (t <= warmup_) {
      trust_ = lamb_dense_update(theta, s_.m.data(), s_.v.data(), average_gradient(comm, grad),
                                 u_.data(), layout_, a, lo, hi);
      return;
    }
    kernels::momentum_update(s_.m.data(), grad, n_, beta1_);
    s_.comm.allreduce(comm, s_.m.data());
    a.update_m = a.update_v = false;
    trust_ =
        lamb_dense_update(theta, s_.m.data(), s_.v.data(), nullptr, u_.data(), layout_, a, lo, hi);
  }
  void save_fields(state_io::Writer& w) const override { s_.save(w); }
  void load_fields(state_io::Reader& r) override { s_.load(r); }

 private:
  NaiveOneBitLambParams params_;
  int64_t warmup_;
  OnebitMoments s_;
  std::vector<float> u_;      // workspace
  std::vector<float> trust_;  // of the last step (diagnostics, not state)
};

}  // namespace

std::unique_ptr<Optimizer> make_naive_onebit_lamb(const OptimizerConfig& c, const ParamLayout& l,
                                                  int p, int rank) {
  return std::make_unique<NaiveOneBitLamb>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
