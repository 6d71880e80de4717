#include "freeze_watch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace clbo::train {

namespace {

// A step after the switch whose largest update is this many times the largest of the dense
// steps is a jump: no dense step moved any coordinate that far.
constexpr double kJumpFactor = 10.0;

}  // namespace

FreezeWatch::FreezeWatch(const ParamLayout& layout, int64_t switch_step, double beta2, double eps)
    : layout_(layout),
      switch_step_(switch_step),
      beta2_(beta2),
      eps_(eps),
      nonzero_steps_(layout.total(), 0),
      variance_(layout.total(), 0.0) {}

void FreezeWatch::observe_gradients(int64_t t, bool dense,
                                    const std::vector<std::vector<float>>& grads) {
  if (t > switch_step_ || !dense) return;
  ++dense_steps_;
  const double p = static_cast<double>(grads.size());
  for (size_t i = 0; i < nonzero_steps_.size(); ++i) {
    bool nonzero = false;
    double sum = 0;
    for (const auto& g : grads) {
      nonzero |= g[i] != 0.0f;
      sum += g[i];
    }
    nonzero_steps_[i] += nonzero;
    const double mean = sum / p;
    variance_[i] = beta2_ * variance_[i] + (1.0 - beta2_) * mean * mean;
  }
}

void FreezeWatch::observe_update(int64_t t, const float* before, const float* after) {
  Update u;
  u.step = t;
  for (size_t i = 0; i < nonzero_steps_.size(); ++i) {
    const double d = std::fabs(static_cast<double>(after[i]) - static_cast<double>(before[i]));
    if (d > u.abs_change) u.abs_change = d, u.index = i;  // NaN never wins: stays finite
  }
  Update& slot = t <= switch_step_ ? before_ : after_;
  if (u.abs_change > slot.abs_change) slot = u;
  if (t > switch_step_ && first_jump_.abs_change < 0 && before_.abs_change > 0 &&
      u.abs_change > kJumpFactor * before_.abs_change)
    first_jump_ = u;
}

std::vector<float> FreezeWatch::zero_variance_mask() const {
  std::vector<float> m(nonzero_steps_.size());
  for (size_t i = 0; i < m.size(); ++i) m[i] = nonzero_steps_[i] == 0 ? 0.0f : 1.0f;
  return m;
}

size_t FreezeWatch::zero_variance_count() const {
  return static_cast<size_t>(std::count(nonzero_steps_.begin(), nonzero_steps_.end(), 0u));
}

nlohmann::json FreezeWatch::update_json(const Update& u) const {
  if (u.abs_change < 0) return nullptr;
  for (const TensorSpec& t : layout_.tensors())
    if (u.index >= t.offset && u.index < t.offset + t.size)
      return {{"step", u.step},
              {"tensor", t.name},
              {"element", u.index - t.offset},
              {"abs_change", u.abs_change},
              {"dense_steps_with_nonzero_gradient", nonzero_steps_[u.index]},
              {"dense_steps", dense_steps_},
              {"sqrt_frozen_variance", std::sqrt(variance_[u.index])}};
  return nullptr;
}

nlohmann::json FreezeWatch::updates_json() const {
  return {{"before_switch", update_json(before_)},
          {"after_switch", update_json(after_)},
          {"first_jump", update_json(first_jump_)}};
}

std::string FreezeWatch::explain_divergence() const {
  const Update& u = first_jump_.abs_change >= 0 ? first_jump_ : after_;
  const nlohmann::json j = update_json(u);
  if (j.is_null()) return "";
  return fmt::format(
      "the first large update after the switch (step {}) moved {}[{}] by {:.3g}, against at "
      "most {:.3g} per step before it; that coordinate's gradient was nonzero in {} of the {} "
      "dense steps and its frozen sqrt(v) is about {:.2g} against eps {:.2g}, so the 1-bit "
      "compressed momentum it receives is divided by about {:.2g} (docs/convergence.md, "
      "\"NaN with DeepSpeed's defaults\")",
      u.step, j["tensor"].get<std::string>(), j["element"].get<size_t>(), u.abs_change,
      before_.abs_change, nonzero_steps_[u.index], dense_steps_, std::sqrt(variance_[u.index]),
      eps_, std::sqrt(variance_[u.index]) + eps_);
}

}  // namespace clbo::train
