// SLAMB (docs/reference/algorithms.md §6), the authors' Slamb_V2: local m and v, a shared random
// mask (Philox, §7b) plus every small tensor selects the momentum coordinates averaged this step
// (sparse allreduce), freshness r blends a large-batch trust ratio on fresh coordinates
// with a small-batch one (lr/√p) on stale ones, and every local_steps steps the
// parameters are averaged densely.
#include <cmath>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/kernels/mask.hpp"
#include "clbo/kernels/norms.hpp"
#include "optimizers.hpp"

namespace clbo::optim_detail {

namespace {

class Slamb final : public OptimizerImpl<Slamb> {
 public:
  Slamb(OptimizerConfig c, ParamLayout l, int p, int rank)
      : OptimizerImpl(std::move(c), std::move(l), p, rank),
        params_(config_.as<SlambParams>()),
        m_(n_, 0.0f),
        v_(n_, 0.0f),
        r_(n_, 1.0f),
        u_(n_, 0.0f),
        bits_((n_ + 7) / 8, 0) {}

  // The exact compacted count of step t: the popcount of its mask.
  CommSchedule comm_schedule(int64_t t) const override {
    CommSchedule s = schedule_at(config_, t, layout_, p_);
    std::vector<uint8_t> bits((n_ + 7) / 8);
    build_mask(t, bits.data());
    for (CommCall& call : s.calls)
      if (call.kind == CollKind::kSparseAllreduce)
        call.count = kernels::mask_count(bits.data(), n_);
    return s;
  }

 protected:
  void update(Communicator& comm, float* w, const float* g, int64_t t) override {
    kernels::momentum_update(m_.data(), g, n_, beta1_);
    const float omb2 = 1.0f - beta2_;
    for (size_t i = 0; i < n_; ++i) v_[i] = beta2_ * v_[i] + omb2 * g[i] * g[i];

    build_mask(t, bits_.data());
    const float beta3 = static_cast<float>(params_.beta3);
    for (size_t i = 0; i < n_; ++i) r_[i] = kept(i) ? 1.0f : beta3 * r_[i];
    sparse_allreduce_sum(comm, m_.data(), n_, bits_.data(), params_.comm_dtype);
    const float pf = static_cast<float>(p_);
    for (size_t i = 0; i < n_; ++i)
      if (kept(i)) m_[i] = m_[i] / pf;

    const double td = static_cast<double>(t);
    const float debias = static_cast<float>(std::sqrt(1.0 - std::pow(config_.common.beta2, td)) /
                                            (1.0 - std::pow(config_.common.beta1, td)));
    for (size_t i = 0; i < n_; ++i) u_[i] = (m_[i] / (std::sqrt(v_[i]) + eps_)) * debias;

    const size_t k = layout_.num_tensors();
    std::vector<double> sums(4 * k);
    kernels::slamb_masked_sumsq(w, u_.data(), r_.data(), layout_, sums.data());
    const float lr_stale = static_cast<float>(static_cast<double>(lr_) / std::sqrt(double(p_)));
    phi_fresh_.resize(k);
    for (size_t L = 0; L < k; ++L) {
      const float phi_fresh = trust(sums[4 * L], sums[4 * L + 1], 1.0, params_.min_coeff);
      phi_fresh_[L] = phi_fresh;
      const float phi_stale = trust(sums[4 * L + 2], sums[4 * L + 3], 0.0, 0.0);
      const float c_fresh = lr_ * phi_fresh, c_stale = lr_stale * phi_stale;
      const size_t begin = layout_[L].offset, end = begin + layout_[L].size;
      for (size_t i = begin; i < end; ++i) {
        // Weight decay joins u after the norms, as in Slamb_V2.
        const float u = weight_decay_ != 0.0f ? u_[i] + weight_decay_ * w[i] : u_[i];
        w[i] = w[i] - (c_fresh * u * r_[i] + c_stale * u * (1.0f - r_[i]));
      }
    }
    if (slamb_param_sync_step(params_, t)) ring_allreduce_mean(comm, w, n_);
  }

  void save_fields(state_io::Writer& w) const override {
    w.floats(m_);
    w.floats(v_);
    w.floats(r_);
  }
  std::vector<float> layer_coefficients() const override { return phi_fresh_; }
  void load_fields(state_io::Reader& r) override {
    m_ = r.floats("m", n_);
    v_ = r.floats("v", n_);
    r_ = r.floats("freshness", n_);
  }

 private:
  // S_t: the Philox mask of step t, plus every always-synced tensor.
  void build_mask(int64_t t, uint8_t* bits) const {
    kernels::random_mask(params_.seed, static_cast<uint32_t>(t), params_.compress_ratio, 0, n_,
                         bits);
    for (size_t L = 0; L < layout_.num_tensors(); ++L)
      if (slamb_tensor_always_synced(params_, layout_, L))
        kernels::mask_set_range(bits, layout_[L].offset, layout_[L].offset + layout_[L].size);
  }
  bool kept(size_t i) const { return (bits_[i >> 3] >> (7 - (i & 7))) & 1u; }

  // clamp(‖w‖/‖u‖, lo, max_coeff), or `if_zero` when a norm is 0 (then clamped too).
  float trust(double w_sumsq, double u_sumsq, double if_zero, double lo) const {
    const double ratio =
        w_sumsq > 0.0 && u_sumsq > 0.0 ? std::sqrt(w_sumsq) / std::sqrt(u_sumsq) : if_zero;
    return static_cast<float>(std::min(std::max(ratio, lo), params_.max_coeff));
  }

  SlambParams params_;
  std::vector<float> m_, v_;
  std::vector<float> r_;  // freshness: 1 where the momentum was averaged this step
  std::vector<float> u_;  // workspace
  std::vector<uint8_t> bits_;
  std::vector<float> phi_fresh_;  // of the last step (diagnostics, not state)
};

}  // namespace

std::unique_ptr<Optimizer> make_slamb(const OptimizerConfig& c, const ParamLayout& l, int p,
                                      int rank) {
  return std::make_unique<Slamb>(c, l, p, rank);
}

}  // namespace clbo::optim_detail
