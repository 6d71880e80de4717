// What the six optimizers share: construction checks, the non-finite gradient policy, the
// step counter, dense gradient averaging, the schedule, and the checkpoint framing. Each
// optimizer implements update() for one real step and (de)serializes its own fields.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "clbo/kernels/adam.hpp"
#include "clbo/optim/optimizer.hpp"
#include "clbo/schedule/schedule.hpp"
#include "state_io.hpp"

namespace clbo::optim_detail {

class OptimizerBase : public Optimizer {
 public:
  OptimizerBase(OptimizerConfig config, ParamLayout layout, int world_size, int rank);

  std::string type() const override { return config_.type_name(); }
  // Checks the gradient (non-finite policy), then runs update() for t = steps_taken() + 1.
  bool step(Communicator& comm, float* params, const float* grad) final;
  CommSchedule comm_schedule(int64_t t) const override {
    return schedule_at(config_, t, layout_, p_);
  }
  int64_t steps_taken() const final { return steps_; }
  int64_t steps_skipped() const final { return skipped_; }
  void set_lr(float lr) final;
  float lr() const final { return lr_; }
  const OptimizerConfig& config() const final { return config_; }

  void save_state(std::ostream& out) const final;
  void load_state(std::istream& in) final { load_state(in, "<optimizer state>"); }
  void load_state(std::istream& in, const std::string& where) final;

 protected:
  // One real update at step t on a finite gradient; issues exactly comm_schedule(t).
  virtual void update(Communicator& comm, float* params, const float* grad, int64_t t) = 0;
  virtual void save_fields(state_io::Writer& w) const = 0;
  virtual void load_fields(state_io::Reader& r) = 0;
  // Loading goes through a copy so a bad state leaves this object unchanged.
  virtual std::unique_ptr<OptimizerBase> clone() const = 0;
  virtual void assign_from(const OptimizerBase& other) = 0;

  // The mean of every rank's gradient (ring_allreduce_mean, fp32), in scratch().
  float* average_gradient(Communicator& comm, const float* grad);
  // Adam/LAMB arguments with this optimizer's fp32 constants; bc1 = 1 − β1^t and
  // bc2 = 1 − β2^t (in double, rounded once) when bias_correction, else 1.
  kernels::AdamArgs adam_args(bool bias_correction, int64_t t) const;
  float* scratch() { return scratch_.data(); }

  OptimizerConfig config_;
  ParamLayout layout_;
  size_t n_ = 0;
  int p_ = 1, rank_ = 0;
  int64_t steps_ = 0, skipped_ = 0;
  float lr_ = 0;
  // The hyper-parameters rounded to fp32 once; every update uses these.
  float beta1_ = 0, beta2_ = 0, eps_ = 0, weight_decay_ = 0;

 private:
  std::vector<float> scratch_;  // n floats of workspace, not state
};

// clone()/assign_from() for a concrete optimizer.
template <class Derived>
class OptimizerImpl : public OptimizerBase {
 public:
  using OptimizerBase::OptimizerBase;

 protected:
  std::unique_ptr<OptimizerBase> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  void assign_from(const OptimizerBase& other) override {
    static_cast<Derived&>(*this) = static_cast<const Derived&>(other);
  }
};

// Index of the first NaN/Inf among x[0..n), or n when all are finite.
size_t first_nonfinite(const float* x, size_t n);

// The layout position of element i, e.g. "tensor 'fc.weight' element 3", for messages.
std::string describe_element(const ParamLayout& layout, size_t i);

// LAMB's dense update on an averaged gradient (docs/reference/algorithms.md §4 warmup, §7 LAMB):
// u = m̂/(√v̂+ε) + λθ, trust_L = clamp(‖θ_L‖/‖u_L‖, min, max) (1 if a norm is 0),
// θ_L −= lr·trust_L·u_L. `u` is n floats of workspace; returns the trust ratios.
std::vector<float> lamb_dense_update(float* theta, float* m, float* v, const float* g, float* u,
                                     const ParamLayout& layout, const kernels::AdamArgs& args,
                                     float min_coeff, float max_coeff);

}  // namespace clbo::optim_detail
