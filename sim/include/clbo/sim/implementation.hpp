// Implementation profiles: whose code a run models.
//   clbo       clbo's fused kernels (kernel_model.hpp) and the workload's measured optimizer
//              step for every optimizer.
//   deepspeed  DeepSpeed's onebit implementation, which produced the papers' measurements:
//              every op of its compressed allreduce (runtime/comm/nccl.py, mpi.py,
//              compression/cupy.py) and of its optimizers' steps (runtime/fp16/onebit/
//              adam.py, lamb.py, zoadam.py) counted from the code, each a kernel streaming
//              its bytes at the GPU's achievable HBM bandwidth, issued by the host at a
//              per-op launch cost, with the host-blocking syncs where the code has them; one
//              compressed call per parameter group where DeepSpeed's fp16 wrapper makes it.
// Nothing here is fitted. docs/implementations.md has the tables below with their source
// lines; tests/sim/test_implementation.cpp holds the code to them.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "clbo/core/layout.hpp"
#include "clbo/core/schedule.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/sim/expansion/options.hpp"
#include "clbo/sim/kernel_model.hpp"

namespace clbo::sim {

// The source the deepspeed profile was counted from.
inline constexpr const char* kDeepspeedVersion = "DeepSpeed v0.16.4";

// The three compute phases of one compressed allreduce: before the first exchange (worker),
// between the phases (server), after the last (unpack).
enum class OnebitPart { kWorker, kServer, kUnpack };
const char* to_string(OnebitPart p);

// A group of consecutive ops of DeepSpeed's compressed allreduce.
struct DataflowStage {
  const char* name;
  const char* source;           // file:lines in DeepSpeed's deepspeed/runtime/
  int kernels = 0;              // ops over the buffer, one kernel each
  int kernels_per_rank = 0;     // ops made once per rank of the world (× p)
  double bytes_padded = 0;      // bytes read + written per element of the padded buffer n'
  double bytes_chunk = 0;       // ... per element of this rank's chunk c = n'/p
  int syncs = 0;                // host-blocking syncs
  bool only_if_padded = false;  // runs only when n < n'
};
const std::vector<DataflowStage>& deepspeed_onebit_stages(Backend backend, OnebitPart part);

// The optimizer steps DeepSpeed's onebit optimizers take, by stage of the run.
enum class DeepspeedStep {
  kOnebitAdamWarmup,
  kOnebitAdamCompression,
  kOnebitLambWarmup,
  kOnebitLambCompression,
  kZeroOneAdamVariance,
  kZeroOneAdamCompression,
  kZeroOneAdamLocal,
  kZeroOneAdamSync,
};
const char* to_string(DeepspeedStep s);
const std::vector<DeepspeedStep>& deepspeed_steps();

// A group of consecutive ops of one optimizer step over one tensor (or flat group).
struct StepStage {
  const char* name;
  const char* source;
  int kernels = 0;
  double bytes = 0;  // read + written per element of the tensor
  int syncs = 0;
  bool decay_only = false;  // only where the tensor's group has weight decay
};
const std::vector<StepStage>& deepspeed_step_stages(DeepspeedStep s);

// The fused step the workload's measured optimizer time stands for (FusedAdam/FusedLamb:
// read p, g, m, v and write p, m, v once): 28 bytes per element, one pass.
inline constexpr double kFusedStepBytes = 28.0;

// What one rank of clbo's compressed allreduce keeps live over a padded buffer of `padded`
// elements on p ranks (collectives/src/onebit_allreduce.cpp), bytes.
double onebit_working_set_bytes(uint64_t padded, int p);

// Seconds of one part of a compressed allreduce of n (unpadded) elements on p ranks under
// o.implementation: clbo's kernels (km, at the rates its cache model gives the working set
// above plus o.resident_bytes_per_rank) or DeepSpeed's ops.
double onebit_part_s(OnebitPart part, const KernelModel& km, const ExpandOptions& o, size_t n,
                     int p);

// Seconds DeepSpeed's optimizer step adds to the workload's measured (fused) step at a step
// of `phase`: its ops over every tensor it loops over minus one fused pass. 0 under clbo and
// for optimizers DeepSpeed's onebit code does not implement (Adam, LAMB, SLAMB).
double optimizer_extra_s(const OptimizerConfig& c, Phase phase, const ParamLayout& layout,
                         const KernelModel& km, const ExpandOptions& o);

// DeepSpeed's parameter groups of the BERT recipes: weights with weight decay, then the
// 1-D tensors (biases, LayerNorm) without; empty groups left out. Element counts.
std::vector<size_t> deepspeed_param_groups(const ParamLayout& layout);

// The calls an implementation makes for a step of the optimizer's schedule. DeepSpeed's
// FP16_Optimizer flattens each parameter group into one master tensor, so 1-bit Adam and
// 0/1 Adam make one compressed call per group where the schedule has one over the whole
// model; 1-bit LAMB keeps its one fused momentum. clbo makes the schedule's calls.
std::vector<CommCall> implementation_calls(const CommSchedule& schedule, const OptimizerConfig& c,
                                           const ParamLayout& layout, Implementation impl);

// The time of a sequence of ops issued by one host thread onto one GPU stream: op i starts
// when the host has issued it (launch_s each) and op i−1 is done; a sync makes the host wait
// for the GPU and then costs sync_s. Returns when both are done.
struct Op {
  double gpu_s = 0;
  bool sync_after = false;
};
double host_pipeline_s(const std::vector<Op>& ops, double launch_s, double sync_s);

}  // namespace clbo::sim
