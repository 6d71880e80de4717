// 1-bit LAMB (docs/reference/algorithms.md §4), following DeepSpeed's onebit/lamb.py where the spec
// is silent. Warmup is LAMB without bias correction on the averaged gradient, plus an EMA of the
// per-tensor trust ratios (lamb_coeff_freeze). Compression communicates the fused, per-tensor
// rescaled momentum with one 1-bit allreduce and rescales the frozen coefficient by a factor
// estimated from a locally refreshed variance v_fresh.
#include <algorithm>
#include <cmath>

#include "clbo/kernels/lamb_factor.hpp"
#include "clbo/kernels/norms.hpp"
#include "clbo/kernels/onebit.hpp"
#include "onebit_comm.hpp"
#include "optimizers.hpp"

namespace clbo::optim_detail {

namespace {

class OneBitLamb final : public OptimizerImpl<OneBitLamb> {
 public:
  OneBitLamb(OptimizerConfig c, ParamLayout l, int p, int rank)
      : OptimizerImpl(std::move(c), std::move(l), p, rank),
        params_(config_.as<OneBitLambParams>()),
        warmup_(onebit_warmup_steps(config_)),
        // With compat_keep_padding_tail the momentum buffer is DeepSpeed's fused buffer: n'
        // long, its tail [n, n') holding the previous compressed output.
        m_(params_.compat_keep_padding_tail ? clbo::onebit_padded_size(n_, p) : n_, 0.0f),
        v_(n_, 0.0f),
        v_fresh_(n_, 0.0f),
        lamb_coeff_freeze_(layout_.num_tensors(), 0.0),
        last_factor_(layout_.num_tensors(), 1.0),
        scaling_coeff_(layout_.num_tensors(), 1.0),
        onebit_(params_.comm_granularity, layout_, p, m_.size()),
        m_last_(n_, 0.0f),
        u_(n_, 0.0f),
        terms_(kernels::kOnebitLambTerms * layout_.num_tensors(), 0.0) {}

  void set_momentum_mask(std::vector<float> mask) override {
    onebit_.set_mask(std::move(mask), n_);
  }
  std::vector<float> layer_coefficients() const override { return coeff_; }

 protected:
  void update(Communicator& comm, float* theta, const float* grad, int64_t t) override {
    if (t <= warmup_)
      warmup_step(comm, theta, grad, t);
    else
      compression_step(comm, theta, grad);
  }

  void save_fields(state_io::Writer& w) const override {
    w.floats(m_);
    w.floats(v_);
    w.floats(v_fresh_);
    w.doubles(lamb_coeff_freeze_);
    w.doubles(last_factor_);
    w.boolean(has_scaling_);
    w.doubles(scaling_coeff_);
    onebit_.save(w);
  }
  void load_fields(state_io::Reader& r) override {
    const size_t k = layout_.num_tensors();
    m_ = r.floats("m", m_.size());
    v_ = r.floats("v", n_);
    v_fresh_ = r.floats("v_fresh", n_);
    lamb_coeff_freeze_ = r.doubles("lamb_coeff_freeze", k);
    last_factor_ = r.doubles("last_factor", k);
    has_scaling_ = r.boolean("has_scaling_coeff");
    scaling_coeff_ = r.doubles("scaling_coeff", k);
    onebit_.load(r);
  }

 private:
  void warmup_step(Communicator& comm, float* theta, const float* grad, int64_t t) {
    const std::vector<float> trust = lamb_dense_update(
        theta, m_.data(), v_.data(), average_gradient(comm, grad), u_.data(), layout_,
        adam_args(/*bias_correction=*/false, t), static_cast<float>(params_.min_coeff),
        static_cast<float>(params_.max_coeff));
    // DeepSpeed keeps this EMA in Python floats (double) and skips ratios equal to 1, which
    // mostly come from the zero-norm guard.
    coeff_ = trust;
    for (size_t i = 0; i < trust.size(); ++i)
      if (trust[i] != 1.0f)
        lamb_coeff_freeze_[i] = params_.coeff_beta * lamb_coeff_freeze_[i] +
                                (1.0 - params_.coeff_beta) * static_cast<double>(trust[i]);
    if (t == warmup_) v_fresh_ = v_;
  }

