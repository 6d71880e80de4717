// Running an experiment: one forked SimGrid process per (cluster, GPU count), every step
// kind of every optimizer at every point of that platform simulated once (identical
// programs shared), then the runs assembled in (point, optimizer) order.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <utility>

#include "clbo/core/error.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/experiment.hpp"
#include "clbo/sim/implementation.hpp"
#include "clbo/sim/projection.hpp"
#include "clbo/sim/results_json.hpp"
#include "clbo/sim/spec.hpp"

namespace clbo::sim {

nlohmann::json simulate_experiment(const nlohmann::json& spec_json, const std::string& file,
                                   const SimulateOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  const ExperimentSpec spec = parse_experiment_spec(spec_json, file);

  // Step kinds depend on the optimizer and p only; compute them once each.
  std::map<std::pair<size_t, int>, std::vector<StepKind>> kinds_cache;
  auto kinds_of = [&](size_t opt, int p) -> const std::vector<StepKind>& {
    auto key = std::make_pair(opt, p);
    auto it = kinds_cache.find(key);
    if (it == kinds_cache.end())
      it = kinds_cache
               .emplace(key, step_kinds(spec.optimizers[opt].config, spec.workload->layout, p,
                                        spec.total_steps, spec.grad_dtype))
               .first;
    return it->second;
  };

  // Group points by platform: one child process per (cluster, p).
  std::vector<std::pair<size_t, int>> groups;
  for (const RunPoint& pt : spec.points)
    if (std::find(groups.begin(), groups.end(), std::make_pair(pt.cluster, pt.p)) == groups.end())
      groups.push_back({pt.cluster, pt.p});

  // The runs of one point: every optimizer under each of its implementations, in order.
  struct RunSlot {
    size_t opt;
    Implementation impl;
  };
  std::vector<RunSlot> slots;
  for (size_t oi = 0; oi < spec.optimizers.size(); ++oi)
    for (Implementation im : spec.optimizers[oi].implementations) slots.push_back({oi, im});

  nlohmann::json runs = nlohmann::json::array();
  nlohmann::json group_timing = nlohmann::json::array();
  std::vector<nlohmann::json> point_runs(spec.points.size() * slots.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture those in lambdas.
    const auto ci = std::get<0>(groups[gi]);
    const auto p = std::get<1>(groups[gi]);
    const ClusterSpec& cluster = spec.clusters[ci];
    const auto g0 = std::chrono::steady_clock::now();
    // Every (point, run slot, step kind) of this group, with programs deduplicated.
    struct Job {
      size_t point, slot, kind, program;
      double optimizer_extra_s;
    };
    std::vector<Job> jobs;
    std::vector<Program> programs;
    std::map<std::string, size_t> program_index;
    std::map<std::pair<size_t, Implementation>, TrainingSetup> setups;
    auto setup_of = [&](size_t pi, Implementation im) -> TrainingSetup& {
      auto [it, fresh] = setups.try_emplace({pi, im});
      if (!fresh) return it->second;
      const RunPoint& pt = spec.points[pi];
      TrainingSetup& s = it->second;
      s.cluster = cluster;
      s.p = p;
      s.workload = spec.workload;
      s.compute = spec.profile_for(cluster);
      s.kernels.hbm_Bps = cluster.gpu_spec.hbm_TBps * 1e12;
      s.kernels.efficiency = spec.kernel_efficiency;
      if (!spec.kernel_bench.is_null())
        load_kernel_bench(s.kernels, spec.kernel_bench, spec.kernel_bench_file);
      s.micro_batch = pt.micro_batch;
      s.grad_acc = pt.grad_acc;
      s.total_steps = spec.total_steps;
      s.grad_dtype = spec.grad_dtype;
      s.overlap = spec.overlap;
      s.bucket_bytes = spec.bucket_bytes;
      s.expand = spec.expand;
      s.expand.implementation = im;
      return s;
    };
    for (size_t pi = 0; pi < spec.points.size(); ++pi) {
      const RunPoint& pt = spec.points[pi];
      if (pt.cluster != ci || pt.p != p) continue;
      for (size_t si = 0; si < slots.size(); ++si) {
        const OptimizerEntry& opt = spec.optimizers[slots[si].opt];
        TrainingSetup& s = setup_of(pi, slots[si].impl);
        const auto& kinds = kinds_of(slots[si].opt, p);
        for (size_t ki = 0; ki < kinds.size(); ++ki) {
          // The calls this implementation makes for the step (DeepSpeed: one compressed
          // call per parameter group).
          StepKind as_run = kinds[ki];
          as_run.schedule.calls = implementation_calls(kinds[ki].schedule, opt.config,
                                                       spec.workload->layout, slots[si].impl);
          // Step kinds whose calls expand alike share one program (Adam's dense step and
          // 1-bit Adam's warmup step, 1-bit Adam's and 0/1 Adam's compressed exchanges):
          // neither the phase nor a compressed call's name changes the traffic. The
          // implementation changes only compressed calls.
          std::string key;
          bool compressed = false;
          for (const CommCall& c : as_run.schedule.calls) {
            key += '|';
            key += expansion_key(c);
            compressed |= c.kind == CollKind::kCompressedAllreduce;
          }
          if (compressed) key += fmt::format("|{}", to_string(slots[si].impl));
          if (spec.overlap) key += fmt::format("|mb{}", pt.micro_batch);
          auto [it, fresh] = program_index.try_emplace(key, programs.size());
          if (fresh) programs.push_back(step_program(as_run, s));
          jobs.push_back({pi, si, ki, it->second,
                          optimizer_extra_s(opt.config, kinds[ki].schedule.phase,
                                            spec.workload->layout, s.kernels, s.expand)});
        }
      }
    }
    const std::vector<ProgramResult> results =
        simulate_programs(cluster, p, programs, spec.session);
    double group_wall = 0, group_cpu = 0;
    uint64_t group_transfers = 0;
    for (const auto& r : results) {
      group_wall += r.wall_s;
      group_cpu += r.cpu_s;
      group_transfers += r.transfers;
    }
    // Assemble runs in (point, optimizer, implementation) order.
    for (size_t pi = 0; pi < spec.points.size(); ++pi) {
      const RunPoint& pt = spec.points[pi];
      if (pt.cluster != ci || pt.p != p) continue;
      for (size_t si = 0; si < slots.size(); ++si) {
        const TrainingSetup& s = setups.at({pi, slots[si].impl});
        std::vector<StepKindResult> kr;
        std::set<size_t> counted;
        double wall = 0, cpu = 0;
        uint64_t transfers = 0;
        for (const Job& j : jobs) {
          if (j.point != pi || j.slot != si) continue;
          kr.push_back(step_result(kinds_of(slots[si].opt, p)[j.kind], s, programs[j.program],
                                   results[j.program], j.optimizer_extra_s));
          if (counted.insert(j.program).second) {
            wall += results[j.program].wall_s;
            cpu += results[j.program].cpu_s;
            transfers += results[j.program].transfers;
          }
        }
        nlohmann::json run = run_json(s, spec.optimizers[slots[si].opt], kr, run_metrics(kr, s),
                                      {wall, cpu, transfers});
        run["point"] = pi;
        run["implementation"] = to_string(slots[si].impl);
        point_runs[pi * slots.size() + si] = std::move(run);
      }
      // Ratios against the named baseline at the same point, under the same implementation
      // where the baseline runs under it (else under the baseline's first).
      for (size_t si = 0; si < slots.size(); ++si) {
        const std::string& b = spec.optimizers[slots[si].opt].baseline;
        if (b.empty()) continue;
        size_t best = slots.size();
        for (size_t bi = 0; bi < slots.size(); ++bi) {
          if (spec.optimizers[slots[bi].opt].label != b) continue;
          if (best == slots.size() || slots[bi].impl == slots[si].impl) best = bi;
          if (slots[bi].impl == slots[si].impl) break;
        }
        add_baseline_ratios(point_runs[pi * slots.size() + si],
                            point_runs[pi * slots.size() + best]);
      }
    }
    const double g_wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
    group_timing.push_back(
        {{"cluster", cluster.name},
         {"gpus", p},
         {"programs", programs.size()},
         {"simulate_wall_s", group_wall},
         {"simulate_cpu_s", group_cpu},
         {"group_wall_s", g_wall},
         {"transfers", group_transfers},
         {"transfers_per_cpu_s", group_cpu > 0 ? group_transfers / group_cpu : 0.0}});
    if (options.progress)
      options.progress(static_cast<int>(gi + 1), static_cast<int>(groups.size()),
                       fmt::format("{} × {} GPUs", cluster.name, p));
  }
  for (auto& r : point_runs)
    if (!r.is_null()) runs.push_back(std::move(r));

  const double total_wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return results_document(spec_json, file, spec, std::move(runs), std::move(group_timing),
                          total_wall);
}

std::vector<std::string> validate_experiment(const nlohmann::json& spec, const std::string& file) {
  return parse_experiment_spec(spec, file).warnings;
}

}  // namespace clbo::sim
