// NaiveOneBitAdam: the error-compensated 1-bit Adam the 1-bit Adam paper argues against
// (docs/reference/algorithms.md §9.2). No bias correction, as 1-bit Adam.
//   dense steps (t ≤ dense_steps, none by default): 1-bit Adam's warmup.
//   every other step: ĝ = compressed_allreduce(g_local) (error feedback on); [ĝ *= mask];
//                     m = β1·m + (1−β1)·ĝ;  v = β2·v + (1−β2)·ĝ²;  θ −= lr·(m/(√v+ε) + λθ).
// v sees the squares of the 1-bit reconstruction, one magnitude per server chunk, so Adam's
// per-coordinate scaling is lost: the non-linearity that frozen variance avoids.
#include "onebit_comm.hpp"
#include "optimizers.hpp"

namespace clbo::optim_detail {

namespace {

class NaiveOneBitAdam final : public OptimizerImpl<NaiveOneBitAdam> {
 public:
  NaiveOneBitAdam(OptimizerConfig c, ParamLayout l, int p, int rank)
      : OptimizerImpl(std::move(c), std::move(l), p, rank),
        dense_(onebit_warmup_steps(config_)),
        s_(comm_granularity(config_), layout_, p, n_) {}

  void set_momentum_mask(std::vector<float> mask) override { s_.set_mask(std::move(mask)); }

 protected:
  void update(Communicator& comm, float* theta, const float* grad, int64_t t) override {
    const kernels::AdamArgs a = adam_args(/*bias_correction=*/false, t);
    if (t <= dense_) {
      kernels::adam_update(theta, s_.m.data(), s_.v.data(), average_gradient(comm, grad), n_, a);
      return;
    }
    float* g = scratch();
    std::copy(grad, grad + n_, g);
    s_.comm.allreduce(comm, g);
    kernels::adam_update(theta, s_.m.data(), s_.v.data(), g, n_, a);
  }
  void save_fields(state_io::Writer& w) const override { s_.save(w); }
  void load_fields(state_io::Reader& r) override { s_.load(r); }

 private:
  int64_t dense_;
  OnebitMoments s_;
};

}  // namespace

std::unique_ptr<Optimizer> make_naive_onebit_adam(const OptimizerConfig& c, const ParamLayout& l,
                                                  int p, int rank) {
  return std::make_unique<NaiveOneBitAdam>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
