#include "clbo/sim/projection.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/schedule/schedule.hpp"

namespace clbo::sim {

std::string StepKind::signature() const {
  std::string s = to_string(schedule.phase);
  for (const CommCall& c : schedule.calls)
    s += fmt::format("|{}:{}:{}:{}", to_string(c.kind), c.count, to_string(c.dtype), c.what);
  return s;
}

std::vector<StepKind> step_kinds(const OptimizerConfig& opt, const ParamLayout& layout, int p,
                                 int64_t total_steps, DType grad_dtype) {
  std::vector<StepKind> kinds;
  std::unordered_map<std::string, size_t> index;
  for (int64_t t = 1; t <= total_steps; ++t) {
    StepKind k;
    k.schedule = schedule_at(opt, t, layout, p);
    for (CommCall& c : k.schedule.calls)
      if (c.kind == CollKind::kAllreduce && c.what == "grad") c.dtype = grad_dtype;
    auto [it, fresh] = index.try_emplace(k.signature(), kinds.size());
    if (fresh) {
      k.first_step = t;
      kinds.push_back(std::move(k));
    }
    ++kinds[it->second].count;
  }
  return kinds;
}

namespace {
// Gradient buckets in the order backward produces them (last layer first), with the
// fraction of backward done when each is ready.
std::vector<std::pair<size_t, double>> buckets(const ParamLayout& l, size_t count, size_t eb,
                                               double bucket_bytes) {
  std::vector<std::pair<size_t, double>> out;
  if (l.total() != count || l.num_tensors() == 0) return {{count, 1.0}};
  size_t acc = 0, done = 0;
  for (size_t i = l.num_tensors(); i-- > 0;) {
    acc += l[i].size;
    done += l[i].size;
    if (static_cast<double>(acc * eb) >= bucket_bytes || i == 0) {
      out.push_back({acc, static_cast<double>(done) / static_cast<double>(count)});
      acc = 0;
    }
  }
  return out;
}
}  // namespace

Program step_program(const StepKind& kind, const TrainingSetup& s) {
  Program prog;
  prog.p = s.p;
  prog.gpus_per_node = s.cluster.gpus_per_node;
  ExpandOptions o = s.expand;
  o.param_count = s.workload->layout.total();
  const double bwd = s.compute.bwd_s(static_cast<int>(s.micro_batch));
  for (size_t i = 0; i < kind.schedule.calls.size(); ++i) {
    const CommCall& call = kind.schedule.calls[i];
    const int idx = static_cast<int>(i);
    if (s.overlap && call.kind == CollKind::kAllreduce && call.what == "grad") {
      for (const auto& [count, ready] :
           buckets(s.workload->layout, call.count, dtype_bytes(call.dtype), s.bucket_bytes)) {
        CommCall b = call;
        b.count = count;
        auto segs = expand_call(b, idx, s.cluster, s.p, s.kernels, o);
        if (!segs.empty()) segs.front().not_before_s = bwd * ready;
        prog.segments.insert(prog.segments.end(), segs.begin(), segs.end());
      }
      continue;
    }
    auto segs = expand_call(call, idx, s.cluster, s.p, s.kernels, o);
    if (s.overlap && !segs.empty()) segs.front().not_before_s = bwd;
    prog.segments.insert(prog.segments.end(), segs.begin(), segs.end());
  }
  return prog;
}

namespace {

double union_length(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, end = -std::numeric_limits<double>::infinity();
  for (const auto& [a, b] : spans) {
    if (b <= end) continue;
    total += b - std::max(a, end);
    end = b;
  }
  return total;
}

}  // namespace

StepKindResult step_result(const StepKind& kind, const TrainingSetup& s, const Program& prog,
                           const ProgramResult& r, double optimizer_extra_s) {
  StepKindResult k;
  k.kind = kind;
  const int mb = static_cast<int>(s.micro_batch);
  k.fwd_s = static_cast<double>(s.grad_acc) * s.compute.fwd_s(mb);
  k.bwd_s = static_cast<double>(s.grad_acc) * s.compute.bwd_s(mb);
  k.optimizer_s = s.compute.optimizer_s + optimizer_extra_s;
  // Bucketed allreduces overlap one another, so the busy time is the union of the
  // communication segments' spans, not their sum.
  std::vector<std::pair<double, double>> spans;
  for (size_t i = 0; i < prog.segments.size(); ++i) {
    const Segment& seg = prog.segments[i];
    if (seg.compression) k.compression_s += seg.compute_s;
    if (!seg.rounds.empty()) {
      ++k.library_ops;
      spans.emplace_back(r.segments[i].start_s, r.segments[i].end_s);
    }
    k.segments.push_back({seg.label, r.segments[i]});
  }
  k.comm_total_s = union_length(spans);
  if (s.overlap) {
    const double last_bwd = s.compute.bwd_s(mb);
    k.time_s = k.fwd_s + (k.bwd_s - last_bwd) + std::max(last_bwd, r.time_s) + k.optimizer_s;
  } else {
    k.time_s = k.fwd_s + k.bwd_s + r.time_s + k.optimizer_s;
  }
  k.comm_s = std::max(0.0, k.time_s - k.compute_s() - k.compression_s);
  k.bytes_per_gpu = static_cast<double>(r.traffic_bytes) / s.p;
  k.staging_bytes_per_gpu = static_cast<double>(r.staging_bytes) / s.p;
  k.collective_calls = static_cast<int>(kind.schedule.calls.size());
  k.transfers = r.transfers;
  k.wall_s = r.wall_s;
  k.cpu_s = r.cpu_s;
  return k;
}

RunMetrics run_metrics(const std::vector<StepKindResult>& kinds, const TrainingSetup& s) {
  RunMetrics m;
  int64_t steps = 0;
  for (const auto& k : kinds) {
    m.time_s += static_cast<double>(k.kind.count) * k.time_s;
    m.total_bytes_per_gpu += static_cast<double>(k.kind.count) * k.bytes_per_gpu;
    steps += k.kind.count;
    if (k.collective_calls > 0) m.comm_steps += k.kind.count;
    m.collective_calls += k.kind.count * k.collective_calls;
  }
  const int mb = static_cast<int>(s.micro_batch);
  m.one_gpu_step_s = static_cast<double>(s.grad_acc) * (s.compute.fwd_s(mb) + s.compute.bwd_s(mb)) +
                     s.compute.optimizer_s;
  if (m.time_s > 0) {
    m.samples_per_s = static_cast<double>(s.batch_size()) * static_cast<double>(steps) / m.time_s;
    m.scaling_efficiency = m.one_gpu_step_s * static_cast<double>(steps) / m.time_s;
  }
  return m;
}

}  // namespace clbo::sim
