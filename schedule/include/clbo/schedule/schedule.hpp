// What each optimizer communicates at step t, as a pure function of its config, the layout
// and the world size (docs/reference/algorithms.md §3–§7). Optimizer::comm_schedule returns exactly
// this (SLAMB: with the exact compacted count, see below), and step() issues exactly these calls;
// the simulator reads the same function without linking kernels.
#pragma once
#include <cstddef>
#include <cstdint>

#include "clbo/core/layout.hpp"
#include "clbo/core/schedule.hpp"
#include "clbo/schedule/config.hpp"

namespace clbo {

// 0/1 Adam's step kinds and intervals at step t (1-based, one per completed update). The
// counters evolve as in DeepSpeed's zoadam.py: var_interval starts at 1 and doubles after
// every var_update_scaler variance steps (phase 1 only); local_interval starts at 1 and
// doubles after every local_step_scaler phase-2 steps, capped at local_step_clipper.
struct ZeroOneAdamStep {
  bool phase1 = true;          // t ≤ var_freeze_step
  bool variance_step = false;  // phase 1 and clock(t) % var_interval == 0: dense gradient
  bool sync_step = false;      // phase 2 and clock(t) % local_interval == 0: compressed sync
  int64_t var_interval = 1;    // in force at step t (frozen at its last phase-1 value after)
  int64_t local_interval = 1;  // in force at step t (1 during phase 1)
  int64_t clock = 1;           // t, or t + 1 with compat_deepspeed_step_count
};
ZeroOneAdamStep zero_one_adam_step(const ZeroOneAdamParams& z, int64_t t);

// SLAMB: whether tensor i is always synchronised (1-D, or fewer than grad_size_thr elements).
bool slamb_tensor_always_synced(const SlambParams& s, const ParamLayout& layout, size_t i);
// Elements in always-synced tensors (d_small) and in the others (d_big).
size_t slamb_small_elements(const SlambParams& s, const ParamLayout& layout);
// The *expected* compacted count round(k·d_big) + d_small. The exact count of step t depends
// on the Philox mask, which lives in kernels; Optimizer::comm_schedule returns the exact one.
size_t slamb_expected_count(const SlambParams& s, const ParamLayout& layout);
// Whether step t ends with the dense parameter allreduce: (t − 1) mod local_steps == 0.
bool slamb_param_sync_step(const SlambParams& s, int64_t t);

// The calls of step t (t ≥ 1) on a world of p ranks. With nonfinite = "skip", every step
// starts with the 1-element fp32 flag allreduce. For SLAMB the compacted count is the
// expected one (see slamb_expected_count).
CommSchedule schedule_at(const OptimizerConfig& c, int64_t t, const ParamLayout& layout, int p);

// The calls 1-bit compression makes over a buffer laid out as `layout`: one call over the
// whole buffer (flat) or one per non-empty tensor, in layout order.
void append_compressed_calls(CommSchedule& s, CommGranularity g, const ParamLayout& layout,
                             const char* what);

}  // namespace clbo
