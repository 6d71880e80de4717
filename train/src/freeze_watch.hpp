// What the harness watches around a run's switch to compression (private to clbo_train).
//
// Per coordinate: at how many dense steps before the switch some rank's gradient was nonzero.
// The coordinates with none have a variance frozen at exactly 0; 1-bit compression cannot
// represent their zero momentum, so the ±scale they receive instead is divided by eps alone.
// DeepSpeed's remedy is its exp_avg_mask; the rule "zero_variance" builds it from these
// counts. Per step: the largest single update of rank 0's parameters, so a run that diverges
// names the coordinate that jumped first and how often its gradient was nonzero.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/core/layout.hpp"

namespace clbo::train {

class FreezeWatch {
 public:
  // switch_step: the last step before compression takes over (where the variance freezes);
  // beta2 and eps as the optimizer's, to estimate each coordinate's frozen variance.
  FreezeWatch(const ParamLayout& layout, int64_t switch_step, double beta2, double eps);
  int64_t switch_step() const { return switch_step_; }

  // Step t's gradients on every rank, before its update; `dense` when t averages the
  // gradient densely and so feeds the variance (warmup steps, 0/1 Adam's variance steps).
  void observe_gradients(int64_t t, bool dense, const std::vector<std::vector<float>>& grads);
  // Rank 0's parameters before and after step t's update.
  void observe_update(int64_t t, const float* before, const float* after);

  // 0 where no dense step saw a nonzero gradient, 1 elsewhere; and how many zeros.
  std::vector<float> zero_variance_mask() const;
  size_t zero_variance_count() const;

  // {"before_switch": largest update, "after_switch": largest update, "first_jump": the first
  // step after the switch whose largest update exceeds 10× every update before it, or null}.
  // Each update: step, tensor, element, abs_change, the coordinate's dense steps with a
  // nonzero gradient out of all dense steps, and the square root of its frozen variance as
  // estimated here (v = β2·v + (1−β2)·ḡ² over the dense steps, ḡ the mean over ranks).
  nlohmann::json updates_json() const;
  // One sentence for a diverged run's error: where it first jumped and why that coordinate.
  std::string explain_divergence() const;

 private:
  struct Update {
    int64_t step = 0;
    size_t index = 0;
    double abs_change = -1;  // < 0: none recorded
  };
  nlohmann::json update_json(const Update& u) const;

  const ParamLayout& layout_;
  int64_t switch_step_;
  double beta2_, eps_;
  int64_t dense_steps_ = 0;
  std::vector<uint32_t> nonzero_steps_;  // per coordinate, dense steps with a nonzero gradient
  std::vector<double> variance_;         // per coordinate, the estimated frozen variance
  Update before_, after_, first_jump_;
};

}  // namespace clbo::train
