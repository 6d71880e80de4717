#include "simulate_measurements.hpp"

#include <map>

#include "clbo/sim/execution.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/projection.hpp"

namespace clbo::sim {

namespace {

TrainingSetup setup_for(const ClusterSpec& c, const Measurement& m) {
  TrainingSetup s;
  s.cluster = c;
  s.p = m.p;
  s.workload = m.workload;
  require_gpu_figures(c.gpu_spec, false, c.file, "gpu");
  s.compute = m.workload->compute_for(c.gpu_spec, c.file, "gpu");
  s.kernels.hbm_Bps = c.gpu_spec.hbm_TBps * 1e12;
  s.micro_batch = m.micro_batch;
  s.grad_acc = m.grad_acc;
  s.total_steps = 1;
  return s;
}

}  // namespace

std::vector<double> simulate_measurements(const ClusterSpec& cluster,
                                          const std::vector<Measurement>& ms) {
  std::map<int, std::vector<size_t>> by_p;
  for (size_t i = 0; i < ms.size(); ++i) by_p[ms[i].p].push_back(i);
  std::vector<double> out(ms.size(), 0);
  for (const auto& [p, idx] : by_p) {
    std::vector<Program> programs;
    std::vector<StepKind> kinds;
    for (size_t i : idx) {
      const Measurement& m = ms[i];
      if (m.kind == Measurement::Kind::kStep) {
        StepKind k = step_kinds(m.optimizer, m.workload->layout, p, 1, DType::kF16).front();
        programs.push_back(step_program(k, setup_for(cluster, m)));
        kinds.push_back(std::move(k));
      } else {
        KernelModel km;
        require_gpu_figures(cluster.gpu_spec, false, cluster.file, "gpu");
        km.hbm_Bps = cluster.gpu_spec.hbm_TBps * 1e12;
        programs.push_back(calls_program({m.call}, cluster, p, km, ExpandOptions{}));
        kinds.emplace_back();
      }
    }
    const std::vector<ProgramResult> results = simulate_programs(cluster, p, programs);
    for (size_t j = 0; j < idx.size(); ++j) {
      const Measurement& m = ms[idx[j]];
      const double seconds =
          m.kind == Measurement::Kind::kStep
              ? step_result(kinds[j], setup_for(cluster, m), programs[j], results[j]).time_s
              : results[j].time_s;
      out[idx[j]] = measured_quantity_from_seconds(m, seconds);
    }
  }
  return out;
}

}  // namespace clbo::sim