  // scaling_coeff_i = mean_j(rms_j) / rms_i from the replicated momentum, once. A tensor with
  // zero momentum gets 1 (DeepSpeed divides by zero there).
  void compute_scaling_coeff() {
    const size_t k = layout_.num_tensors();
    std::vector<double> sumsq(k);
    kernels::tensor_sumsq(m_.data(), layout_, sumsq.data());
    std::vector<double> rms(k, 0.0);
    double total = 0.0;
    size_t counted = 0;
    for (size_t i = 0; i < k; ++i) {
      if (layout_[i].size == 0) continue;
      rms[i] = std::sqrt(sumsq[i]) / std::sqrt(static_cast<double>(layout_[i].size));
      total += rms[i];
      ++counted;
    }
    const double united = counted > 0 ? total / static_cast<double>(counted) : 0.0;
    for (size_t i = 0; i < k; ++i) scaling_coeff_[i] = rms[i] > 0.0 ? united / rms[i] : 1.0;
    has_scaling_ = true;
  }

  void compression_step(Communicator& comm, float* theta, const float* grad) {
    if (!has_scaling_) compute_scaling_coeff();
    std::copy(m_.begin(), m_.begin() + static_cast<std::ptrdiff_t>(n_), m_last_.begin());
    kernels::momentum_update(m_.data(), grad, n_, beta1_);
    for_each_tensor([&](size_t, size_t i, float sc) { m_[i] = m_[i] * sc; });
    onebit_.allreduce(comm, m_.data());
    for_each_tensor([&](size_t, size_t i, float sc) { m_[i] = m_[i] / sc; });

    // The factor of docs/reference/algorithms.md §4, through the one CPU contract the GPU kernel is
    // tested against (clbo/kernels/lamb_factor.hpp).
    const size_t k = layout_.num_tensors();
    kernels::onebit_lamb_terms(theta, m_.data(), m_last_.data(), v_.data(), v_fresh_.data(),
                               u_.data(), layout_, {beta1_, beta2_, eps_, weight_decay_},
                               terms_.data());
    kernels::onebit_lamb_factors(
        terms_.data(), layout_,
        {weight_decay_, params_.factor_min, params_.factor_max, params_.factor_threshold},
        last_factor_.data());
    coeff_.resize(k);
    for (size_t L = 0; L < k; ++L)
      coeff_[L] = static_cast<float>(lamb_coeff_freeze_[L] * last_factor_[L]);
    kernels::scaled_update(theta, u_.data(), layout_, coeff_.data(), lr_);
  }

  // fn(tensor, element, fp32 scaling coefficient) over every element of every tensor.
  template <class Fn>
  void for_each_tensor(Fn fn) {
    for (size_t L = 0; L < layout_.num_tensors(); ++L) {
      const float sc = static_cast<float>(scaling_coeff_[L]);
      const size_t begin = layout_[L].offset, end = begin + layout_[L].size;
      for (size_t i = begin; i < end; ++i) fn(L, i, sc);
    }
  }

  OneBitLambParams params_;
  int64_t warmup_;
  std::vector<float> m_, v_, v_fresh_;
  std::vector<double> lamb_coeff_freeze_, last_factor_, scaling_coeff_;
  bool has_scaling_ = false;
  OnebitComm onebit_;
  std::vector<float> m_last_, u_;  // workspace
  std::vector<double> terms_;      // workspace: kOnebitLambTerms per tensor
  std::vector<float> coeff_;       // lr multipliers of the last step (diagnostics, not state)
};

}  // namespace

std::unique_ptr<Optimizer> make_onebit_lamb(const OptimizerConfig& c, const ParamLayout& l, int p,
                                            int rank) {
  return std::make_unique<OneBitLamb>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
