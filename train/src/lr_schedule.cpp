#include "clbo/train/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace clbo::train {

double LrSchedule::lr_at(int64_t t) const {
  if (t <= warmup_steps) return peak * static_cast<double>(t) / static_cast<double>(warmup_steps);
  if (decay == LrDecay::kConstant || total_steps <= warmup_steps) return peak;
  // progress 0 at the first step after warmup, 1 at the last step.
  const double span = static_cast<double>(std::max<int64_t>(total_steps - warmup_steps - 1, 1));
  const double progress = std::clamp(static_cast<double>(t - warmup_steps - 1) / span, 0.0, 1.0);
  const double floor = final_fraction * peak;
  if (decay == LrDecay::kLinear) return peak - (peak - floor) * progress;
  return floor + (peak - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

const char* to_string(LrDecay d) {
  return kLrDecayNames.name(d);
}

}  // namespace clbo::train
