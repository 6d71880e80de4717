#include "clbo/sim/results_json.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "clbo/core/results.hpp"
#include "clbo/sim/implementation.hpp"

namespace clbo::sim {

nlohmann::json step_kind_json(const StepKindResult& k) {
  nlohmann::json calls = nlohmann::json::array();
  for (const CommCall& c : k.kind.schedule.calls)
    calls.push_back({{"kind", to_string(c.kind)},
                     {"count", c.count},
                     {"dtype", to_string(c.dtype)},
                     {"what", c.what}});
  nlohmann::json segs = nlohmann::json::array();
  for (const auto& [label, t] : k.segments)
    segs.push_back({{"label", label}, {"start_ms", t.start_s * 1e3}, {"end_ms", t.end_s * 1e3}});
  return {
      {"phase", to_string(k.kind.schedule.phase)},
      {"count", k.kind.count},
      {"first_step", k.kind.first_step},
      {"calls", calls},
      {"simulated",
       {{"time_ms", k.time_s * 1e3},
        {"fwd_ms", k.fwd_s * 1e3},
        {"bwd_ms", k.bwd_s * 1e3},
        {"optimizer_ms", k.optimizer_s * 1e3},
        {"compute_ms", k.compute_s() * 1e3},
        {"comm_ms", k.comm_s * 1e3},
        {"comm_total_ms", k.comm_total_s * 1e3},
        {"compression_ms", k.compression_s * 1e3},
        {"bytes_per_gpu", k.bytes_per_gpu},
        {"staging_bytes_per_gpu", k.staging_bytes_per_gpu},
        {"collective_calls", k.collective_calls},
        {"library_ops", k.library_ops},
        {"transfers", k.transfers},
        {"segments", segs}}},
      {"timing",
       {{"wall_s", k.wall_s},
        {"cpu_s", k.cpu_s},
        {"transfers_per_cpu_s", k.cpu_s > 0 ? static_cast<double>(k.transfers) / k.cpu_s : 0.0}}}};
}

nlohmann::json run_json(const TrainingSetup& s, const OptimizerEntry& opt,
                        const std::vector<StepKindResult>& kinds, const RunMetrics& m,
                        const RunTiming& t) {
  nlohmann::json kind_docs = nlohmann::json::array();
  for (const auto& k : kinds) kind_docs.push_back(step_kind_json(k));
  return {
      {"cluster", s.cluster.name},
      {"gpus", s.p},
      {"nodes", nodes_for(s.cluster, s.p)},
      {"gpu", s.compute.gpu},
      {"optimizer", opt.label},
      {"type", opt.config.type_name()},
      {"baseline", opt.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(opt.baseline)},
      {"batch_size", s.batch_size()},
      {"micro_batch", s.micro_batch},
      {"grad_acc", s.grad_acc},
      {"total_steps", s.total_steps},
      {"compute_profile", s.compute.to_json()},
      {"step_kinds", kind_docs},
      {"simulated",
       {{"time_s", m.time_s},
        {"time_h", m.time_s / 3600},
        {"samples_per_s", m.samples_per_s},
        {"total_bytes_per_gpu", m.total_bytes_per_gpu},
        {"one_gpu_step_ms", m.one_gpu_step_s * 1e3},
        {"scaling_efficiency", m.scaling_efficiency},
        {"comm_steps", m.comm_steps},
        {"collective_calls", m.collective_calls},
        {"volume_reduction", nullptr},
        {"speedup", nullptr}}},
      {"timing",
       {{"wall_s", t.wall_s},
        {"cpu_s", t.cpu_s},
        {"transfers_per_cpu_s", t.cpu_s > 0 ? static_cast<double>(t.transfers) / t.cpu_s : 0.0}}}};
}

void add_baseline_ratios(nlohmann::json& run, const nlohmann::json& baseline_run) {
  const nlohmann::json& base = baseline_run["simulated"];
  nlohmann::json& sim = run["simulated"];
  const double bytes = sim["total_bytes_per_gpu"].get<double>();
  if (bytes > 0) sim["volume_reduction"] = base["total_bytes_per_gpu"].get<double>() / bytes;
  sim["speedup"] = base["time_s"].get<double>() / sim["time_s"].get<double>();
}

nlohmann::json results_document(const nlohmann::json& spec_json, const std::string& file,
                                const ExperimentSpec& spec, nlohmann::json runs,
                                nlohmann::json group_timing, double wall_s) {
  nlohmann::json clusters = nlohmann::json::object();
  for (const auto& c : spec.clusters) {
    clusters[c.name] = c.to_json();
    // Where the GPU's figures and compute came from. The six GPUs that predate this record
    // leave it out, so their committed results regenerate byte for byte; their sources are
    // docs/reference/published.md §5.6 rows 1-6.
    if (!c.gpu_spec.unrecorded_preset) {
      nlohmann::json g = c.gpu_spec.to_json();
      g["compute_profile"] = spec.profile_for(c).origin;
      clusters[c.name]["gpu_figures"] = g;
    }
  }
  nlohmann::json optimizers = nlohmann::json::object();
  for (const auto& o : spec.optimizers) optimizers[o.label] = to_json(o.config);
  nlohmann::json settings = {
      {"total_steps", spec.total_steps},
      {"grad_dtype", to_string(spec.grad_dtype)},
      {"overlap_backward", spec.overlap},
      {"bucket_mb", spec.bucket_bytes / 1e6},
      {"backend", to_string(spec.expand.backend)},
      {"mpi_cuda_aware", spec.expand.mpi_cuda_aware},
      {"allreduce", to_string(spec.expand.allreduce)},
      {"protocol", to_string(spec.expand.protocol)},
      {"fidelity", spec.expand.exact ? "exact" : "fast"},
      {"kernel_efficiency", spec.kernel_efficiency},
      {"kernel_bench", spec.kernel_bench_file.empty() ? nlohmann::json(nullptr)
                                                      : nlohmann::json(spec.kernel_bench_file)},
      {"target_rounds", spec.expand.target_rounds},
      {"max_flows_per_round", spec.session.max_flows_per_round},
      {"implementation",
       [&] {
         nlohmann::json l = nlohmann::json::array();
         for (Implementation im : spec.implementations) l.push_back(to_string(im));
         return l;
       }()},
      {"deepspeed_profile_counted_from", kDeepspeedVersion},
      {"launch_us", spec.expand.launch_s * 1e6},
      {"host_sync_us", spec.expand.host_sync_s * 1e6}};
  nlohmann::json doc = {
      {"schema", "clbo.simulate/1"},
      {"experiment", file},
      {"name", spec_json.value("name", "")},
      {"config", spec_json},
      {"environment", environment_json()},
      {"provenance",
       "numbers under \"simulated\" come from the SimGrid simulation; under \"paper\" they "
       "are published values (see their source); \"timing\" is host wall time"},
      {"inputs",
       {{"clusters", clusters},
        {"workload", spec.workload->to_json()},
        {"optimizers", optimizers},
        {"settings", settings}}},
      {"runs", std::move(runs)},
      {"timing", {{"wall_s", wall_s}, {"groups", std::move(group_timing)}}}};
  if (spec.deepspeed) doc["inputs"]["deepspeed"] = spec.deepspeed->to_json();
  if (!spec.warnings.empty()) doc["warnings"] = spec.warnings;
  return doc;
}

}  // namespace clbo::sim
