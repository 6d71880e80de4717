// The optimizer interface. One Optimizer object holds one rank's state; a data-parallel run
// has p of them, each stepping with its own Communicator. step() communicates exactly the
// calls comm_schedule() announces for that step — the simulator trusts this, and tests
// hold the optimizers to it through CountingCommunicator and CommPlan.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/collectives/communicator.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/core/schedule.hpp"
#include "clbo/schedule/config.hpp"

namespace clbo {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // The type name of its config, e.g. "OneBitAdam" (DeepSpeed's names, then clbo's ablations).
  virtual std::string type() const = 0;

  // One update of this rank's params (n floats, in place) from its local gradient. Returns
  // false when the step was skipped because a gradient, or the allreduced mean of the ranks'
  // gradients (an fp32 overflow), was non-finite and the config asks for skipping (then no
  // state changed on any rank); throws clbo::Error naming step, rank and tensor otherwise.
  virtual bool step(Communicator& comm, float* params, const float* grad) = 0;

  // The collectives step t (1-based, counted like steps_taken()) will issue.
  virtual CommSchedule comm_schedule(int64_t t) const = 0;

  // Number of completed (non-skipped) updates.
  virtual int64_t steps_taken() const = 0;

  // The learning rate of the next steps (training schedules change it between steps).
  virtual void set_lr(float lr) = 0;
  virtual float lr() const = 0;

  // Full state: moments, error buffers, counters, frozen coefficients, freshness, RNG.
  // Loading into an optimizer built from the same config, layout and rank makes the
  // continuation bit-identical to never having stopped.
  virtual void save_state(std::ostream& out) const = 0;
  virtual void load_state(std::istream& in) = 0;

  // load_state naming `where` (a checkpoint file) in its errors. A state that does not match
  // this optimizer's type, layout, world size or rank, or is truncated, throws InputError and
  // leaves the optimizer unchanged.
  virtual void load_state(std::istream& in, const std::string& where) {
    (void)where;
    load_state(in);
  }
  // The validated config this optimizer was built from.
  virtual const OptimizerConfig& config() const = 0;
  // Steps skipped because of non-finite gradients (nonfinite = "skip").
  virtual int64_t steps_skipped() const { return 0; }
  // The per-tensor factor the last step multiplied lr by, in layout order: LAMB's trust ratio
  // (1-bit LAMB: its trust ratio in warmup, then lamb_coeff_freeze·factor; SLAMB: φF, the
  // ratio of its fresh coordinates). Empty for the optimizers without one and before the
  // first step. A diagnostic (results show it), not state.
  virtual std::vector<float> layer_coefficients() const { return {}; }
  // DeepSpeed's exp_avg_mask: after every compressed allreduce the communicated buffer is
  // multiplied by this mask (n floats, usually 0/1) so that momenta known to be exactly zero
  // stay zero (1-bit compression cannot represent 0). Only the 1-bit optimizers support it;
  // the mask is user input and is not part of the saved state.
  virtual void set_momentum_mask(std::vector<float> mask) {
    (void)mask;
    throw Error(type() + " does not support a momentum mask");
  }
};

// Builds an optimizer from a DeepSpeed-style block {"type": ..., "params": {...}} (or a
// whole DeepSpeed config holding "optimizer": {...}). Validates every field before any work;
// errors name `file`, the field and the value. `rank`/`world_size` describe the caller.
std::unique_ptr<Optimizer> make_optimizer(const nlohmann::json& block, const std::string& file,
                                          const ParamLayout& layout, int world_size, int rank);

// The same from an already parsed config.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, const ParamLayout& layout,
                                          int world_size, int rank);

// Throws clbo::Error naming the optimizer, the rank, the step and the tensor of the first NaN
// or Inf in params (layout.total() floats). Callers that publish parameters run it after each
// step: finite inputs can still overflow fp32 in an update (an lr of 1e38), and a step whose
// result is non-finite cannot be undone on every rank, so it is an error under both
// nonfinite policies.
void require_finite_params(const Optimizer& opt, const ParamLayout& layout, const float* params,
                           int rank, int64_t step);

// The types make_optimizer accepts.
const std::vector<std::string>& optimizer_types();

}  // namespace clbo
