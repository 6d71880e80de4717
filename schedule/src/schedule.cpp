#include "clbo/schedule/schedule.hpp"

#include <algorithm>
#include <cmath>

#include "clbo/core/error.hpp"

namespace clbo {

namespace {

CommCall dense_call(size_t count, const char* what, DType dtype = DType::kF32) {
  return CommCall{CollKind::kAllreduce, count, dtype, what};
}

int64_t next_multiple_at_least(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

}  // namespace

ZeroOneAdamStep zero_one_adam_step(const ZeroOneAdamParams& z, int64_t t) {
  if (t < 1) throw Error("zero_one_adam_step: steps count from 1");
  ZeroOneAdamStep s;
  const int64_t offset = z.compat_deepspeed_step_count ? 1 : 0;
  s.clock = t + offset;
  s.phase1 = t <= z.var_freeze_step;

  // Replay the variance counter over the completed phase-1 steps 1 .. min(t−1, vfs). It only
  // changes on variance steps, so jump from one to the next: about κ·log2(t) iterations.
  int64_t var_interval = 1, var_counter = 0;
  const int64_t last_clock = std::min(t - 1, z.var_freeze_step) + offset;
  int64_t c = next_multiple_at_least(1 + offset, var_interval);
  while (c <= last_clock) {
    if (++var_counter == z.var_update_scaler) {
      var_counter = 0;
      var_interval *= 2;
    }
    c = (c / var_interval + 1) * var_interval;
  }
  s.var_interval = var_interval;

  if (s.phase1) {
    s.variance_step = s.clock % var_interval == 0;
    return s;
  }
  // Phase-2 step j (1-based) follows floor((j−1)/scaler) doublings, capped at the clipper.
  const int64_t j = t - z.var_freeze_step;
  const int64_t doublings = (j - 1) / z.local_step_scaler;
  s.local_interval = doublings >= 62 ? z.local_step_clipper
                                     : std::min(z.local_step_clipper, int64_t{1} << doublings);
  s.sync_step = s.clock % s.local_interval == 0;
  return s;
}

bool slamb_tensor_always_synced(const SlambParams& s, const ParamLayout& layout, size_t i) {
  return layout.ndim(i) <= 1 || layout[i].size < static_cast<size_t>(s.grad_size_thr);
}

size_t slamb_small_elements(const SlambParams& s, const ParamLayout& layout) {
  size_t small = 0;
  for (size_t i = 0; i < layout.num_tensors(); ++i)
    if (slamb_tensor_always_synced(s, layout, i)) small += layout[i].size;
  return small;
}

size_t slamb_expected_count(const SlambParams& s, const ParamLayout& layout) {
  const size_t small = slamb_small_elements(s, layout);
  const size_t big = layout.total() - small;
  return static_cast<size_t>(std::llround(s.compress_ratio * static_cast<double>(big))) + small;
}

bool slamb_param_sync_step(const SlambParams& s, int64_t t) {
  return (t - 1) % s.local_steps == 0;
}

void append_compressed_calls(CommSchedule& s, CommGranularity g, const ParamLayout& layout,
                             const char* what) {
  if (g == CommGranularity::kFlat) {
    s.calls.push_back(CommCall{CollKind::kCompressedAllreduce, layout.total(), DType::kF32, what});
    return;
  }
  for (const TensorSpec& t : layout.tensors())
    if (t.size > 0)
      s.calls.push_back(CommCall{CollKind::kCompressedAllreduce, t.size, DType::kF32, what});
}

CommSchedule schedule_at(const OptimizerConfig& c, int64_t t, const ParamLayout& layout, int p) {
  if (t < 1) throw Error("schedule_at: steps count from 1");
  if (p < 1) throw Error("schedule_at: the world size must be at least 1");
  const size_t n = layout.total();
  CommSchedule s;
  if (c.common.nonfinite == NonfinitePolicy::kSkip)
    s.calls.push_back(dense_call(1, "nonfinite_flag"));

  switch (c.kind) {
    case OptimizerKind::kAdam:
    case OptimizerKind::kLamb:
      s.phase = Phase::kDense;
      s.calls.push_back(dense_call(n, "grad"));
      break;
    case OptimizerKind::kOneBitAdam:
    case OptimizerKind::kOneBitLamb:
    case OptimizerKind::kOneBitAdamNoErrorFeedback:
    case OptimizerKind::kNaiveOneBitAdam:
    case OptimizerKind::kNaiveOneBitLamb: {
      if (t <= onebit_warmup_steps(c)) {
        s.phase = Phase::kWarmup;
        s.calls.push_back(dense_call(n, "grad"));
      } else {
        s.phase = Phase::kCompression;
        // The naive 1-bit Adam compresses the gradient; the others their momentum.
        append_compressed_calls(s, comm_granularity(c), layout,
                                c.kind == OptimizerKind::kNaiveOneBitAdam ? "grad" : "momentum");
      }
      break;
    }
    case OptimizerKind::kZeroOneAdam: {
      const auto& z = c.as<ZeroOneAdamParams>();
      const ZeroOneAdamStep k = zero_one_adam_step(z, t);
      if (k.phase1 && k.variance_step) {
        s.phase = Phase::kVarianceStep;
        s.calls.push_back(dense_call(n, "grad"));
      } else if (k.phase1) {
        s.phase = Phase::kCompression;
        append_compressed_calls(s, z.comm_granularity, layout, "grad");
      } else if (k.sync_step) {
        s.phase = Phase::kSyncStep;
        append_compressed_calls(s, z.comm_granularity, layout, "momentum_accumulator");
      } else {
        s.phase = Phase::kLocalStep;
      }
      break;
    }
    case OptimizerKind::kSlamb: {
      const auto& sl = c.as<SlambParams>();
      s.calls.push_back(CommCall{CollKind::kSparseAllreduce, slamb_expected_count(sl, layout),
                                 sl.comm_dtype, "momentum"});
      s.phase = Phase::kCompression;
      if (slamb_param_sync_step(sl, t)) {
        s.phase = Phase::kSyncStep;
        s.calls.push_back(dense_call(n, "params"));
      }
      break;
    }
  }
  return s;
}

}  // namespace clbo
