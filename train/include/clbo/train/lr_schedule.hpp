// Large-batch learning-rate schedule: linear warmup from 0 to the peak over the first
// warmup_steps, then decay to final_fraction·peak at the last step (linear or cosine), or
// constant. The optimizer's configured lr is the peak; the trainer calls set_lr(lr_at(t))
// before step t.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "clbo/core/names.hpp"

namespace clbo::train {

enum class LrDecay { kLinear, kCosine, kConstant };
inline constexpr auto kLrDecayNames = name_table<LrDecay>(
    {{LrDecay::kLinear, "linear"}, {LrDecay::kCosine, "cosine"}, {LrDecay::kConstant, "constant"}});

struct LrSchedule {
  double peak = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  LrDecay decay = LrDecay::kLinear;
  double final_fraction = 0.0;  // lr at the last step, as a fraction of the peak

  // t is 1-based, t ≤ total_steps. Warmup reaches the peak at t = warmup_steps.
  double lr_at(int64_t t) const;
};

const char* to_string(LrDecay d);

}  // namespace clbo::train
