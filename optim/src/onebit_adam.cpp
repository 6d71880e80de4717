// 1-bit Adam (docs/reference/algorithms.md §3). No bias correction in either phase.
//   warmup (t ≤ freeze_step): dense gradient average; m, v and θ updated as Adam.
//   compression: m = β1·m + (1−β1)·g_local; m = compressed_allreduce(m); [m *= mask];
//                θ −= lr·(m/(√v+ε) + λθ) with v frozen at its warmup value.
// OneBitAdamNoErrorFeedback (docs/reference/algorithms.md §9.1) is the same optimizer with both
// error buffers zeroed before every compressed call, so each step's compression error is lost
// instead of fed back.
#include "onebit_comm.hpp"
#include "optimizers.hpp"

namespace clbo::optim_detail {

namespace {

class OneBitAdam final : public OptimizerImpl<OneBitAdam> {
 public:
  OneBitAdam(OptimizerConfig c, ParamLayout l, int p, int rank)
      : OptimizerImpl(std::move(c), std::move(l), p, rank),
        warmup_(onebit_warmup_steps(config_)),
        error_feedback_(config_.kind == OptimizerKind::kOneBitAdam),
        s_(comm_granularity(config_), layout_, p, n_) {}

  void set_momentum_mask(std::vector<float> mask) override { s_.set_mask(std::move(mask)); }

 protected:
  void update(Communicator& comm, float* theta, const float* grad, int64_t t) override {
    kernels::AdamArgs a = adam_args(/*bias_correction=*/false, t);
    if (t <= warmup_) {
      kernels::adam_update(theta, s_.m.data(), s_.v.data(), average_gradient(comm, grad), n_, a);
      return;
    }
    kernels::momentum_update(s_.m.data(), grad, n_, beta1_);
    if (!error_feedback_) s_.comm.zero_errors();
    s_.comm.allreduce(comm, s_.m.data());
    a.update_m = a.update_v = false;
    kernels::adam_update(theta, s_.m.data(), s_.v.data(), nullptr, n_, a);
  }
  void save_fields(state_io::Writer& w) const override { s_.save(w); }
  void load_fields(state_io::Reader& r) override { s_.load(r); }

 private:
  int64_t warmup_;
  bool error_feedback_;
  OnebitMoments s_;
};

}  // namespace

std::unique_ptr<Optimizer> make_onebit_adam(const OptimizerConfig& c, const ParamLayout& l, int p,
                                            int rank) {
  return std::make_unique<OneBitAdam>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
