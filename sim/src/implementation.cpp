#include "clbo/sim/implementation.hpp"

#include <algorithm>

#include "clbo/core/error.hpp"
#include "clbo/plan/plan.hpp"

namespace clbo::sim {

namespace {

using S = DataflowStage;

// DeepSpeed v0.16.4, deepspeed/runtime/comm/nccl.py and compression/cupy.py. Bytes are what
// each op reads and writes (every op allocates its output): fp32 4, bool and uint8 1, packed
// bits 1/8 per element. docs/implementations.md explains each row.
const std::vector<S>& nccl_worker() {
  static const std::vector<S> t = {
      {"pad", "comm/nccl.py:61-63", 2, 0, 8, 0, 0, true},
      {"worker error feedback", "comm/nccl.py:65", 1, 0, 12, 0, 0},
      {"worker norm", "comm/nccl.py:66", 2, 0, 4, 0, 0},
      {"worker error update", "comm/nccl.py:67", 8, 0, 62, 0, 0},
      {"sign to bits", "comm/nccl.py:69-71", 3, 0, 21, 0, 0},
      {"bool to uint8 cast", "comm/nccl.py:71", 1, 0, 2, 0, 0},
      {"packbits", "compression/cupy.py:23", 1, 0, 1.125, 0, 0},
      {"split and stream sync", "compression/cupy.py:24-25", 0, 0, 0, 0, 1},
      {"receive buffers", "comm/nccl.py:77-91", 1, 2, 0.125, 0, 0},
      {"stack pieces", "comm/nccl.py:96", 1, 0, 0.25, 0, 0},
  };
  return t;
}

const std::vector<S>& nccl_server() {
  static const std::vector<S> t = {
      {"worker scales copy-out", "comm/nccl.py:98", 0, 1, 0, 0, 0},
      {"flatten", "comm/nccl.py:109", 1, 0, 0.25, 0, 0},
      {"unpack to [p, c] fp32", "comm/nccl.py:109", 4, 0, 22.125, 0, 0},
      {"weighted sum", "comm/nccl.py:109-110", 4, 0, 12, 4, 0},
      {"server error feedback", "comm/nccl.py:111-114", 11, 0, 0, 78, 0},
      {"server sign to bits", "comm/nccl.py:118-120", 4, 0, 0, 23, 0},
      {"server packbits", "compression/cupy.py:23", 1, 0, 0, 1.125, 0},
      {"server split and stream sync", "compression/cupy.py:24-25", 0, 0, 0, 0, 1},
      {"server receive buffers", "comm/nccl.py:127-143", 2, 2, 0.125, 0, 0},
  };
  return t;
}

const std::vector<S>& nccl_unpack() {
  static const std::vector<S> t = {
      {"server chunks copy-out", "comm/nccl.py:146", 0, 1, 0.25, 0, 0},
      {"server scales copy-out", "comm/nccl.py:147", 0, 1, 0, 0, 0},
      {"stack chunks", "comm/nccl.py:153", 1, 0, 0.25, 0, 0},
      {"final unpack and scale", "comm/nccl.py:157-160", 7, 0, 38.375, 0, 0},
  };
  return t;
}

// deepspeed/runtime/comm/mpi.py: the same math without the uint8 cast and the list
// collectives; its host staging is timed by the expansion (expansion/mpi.cpp).
const std::vector<S>& mpi_worker() {
  static const std::vector<S> t = {
      {"pad", "comm/mpi.py:142-144", 2, 0, 8, 0, 0, true},
      {"worker error feedback", "comm/mpi.py:146", 1, 0, 12, 0, 0},
      {"worker norm", "comm/mpi.py:147", 2, 0, 4, 0, 0},
      {"worker error update", "comm/mpi.py:148", 8, 0, 62, 0, 0},
      {"sign to bits", "comm/mpi.py:150-151", 3, 0, 21, 0, 0},
      {"packbits", "compression/cupy.py:23", 1, 0, 1.125, 0, 0},
      {"split and stream sync", "compression/cupy.py:24-25", 0, 0, 0, 0, 1},
      {"receive buffers", "comm/mpi.py:154-156", 2, 0, 0.125, 0, 0},
  };
  return t;
}

const std::vector<S>& mpi_server() {
  static const std::vector<S> t = {
      {"flatten", "comm/mpi.py:173", 1, 0, 0.25, 0, 0},
      {"unpack to [p, c] fp32", "comm/mpi.py:173", 4, 0, 22.125, 0, 0},
      {"weighted sum", "comm/mpi.py:173-174", 3, 0, 12, 4, 0},
      {"server error feedback", "comm/mpi.py:175-178", 11, 0, 0, 78, 0},
      {"server sign to bits", "comm/mpi.py:182-183", 3, 0, 0, 21, 0},
      {"server packbits", "compression/cupy.py:23", 1, 0, 0, 1.125, 0},
      {"server split and stream sync", "compression/cupy.py:24-25", 0, 0, 0, 0, 1},
      {"server receive buffers", "comm/mpi.py:186-188", 2, 0, 0.125, 0, 0},
  };
  return t;
}

const std::vector<S>& mpi_unpack() {
  static const std::vector<S> t = {
      {"final unpack and scale", "comm/mpi.py:204-207", 7, 0, 38.375, 0, 0},
  };
  return t;
}

using T = StepStage;

// deepspeed/runtime/fp16/onebit/{adam,lamb,zoadam}.py, per tensor the step loops over.
const std::vector<T>& step_table(DeepspeedStep s) {
  static const std::vector<T> adam_warmup = {
      {"momentum update", "fp16/onebit/adam.py:194", 2, 20, 0},
      {"variance update", "fp16/onebit/adam.py:195", 2, 24, 0},
      {"update", "fp16/onebit/adam.py:198", 3, 28, 0},
      {"weight decay", "fp16/onebit/adam.py:233-234", 2, 20, 0, true},
      {"parameter update", "fp16/onebit/adam.py:236", 2, 20, 0},
  };
  static const std::vector<T> adam_compression = {
      {"momentum update", "fp16/onebit/adam.py:209", 2, 20, 0},
      {"update with the frozen variance", "fp16/onebit/adam.py:230", 3, 28, 0},
      {"weight decay", "fp16/onebit/adam.py:233-234", 2, 20, 0, true},
      {"parameter update", "fp16/onebit/adam.py:236", 2, 20, 0},
  };
  static const std::vector<T> lamb_warmup = {
      {"momentum update", "fp16/onebit/lamb.py:228", 2, 20, 0},
      {"variance update", "fp16/onebit/lamb.py:229", 2, 24, 0},
      {"weight norm", "fp16/onebit/lamb.py:234", 3, 12, 0},
      {"update", "fp16/onebit/lamb.py:235", 3, 28, 0},
      {"weight decay", "fp16/onebit/lamb.py:236-237", 2, 20, 0, true},
      {"update norm", "fp16/onebit/lamb.py:238", 3, 12, 0},
      {"trust ratio", "fp16/onebit/lamb.py:240-241", 3, 0, 3},
      {"parameter update", "fp16/onebit/lamb.py:251", 2, 20, 0},
  };
  static const std::vector<T> lamb_compression = {
      {"momentum snapshot", "fp16/onebit/lamb.py:174", 1, 8, 0},
      {"momentum update", "fp16/onebit/lamb.py:256", 2, 20, 0},
      {"scale by scaling_coeff", "fp16/onebit/lamb.py:257", 1, 8, 0},
      {"unscale", "fp16/onebit/lamb.py:323", 1, 8, 0},
      {"gradient reconstruction", "fp16/onebit/lamb.py:337", 3, 28, 0},
      {"fresh variance", "fp16/onebit/lamb.py:338", 2, 24, 0},
      {"denominator", "fp16/onebit/lamb.py:339", 2, 16, 0},
      {"preliminary update", "fp16/onebit/lamb.py:340", 1, 12, 0},
      {"weight decay", "fp16/onebit/lamb.py:343", 2, 20, 0, true},
      {"update norm", "fp16/onebit/lamb.py:348", 3, 12, 0},
      {"fresh denominator", "fp16/onebit/lamb.py:349", 2, 16, 0},
      {"factor", "fp16/onebit/lamb.py:350", 2, 16, 1},
      {"update ratio", "fp16/onebit/lamb.py:352", 4, 12, 1, true},
      {"parameter update", "fp16/onebit/lamb.py:366", 2, 20, 0},
  };
  static const std::vector<T> zo_variance = {
      {"variance update", "fp16/onebit/zoadam.py:213", 2, 24, 0},
      {"momentum update", "fp16/onebit/zoadam.py:214", 2, 20, 0},
      {"update", "fp16/onebit/zoadam.py:242", 3, 28, 0},
      {"weight decay", "fp16/onebit/zoadam.py:243-244", 2, 20, 0, true},
      {"parameter update", "fp16/onebit/zoadam.py:246", 2, 20, 0},
  };
  static const std::vector<T> zo_compression = {
      {"momentum update", "fp16/onebit/zoadam.py:224", 2, 20, 0},
      {"update", "fp16/onebit/zoadam.py:242", 3, 28, 0},
      {"weight decay", "fp16/onebit/zoadam.py:243-244", 2, 20, 0, true},
      {"parameter update", "fp16/onebit/zoadam.py:246", 2, 20, 0},
  };
  static const std::vector<T> zo_local = {
      {"momentum update", "fp16/onebit/zoadam.py:226", 2, 20, 0},
      {"update", "fp16/onebit/zoadam.py:242", 3, 28, 0},
      {"weight decay", "fp16/onebit/zoadam.py:243-244", 2, 20, 0, true},
      {"parameter update", "fp16/onebit/zoadam.py:246", 2, 20, 0},
      {"accumulate", "fp16/onebit/zoadam.py:248", 2, 20, 0},
  };
  static const std::vector<T> zo_sync = [] {
    std::vector<T> t = zo_local;
    for (const T& x :
         std::vector<T>{{"apply the accumulator", "fp16/onebit/zoadam.py:251", 2, 20, 0},
                        {"rescale the accumulator", "fp16/onebit/zoadam.py:252", 3, 28, 0},
                        {"copy back", "fp16/onebit/zoadam.py:254", 1, 8, 0},
                        {"momentum from the accumulator", "fp16/onebit/zoadam.py:262", 3, 24, 0},
                        {"parameter correction", "fp16/onebit/zoadam.py:263", 4, 40, 0},
                        {"reset the accumulator", "fp16/onebit/zoadam.py:264", 1, 4, 0}})
      t.push_back(x);
    return t;
  }();
  switch (s) {
    case DeepspeedStep::kOnebitAdamWarmup:
      return adam_warmup;
    case DeepspeedStep::kOnebitAdamCompression:
      return adam_compression;
    case DeepspeedStep::kOnebitLambWarmup:
      return lamb_warmup;
    case DeepspeedStep::kOnebitLambCompression:
      return lamb_compression;
    case DeepspeedStep::kZeroOneAdamVariance:
      return zo_variance;
    case DeepspeedStep::kZeroOneAdamCompression:
      return zo_compression;
    case DeepspeedStep::kZeroOneAdamLocal:
      return zo_local;
    case DeepspeedStep::kZeroOneAdamSync:
      return zo_sync;
  }
  throw Error("deepspeed_step_stages: unknown step");
}

double gpu_seconds(const KernelModel& km, double bytes) {
  return km.seconds(bytes);
}

// Appends a stage's ops, its bytes spread evenly over them; its syncs follow its last ops
// (a stage without ops syncs after the op before it).
void append_ops(std::vector<Op>& ops, int count, double gpu_s, int syncs) {
  for (int i = 0; i < count; ++i) ops.push_back({gpu_s / count, false});
  for (int i = 0; i < syncs; ++i) {
    const size_t back = static_cast<size_t>(i) + 1;
    if (i < std::max(count, 1) && ops.size() >= back)
      ops[ops.size() - back].sync_after = true;
    else
      ops.push_back({0, true});
  }
}

// The optimizer step DeepSpeed takes at a step of `phase`, or none.
bool deepspeed_step_of(const OptimizerConfig& c, Phase phase, DeepspeedStep& out) {
  switch (c.kind) {
    case OptimizerKind::kOneBitAdam:
      out = phase == Phase::kWarmup ? DeepspeedStep::kOnebitAdamWarmup
                                    : DeepspeedStep::kOnebitAdamCompression;
      return true;
    case OptimizerKind::kOneBitLamb:
      out = phase == Phase::kWarmup ? DeepspeedStep::kOnebitLambWarmup
                                    : DeepspeedStep::kOnebitLambCompression;
      return true;
    case OptimizerKind::kZeroOneAdam:
      out = phase == Phase::kVarianceStep  ? DeepspeedStep::kZeroOneAdamVariance
            : phase == Phase::kCompression ? DeepspeedStep::kZeroOneAdamCompression
            : phase == Phase::kSyncStep    ? DeepspeedStep::kZeroOneAdamSync
                                           : DeepspeedStep::kZeroOneAdamLocal;
      return true;
    default:
      return false;
  }
}

CommGranularity granularity(const OptimizerConfig& c) {
  switch (c.kind) {
    case OptimizerKind::kOneBitAdam:
      return c.as<OneBitAdamParams>().comm_granularity;
    case OptimizerKind::kOneBitLamb:
      return c.as<OneBitLambParams>().comm_granularity;
    case OptimizerKind::kZeroOneAdam:
      return c.as<ZeroOneAdamParams>().comm_granularity;
    default:
      return CommGranularity::kFlat;
  }
}

// The tensors one DeepSpeed step loops over, each with whether its group has weight decay:
// the flat group masters of FP16_Optimizer (1-bit Adam, 0/1 Adam in the flat mode) or the
// real tensors (1-bit LAMB under FP16_UnfusedOptimizer, and the per-tensor mode).
std::vector<std::pair<size_t, bool>> step_tensors(const OptimizerConfig& c,
                                                  const ParamLayout& layout) {
  std::vector<std::pair<size_t, bool>> out;
  const bool flat =
      c.kind != OptimizerKind::kOneBitLamb && granularity(c) == CommGranularity::kFlat;
  if (flat) {
    size_t decay = 0, rest = 0;
    for (size_t i = 0; i < layout.num_tensors(); ++i)
      (layout.ndim(i) > 1 ? decay : rest) += layout[i].size;
    if (decay > 0) out.push_back({decay, true});
    if (rest > 0) out.push_back({rest, false});
    return out;
  }
  for (size_t i = 0; i < layout.num_tensors(); ++i)
    if (layout[i].size > 0) out.push_back({layout[i].size, layout.ndim(i) > 1});
  return out;
}

}  // namespace

const char* to_string(OnebitPart p) {
  switch (p) {
    case OnebitPart::kWorker:
      return "worker";
    case OnebitPart::kServer:
      return "server";
    case OnebitPart::kUnpack:
      return "unpack";
  }
  return "?";
}

const char* to_string(DeepspeedStep s) {
  switch (s) {
    case DeepspeedStep::kOnebitAdamWarmup:
      return "1-bit Adam, warmup";
    case DeepspeedStep::kOnebitAdamCompression:
      return "1-bit Adam, compression";
    case DeepspeedStep::kOnebitLambWarmup:
      return "1-bit LAMB, warmup";
    case DeepspeedStep::kOnebitLambCompression:
      return "1-bit LAMB, compression";
    case DeepspeedStep::kZeroOneAdamVariance:
      return "0/1 Adam, variance step";
    case DeepspeedStep::kZeroOneAdamCompression:
      return "0/1 Adam, compression step";
    case DeepspeedStep::kZeroOneAdamLocal:
      return "0/1 Adam, local step";
    case DeepspeedStep::kZeroOneAdamSync:
      return "0/1 Adam, sync step";
  }
  return "?";
}

const std::vector<DeepspeedStep>& deepspeed_steps() {
  static const std::vector<DeepspeedStep> all = {
      DeepspeedStep::kOnebitAdamWarmup,    DeepspeedStep::kOnebitAdamCompression,
      DeepspeedStep::kOnebitLambWarmup,    DeepspeedStep::kOnebitLambCompression,
      DeepspeedStep::kZeroOneAdamVariance, DeepspeedStep::kZeroOneAdamCompression,
      DeepspeedStep::kZeroOneAdamLocal,    DeepspeedStep::kZeroOneAdamSync};
  return all;
}

const std::vector<DataflowStage>& deepspeed_onebit_stages(Backend b, OnebitPart part) {
  const bool nccl = b == Backend::kNccl;
  switch (part) {
    case OnebitPart::kWorker:
      return nccl ? nccl_worker() : mpi_worker();
    case OnebitPart::kServer:
      return nccl ? nccl_server() : mpi_server();
    case OnebitPart::kUnpack:
      return nccl ? nccl_unpack() : mpi_unpack();
  }
  throw Error("deepspeed_onebit_stages: unknown part");
}

const std::vector<StepStage>& deepspeed_step_stages(DeepspeedStep s) {
  return step_table(s);
}

double host_pipeline_s(const std::vector<Op>& ops, double launch_s, double sync_s) {
  double host = 0, gpu = 0;
  for (const Op& op : ops) {
    host += launch_s;
    gpu = std::max(gpu, host) + op.gpu_s;
    if (op.sync_after) host = gpu = std::max(gpu, host) + sync_s;
  }
  return std::max(host, gpu);
}

double onebit_working_set_bytes(uint64_t padded, int p) {
  const double n = static_cast<double>(padded);
  // The buffer and the worker error (4 B each per element), the server error of one chunk,
  // and three bit buffers (packed, the received pieces, the server signs).
  return n * (8.0 + 4.0 / p + 3.0 / 8.0);
}

double onebit_part_s(OnebitPart part, const KernelModel& km, const ExpandOptions& o, size_t n,
                     int p) {
  const uint64_t padded = onebit_padded_size(n, p);
  if (o.implementation == Implementation::kClbo) {
    const double ws = onebit_working_set_bytes(padded, p) + o.resident_bytes_per_rank;
    switch (part) {
      case OnebitPart::kWorker:
        return km.worker_compress_s(padded, ws);
      case OnebitPart::kServer:
        return km.server_s(padded, p, ws);
      case OnebitPart::kUnpack:
        return km.unpack_s(padded, ws);
    }
  }
  const double np = static_cast<double>(padded), c = np / p;
  std::vector<Op> ops;
  for (const DataflowStage& s : deepspeed_onebit_stages(o.backend, part)) {
    if (s.only_if_padded && n >= padded) continue;
    append_ops(ops, s.kernels + s.kernels_per_rank * p,
               gpu_seconds(km, s.bytes_padded * np + s.bytes_chunk * c), s.syncs);
  }
  return host_pipeline_s(ops, o.launch_s, o.host_sync_s);
}

double optimizer_extra_s(const OptimizerConfig& c, Phase phase, const ParamLayout& layout,
                         const KernelModel& km, const ExpandOptions& o) {
  DeepspeedStep step;
  if (o.implementation == Implementation::kClbo || !deepspeed_step_of(c, phase, step)) return 0;
  const bool decays = c.common.weight_decay > 0;
  std::vector<Op> ops;
  double fused = 0;
  for (const auto& [elems, decay_group] : step_tensors(c, layout)) {
    const double e = static_cast<double>(elems);
    for (const StepStage& s : deepspeed_step_stages(step)) {
      if (s.decay_only && !(decays && decay_group)) continue;
      append_ops(ops, s.kernels, gpu_seconds(km, s.bytes * e), s.syncs);
    }
    fused += gpu_seconds(km, kFusedStepBytes * e);
  }
  return host_pipeline_s(ops, o.launch_s, o.host_sync_s) - fused;
}

std::vector<size_t> deepspeed_param_groups(const ParamLayout& layout) {
  size_t decay = 0, rest = 0;
  for (size_t i = 0; i < layout.num_tensors(); ++i)
    (layout.ndim(i) > 1 ? decay : rest) += layout[i].size;
  std::vector<size_t> out;
  for (size_t g : {decay, rest})
    if (g > 0) out.push_back(g);
  return out;
}

std::vector<CommCall> implementation_calls(const CommSchedule& schedule, const OptimizerConfig& c,
                                           const ParamLayout& layout, Implementation impl) {
  const bool grouped =
      impl == Implementation::kDeepspeed &&
      (c.kind == OptimizerKind::kOneBitAdam || c.kind == OptimizerKind::kZeroOneAdam) &&
      granularity(c) == CommGranularity::kFlat;
  if (!grouped) return schedule.calls;
  std::vector<CommCall> out;
  for (const CommCall& call : schedule.calls) {
    if (call.kind != CollKind::kCompressedAllreduce || call.count != layout.total()) {
      out.push_back(call);
      continue;
    }
    for (size_t g : deepspeed_param_groups(layout)) {
      CommCall part = call;
      part.count = g;
      out.push_back(part);
    }
  }
  return out;
}

}  // namespace clbo::sim
