#include "clbo/train/broken_optimizers.hpp"

#include <fmt/format.h>

#include <cmath>
#include <istream>
#include <ostream>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/core/error.hpp"
#include "clbo/kernels/adam.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/schedule/schedule.hpp"

namespace clbo::train {

namespace {

enum class Variant { kNoErrorFeedback, kUnfrozenVariance };

bool iequals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

template <class V>
void write_vec(std::ostream& out, const std::vector<V>& v) {
  const uint64_t n = v.size();
  out.write(reinterpret_cast<const char*>(&n), sizeof n);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(n * sizeof(V)));
}
template <class V>
void read_vec(std::istream& in, std::vector<V>& v) {
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), sizeof n);
  v.resize(n);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(V)));
}

class BrokenOneBitAdam final : public Optimizer {
 public:
  BrokenOneBitAdam(Variant variant, std::string type, OptimizerConfig onebit,
                   const ParamLayout& layout, int world_size, int rank)
      : variant_(variant),
        type_(std::move(type)),
        cfg_(std::move(onebit)),
        layout_(layout),
        p_(world_size),
        rank_(rank),
        n_(layout.total()),
        warmup_steps_(onebit_warmup_steps(cfg_)),
        lr_(static_cast<float>(cfg_.common.lr)),
        m_(n_, 0.f),
        v_(n_, 0.f),
        buf_(n_, 0.f) {}

  std::string type() const override { return type_; }
  int64_t steps_taken() const override { return t_; }
  void set_lr(float lr) override { lr_ = lr; }
  float lr() const override { return lr_; }
  // The OneBitAdam config this variant was parsed as (same fields; type() tells them apart).
  const OptimizerConfig& config() const override { return cfg_; }
  using Optimizer::load_state;

  CommSchedule comm_schedule(int64_t t) const override {
    if (variant_ == Variant::kNoErrorFeedback || t <= warmup_steps_)
      return schedule_at(cfg_, t, layout_, p_);  // exactly 1-bit Adam's calls
    CommSchedule s;
    s.phase = Phase::kCompression;
    append_compressed_calls(s, CommGranularity::kFlat, layout_, "grad");
    return s;
  }

  bool step(Communicator& comm, float* params, const float* grad) override {
    for (size_t i = 0; i < n_; ++i)
      if (!std::isfinite(grad[i]))
        throw Error(fmt::format("{}: rank {} step {}: non-finite gradient {} at element {}", type_,
                                rank_, t_ + 1, grad[i], i));
    const int64_t t = t_ + 1;
    kernels::AdamArgs a;
    a.lr = lr_;
    a.beta1 = static_cast<float>(cfg_.common.beta1);
    a.beta2 = static_cast<float>(cfg_.common.beta2);
    a.eps = static_cast<float>(cfg_.common.eps);
    a.weight_decay = static_cast<float>(cfg_.common.weight_decay);
    if (t <= warmup_steps_) {
      std::copy(grad, grad + n_, buf_.data());
      ring_allreduce_mean(comm, buf_.data(), n_);
      kernels::adam_update(params, m_.data(), v_.data(), buf_.data(), n_, a);
    } else if (variant_ == Variant::kNoErrorFeedback) {
      kernels::momentum_update(m_.data(), grad, n_, a.beta1);
      // Throwing the compression error away is the whole point of this variant.
      if (ef_.n == n_ && ef_.p == p_) ef_.zero();
      compressed_allreduce(comm, ef_, m_.data(), n_);
      a.update_m = a.update_v = false;
      kernels::adam_update(params, m_.data(), v_.data(), nullptr, n_, a);
    } else {
      std::copy(grad, grad + n_, buf_.data());
      compressed_allreduce(comm, ef_, buf_.data(), n_);
      kernels::adam_update(params, m_.data(), v_.data(), buf_.data(), n_, a);
    }
    t_ = t;
    return true;
  }

  void save_state(std::ostream& out) const override {
    out.write(reinterpret_cast<const char*>(&t_), sizeof t_);
    out.write(reinterpret_cast<const char*>(&lr_), sizeof lr_);
    write_vec(out, m_);
    write_vec(out, v_);
    write_vec(out, ef_.worker_error);
    write_vec(out, ef_.server_error);
    const uint64_t en = ef_.n;
    const int32_t ep = ef_.p;
    out.write(reinterpret_cast<const char*>(&en), sizeof en);
    out.write(reinterpret_cast<const char*>(&ep), sizeof ep);
  }
  void load_state(std::istream& in) override {
    in.read(reinterpret_cast<char*>(&t_), sizeof t_);
    in.read(reinterpret_cast<char*>(&lr_), sizeof lr_);
    read_vec(in, m_);
    read_vec(in, v_);
    read_vec(in, ef_.worker_error);
    read_vec(in, ef_.server_error);
    uint64_t en = 0;
    int32_t ep = 0;
    in.read(reinterpret_cast<char*>(&en), sizeof en);
    in.read(reinterpret_cast<char*>(&ep), sizeof ep);
    ef_.n = en;
    ef_.p = ep;
    if (!in || m_.size() != n_ || v_.size() != n_)
      throw Error(type_ + ": state does not match this optimizer's layout");
  }

 private:
  Variant variant_;
  std::string type_;
  OptimizerConfig cfg_;  // parsed as OneBitAdam: same fields, same validation
  ParamLayout layout_;
  int p_, rank_;
  size_t n_;
  int64_t warmup_steps_;
  float lr_;
  int64_t t_ = 0;
  std::vector<float> m_, v_, buf_;
  OnebitState ef_;
};

}  // namespace

const std::vector<std::string>& broken_optimizer_types() {
  static const std::vector<std::string> names{"OneBitAdamNoErrorFeedback",
                                              "OneBitAdamUnfrozenVariance"};
  return names;
}

std::string broken_optimizer_canonical(const std::string& type) {
  for (const auto& name : broken_optimizer_types())
    if (iequals(type, name)) return name;
  return "";
}

std::unique_ptr<Optimizer> make_broken_optimizer(const nlohmann::json& block_in,
                                                 const std::string& file, const ParamLayout& layout,
                                                 int world_size, int rank) {
  const nlohmann::json& block =
      block_in.contains("optimizer") ? block_in.at("optimizer") : block_in;
  const std::string type = block.value("type", std::string());
  const std::string canonical = broken_optimizer_canonical(type);
  if (canonical.empty())
    throw InputError(file, "optimizer.type", "\"" + type + "\"",
                     "not a broken variant" + did_you_mean(type, broken_optimizer_types()));
  // Same parameters and validation as OneBitAdam.
  nlohmann::json as_onebit = block;
  as_onebit["type"] = "OneBitAdam";
  OptimizerConfig cfg = parse_optimizer_config(as_onebit, file);
  const auto& ob = cfg.as<OneBitAdamParams>();
  if (ob.comm_granularity != CommGranularity::kFlat)
    throw InputError(file, "optimizer.params.comm_granularity", "\"tensor\"",
                     canonical + " supports only \"flat\"");
  if (cfg.common.nonfinite != NonfinitePolicy::kError)
    throw InputError(file, "optimizer.params.nonfinite", "\"skip\"",
                     canonical + " supports only \"error\"");
  const Variant v = canonical == "OneBitAdamNoErrorFeedback" ? Variant::kNoErrorFeedback
                                                             : Variant::kUnfrozenVariance;
  return std::make_unique<BrokenOneBitAdam>(v, canonical, std::move(cfg), layout, world_size, rank);
}

}  // namespace clbo::train
