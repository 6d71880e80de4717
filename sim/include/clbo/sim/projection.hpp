// Training-run projection: the optimizer's schedule over a whole run, grouped into its
// distinct step kinds (each simulated once and weighted by its count), the step timeline
// with compute, compression and communication, and the run metrics
// (docs/simulator.md, "Training projection").
//
// Step timeline. fwd and bwd are one micro-batch's times, ga the gradient accumulation:
//   no overlap   ga·(fwd+bwd) + communication program + optimizer
//   overlap      the dense gradient allreduce is cut into buckets that start when backward
//                has produced them (reverse layer order); other calls start after
//                backward: ga·fwd + (ga−1)·bwd + max(bwd, program) + optimizer.
// DeepSpeed's compressed allreduce runs after backward, unoverlapped, as modelled.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "clbo/core/schedule.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/kernel_model.hpp"
#include "clbo/sim/workload.hpp"

namespace clbo::sim {

struct StepKind {
  CommSchedule schedule;
  int64_t count = 0;
  int64_t first_step = 0;
  std::string signature() const;
};

// Distinct step kinds of steps 1..total_steps (in order of first appearance). Dense
// gradient allreduces travel in `grad_dtype` (mixed-precision training sends fp16
// gradients; the optimizers' own schedules state fp32 master buffers).
std::vector<StepKind> step_kinds(const OptimizerConfig& opt, const ParamLayout& layout, int p,
                                 int64_t total_steps, DType grad_dtype);

struct TrainingSetup {
  ClusterSpec cluster;
  int p = 1;
  std::shared_ptr<const Workload> workload;
  ComputeProfile compute;
  KernelModel kernels;
  int64_t micro_batch = 1, grad_acc = 1, total_steps = 1;
  DType grad_dtype = DType::kF16;
  bool overlap = false;
  double bucket_bytes = 25e6;
  ExpandOptions expand;
  int64_t batch_size() const { return p * micro_batch * grad_acc; }
};

// The communication program of one step kind (segments of every call, buckets and their
// ready times when overlapping).
Program step_program(const StepKind& kind, const TrainingSetup& s);

struct StepKindResult {
  StepKind kind;
  double time_s = 0, fwd_s = 0, bwd_s = 0, optimizer_s = 0;
  double comm_s = 0;        // exposed communication (not hidden behind backward)
  double comm_total_s = 0;  // communication busy time: union of the segments' spans
  double compression_s = 0;
  double bytes_per_gpu = 0, staging_bytes_per_gpu = 0;
  int collective_calls = 0;  // calls in the optimizer's schedule
  int library_ops = 0;       // library collectives after expansion (buckets, phases)
  uint64_t transfers = 0;
  double wall_s = 0, cpu_s = 0;  // timing fields
  std::vector<std::pair<std::string, SegmentTiming>> segments;
  double compute_s() const { return fwd_s + bwd_s + optimizer_s; }
};

// `optimizer_extra_s` is what the implementation's optimizer step adds to the workload's
// measured one (implementation.hpp, optimizer_extra_s).
StepKindResult step_result(const StepKind& kind, const TrainingSetup& s, const Program& prog,
                           const ProgramResult& r, double optimizer_extra_s = 0);

struct RunMetrics {
  double time_s = 0;  // end to end
  double samples_per_s = 0;
  double total_bytes_per_gpu = 0;
  double one_gpu_step_s = 0;  // same per-GPU work without communication or compression
  double scaling_efficiency = 0;
  // Communication rounds over the run (0/1 Adam's "fewer rounds" claim): steps that make at
  // least one collective call, and the schedule's calls summed over all steps.
  int64_t comm_steps = 0;
  int64_t collective_calls = 0;
};
RunMetrics run_metrics(const std::vector<StepKindResult>& kinds, const TrainingSetup& s);

}  // namespace clbo::sim
