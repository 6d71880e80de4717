#include "clbo/sim/experiment.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/sim/projection.hpp"

namespace clbo::sim {

namespace {

struct OptEntry {
  std::string label, baseline;
  OptimizerConfig cfg;
};

struct Point {
  size_t cluster = 0;  // index into Spec::clusters
  int p = 1;
  int64_t micro_batch = 1, grad_acc = 1;
  nlohmann::json paper;  // published values to compare with, or null
  std::string paper_source;
};

struct Spec {
  std::string file;
  std::shared_ptr<Workload> workload;
  std::vector<ClusterSpec> clusters;
  std::vector<OptEntry> optimizers;
  std::vector<Point> points;
  int64_t total_steps = 1;
  DType grad_dtype = DType::kF16;
  bool overlap = false;
  double bucket_bytes = 25e6;
  double kernel_efficiency = 0.85;
  nlohmann::json kernel_bench;  // `clbo bench kernels` output, or null
  std::string kernel_bench_file;
  ExpandOptions expand;
  SessionOptions session;
  std::map<std::string, ComputeProfile> compute;  // user-measured profiles by GPU
};

const nlohmann::json& array_field(ConfigReader& r, const nlohmann::json& obj,
                                  const std::string& key, bool required) {
  static const nlohmann::json empty = nlohmann::json::array();
  r.ignore(key);
  if (!obj.contains(key)) {
    if (required) r.fail(key, "required");
    return empty;
  }
  if (!obj[key].is_array() || obj[key].empty()) r.fail(key, "expected a non-empty array");
  return obj[key];
}

DType parse_dtype(ConfigReader& r, const std::string& key, DType def) {
  const std::string d = r.choice(key, def == DType::kF16 ? "fp16" : "fp32", {"fp16", "fp32"});
  return d == "fp16" ? DType::kF16 : DType::kF32;
}

// Micro-batch, and gradient accumulation from either grad_acc or a global batch size.
void batch_of(ConfigReader& r, Point& pt, int64_t def_mb, int64_t def_batch, int64_t def_ga,
              const std::string& file) {
  pt.micro_batch = r.integer("micro_batch", def_mb, 1);
  if (pt.micro_batch < 1) r.fail("micro_batch", "required");
  const bool has_batch = r.has("batch_size"), has_ga = r.has("grad_acc");
  if (has_batch && has_ga) r.fail("grad_acc", "give batch_size or grad_acc, not both");
  const int64_t batch = r.integer("batch_size", has_ga ? 0 : def_batch, 1);
  if (batch > 0) {
    const int64_t per_step = pt.p * pt.micro_batch;
    if (batch % per_step != 0)
      throw InputError(file, r.field("batch_size"), std::to_string(batch),
                       fmt::format("not divisible by GPUs × micro-batch = {} × {} = {}", pt.p,
                                   pt.micro_batch, per_step));
    pt.grad_acc = batch / per_step;
  } else {
    pt.grad_acc = r.integer("grad_acc", def_ga, 1);
  }
}

Spec parse_spec(const nlohmann::json& spec, const std::string& file) {
  Spec s;
  s.file = file;
  ConfigReader top(spec, file);
  for (const char* k : {"name", "description", "source", "notes"}) top.ignore(k);
  // Paper-claim specs (experiments/paper/) carry their claims beside the simulate block; the
  // report evaluates them, the simulator only copies them into `config`.
  top.ignore("claims");
  if (spec.contains("claims") && !spec["claims"].is_array())
    top.fail("claims", "expected an array of claims (see docs/paper.md)");
  top.ignore("simulate");
  if (!spec.contains("simulate") || !spec["simulate"].is_object())
    top.fail("simulate", "required: the simulator's settings");
  const nlohmann::json& sim = spec["simulate"];
  top.finish();
  ConfigReader r(sim, file, "simulate");

  r.ignore("workload");
  if (!sim.contains("workload")) r.fail("workload", "required");
  s.workload =
      std::make_shared<Workload>(resolve_workload(sim["workload"], file, r.field("workload")));

  const auto& opts = array_field(r, sim, "optimizers", true);
  std::set<std::string> labels;
  for (size_t i = 0; i < opts.size(); ++i) {
    const std::string f = fmt::format("{}[{}]", r.field("optimizers"), i);
    ConfigReader o(opts[i], file, f);
    OptEntry e;
    o.ignore("label");
    o.ignore("optimizer");
    o.ignore("baseline");
    if (!opts[i].contains("optimizer"))
      o.fail("optimizer", "required: a DeepSpeed optimizer block");
    e.cfg = parse_optimizer_config(opts[i]["optimizer"], file);
    e.label = opts[i].value("label", e.cfg.type_name());
    e.baseline = opts[i].value("baseline", "");
    if (!labels.insert(e.label).second) o.fail("label", "labels must be unique");
    o.finish();
    s.optimizers.push_back(std::move(e));
  }
  for (size_t i = 0; i < s.optimizers.size(); ++i) {
    const std::string& b = s.optimizers[i].baseline;
    if (!b.empty() && !labels.count(b))
      throw InputError(file, fmt::format("{}[{}].baseline", r.field("optimizers"), i), b,
                       "no optimizer has this label" +
                           did_you_mean(b, std::vector<std::string>(labels.begin(), labels.end())));
  }

  s.total_steps = r.integer("total_steps", 1, 1);
  s.grad_dtype = parse_dtype(r, "grad_dtype", DType::kF16);
  s.overlap = r.boolean("overlap_backward", false);
  s.bucket_bytes = r.number_in("bucket_mb", 25, 0, false, 1e6, true) * 1e6;
  s.kernel_efficiency = r.number_in("kernel_efficiency", 0.85, 0, false, 1, true);
  r.ignore("kernel_bench");
  if (sim.contains("kernel_bench")) {
    if (!sim["kernel_bench"].is_string())
      r.fail("kernel_bench", "expected the path of `clbo bench kernels` JSON output");
    s.kernel_bench_file = sim["kernel_bench"].get<std::string>();
    s.kernel_bench = load_json_file(s.kernel_bench_file);
    KernelModel probe;
    load_kernel_bench(probe, s.kernel_bench, s.kernel_bench_file);  // validate now
  }
  const std::string backend = r.choice("backend", "nccl", {"nccl", "mpi"});
  s.expand.backend = backend == "nccl" ? Backend::kNccl : Backend::kMpi;
  s.expand.mpi_cuda_aware = r.boolean("mpi_cuda_aware", false);
  const std::string algo = r.choice("allreduce", "auto", {"auto", "ring", "tree", "hierarchical"});
  s.expand.allreduce = algo == "ring"           ? Algo::kRing
                       : algo == "tree"         ? Algo::kTree
                       : algo == "hierarchical" ? Algo::kHierarchical
                                                : Algo::kAuto;
  const std::string proto = r.choice("protocol", "auto", {"auto", "LL", "LL128", "Simple"});
  s.expand.protocol = proto == "LL"       ? Proto::kLL
                      : proto == "LL128"  ? Proto::kLL128
                      : proto == "Simple" ? Proto::kSimple
                                          : Proto::kAuto;
  const std::string fidelity = r.choice("fidelity", "fast", {"fast", "exact"});
  s.expand.exact = fidelity == "exact";
  s.session.aggregate = fidelity == "fast";
  s.session.max_flows_per_round =
      static_cast<int>(r.integer("max_flows_per_round", s.session.max_flows_per_round, 16));
  s.expand.target_rounds = static_cast<int>(r.integer("target_rounds", s.expand.target_rounds, 1));

  r.ignore("compute");
  if (sim.contains("compute")) {
    ConfigReader cr(sim["compute"], file, r.field("compute"));
    for (auto it = sim["compute"].begin(); it != sim["compute"].end(); ++it) {
      const std::string f = cr.field(it.key());
      cr.ignore(it.key());
      const GpuInfo& g = gpu_info(it.key(), file, f);
      const nlohmann::json prof =
          it.value().is_string() ? load_json_file(it.value().get<std::string>()) : it.value();
      s.compute[g.name] =
          parse_profile(prof, g.name, it.value().is_string() ? it.value().get<std::string>() : file,
                        it.value().is_string() ? "" : f);
    }
  }

  // Points: explicit rows, or the product clusters × gpus.
  auto cluster_index = [&](const nlohmann::json& ref, const std::string& field) {
    ClusterSpec c = resolve_cluster(ref, file, field);
    for (size_t i = 0; i < s.clusters.size(); ++i)
      if (s.clusters[i].name == c.name && s.clusters[i].file == c.file) return i;
    s.clusters.push_back(std::move(c));
    return s.clusters.size() - 1;
  };
  const int64_t def_mb = r.integer("micro_batch", 0, 1);
  const int64_t def_batch = r.integer("batch_size", 0, 1);
  const int64_t def_ga = r.integer("grad_acc", 1, 1);
  if (sim.contains("batch_size") && sim.contains("grad_acc"))
    r.fail("grad_acc", "give batch_size or grad_acc, not both");
  if (sim.contains("rows")) {
    const auto& rows = array_field(r, sim, "rows", true);
    if (sim.contains("clusters") || sim.contains("gpus"))
      r.fail("rows", "give rows or clusters × gpus, not both");
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string f = fmt::format("{}[{}]", r.field("rows"), i);
      ConfigReader rr(rows[i], file, f);
      Point pt;
      rr.ignore("cluster");
      if (!rows[i].contains("cluster")) rr.fail("cluster", "required");
      pt.cluster = cluster_index(rows[i]["cluster"], rr.field("cluster"));
      pt.p = static_cast<int>(rr.integer("gpus", 0, 0));
      check_gpu_count(s.clusters[pt.cluster], pt.p, file, rr.field("gpus"));
      // A row inherits the sweep's batch settings unless it states its own.
      batch_of(rr, pt, def_mb, rows[i].contains("grad_acc") ? 0 : def_batch, def_ga, file);
      rr.ignore("paper");
      rr.ignore("paper_source");
      rr.ignore("label");
      if (rows[i].contains("paper")) {
        if (!rows[i]["paper"].is_object()) rr.fail("paper", "expected an object of numbers");
        pt.paper = rows[i]["paper"];
        pt.paper_source = rows[i].value("paper_source", "");
      }
      rr.finish();
      s.points.push_back(pt);
    }
  } else {
    const auto& clusters = array_field(r, sim, "clusters", true);
    const auto& gpus = array_field(r, sim, "gpus", true);
    for (size_t ci = 0; ci < clusters.size(); ++ci) {
      const size_t idx =
          cluster_index(clusters[ci], fmt::format("{}[{}]", r.field("clusters"), ci));
      for (size_t gi = 0; gi < gpus.size(); ++gi) {
        const std::string f = fmt::format("{}[{}]", r.field("gpus"), gi);
        if (!gpus[gi].is_number_integer())
          throw InputError(file, f, gpus[gi].dump(), "expected an integer");
        Point pt;
        pt.cluster = idx;
        pt.p = gpus[gi].get<int>();
        check_gpu_count(s.clusters[idx], pt.p, file, f);
        nlohmann::json batch = nlohmann::json::object();
        batch["micro_batch"] = def_mb;
        if (def_batch > 0)
          batch["batch_size"] = def_batch;
        else
          batch["grad_acc"] = def_ga;
        ConfigReader br(batch, file, "simulate");
        batch_of(br, pt, def_mb, def_batch, def_ga, file);
        s.points.push_back(pt);
      }
    }
  }
  if (def_mb < 1) {
    for (size_t i = 0; i < s.points.size(); ++i)
      if (s.points[i].micro_batch < 1) r.fail("micro_batch", "required (at the top or per row)");
  }
  r.finish();
  return s;
}

// Published keys a row may state, and the simulated number each one is compared with.
double simulated_value(const nlohmann::json& run, const std::string& key, const std::string& file,
                       const std::string& field) {
  const nlohmann::json& k0 = run["step_kinds"][0]["simulated"];
  const nlohmann::json& sim = run["simulated"];
  if (key == "fwd_ms" || key == "bwd_ms" || key == "optimizer_ms" || key == "compression_ms")
    return k0[key].get<double>();
  if (key == "allreduce_ms" || key == "comm_ms") return k0["comm_ms"].get<double>();
  if (key == "step_ms") return k0["time_ms"].get<double>();
  if (key == "samples_per_s" || key == "speedup" || key == "volume_reduction" ||
      key == "scaling_efficiency")
    return sim[key].is_null() ? 0.0 : sim[key].get<double>();
  throw InputError(file, field, key,
                   "unknown published quantity" +
                       did_you_mean(key, {"fwd_ms", "bwd_ms", "optimizer_ms", "allreduce_ms",
                                          "step_ms", "samples_per_s", "speedup", "volume_reduction",
                                          "scaling_efficiency"}));
}

nlohmann::json kind_json(const StepKindResult& k) {
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

}  // namespace

nlohmann::json run_experiment(const nlohmann::json& spec_json, const std::string& file,
                              const SimulateOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  const Spec spec = parse_spec(spec_json, file);

  // Compute profiles per cluster GPU (user-measured ones win).
  auto profile_for = [&](const ClusterSpec& c) {
    const GpuInfo& g = gpu_info(c.gpu, c.file, "gpu");
    auto it = spec.compute.find(g.name);
    return it != spec.compute.end() ? it->second : spec.workload->compute_for(c.gpu, c.file, "gpu");
  };

  // Step kinds depend on the optimizer and p only; compute them once each.
  std::map<std::pair<size_t, int>, std::vector<StepKind>> kinds_cache;
  auto kinds_of = [&](size_t opt, int p) -> const std::vector<StepKind>& {
    auto key = std::make_pair(opt, p);
    auto it = kinds_cache.find(key);
    if (it == kinds_cache.end())
      it = kinds_cache
               .emplace(key, step_kinds(spec.optimizers[opt].cfg, spec.workload->layout, p,
                                        spec.total_steps, spec.grad_dtype))
               .first;
    return it->second;
  };

  // Group points by platform: one child process per (cluster, p).
  std::vector<std::pair<size_t, int>> groups;
  for (const Point& pt : spec.points)
    if (std::find(groups.begin(), groups.end(), std::make_pair(pt.cluster, pt.p)) == groups.end())
      groups.push_back({pt.cluster, pt.p});

  nlohmann::json runs = nlohmann::json::array();
  nlohmann::json group_timing = nlohmann::json::array();
  std::vector<nlohmann::json> point_runs(spec.points.size() * spec.optimizers.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto [ci, p] = groups[gi];
    const ClusterSpec& cluster = spec.clusters[ci];
    const auto g0 = std::chrono::steady_clock::now();
    // Every (point, optimizer, step kind) of this group, with programs deduplicated.
    struct Job {
      size_t point, opt, kind, program;
    };
    std::vector<Job> jobs;
    std::vector<Program> programs;
    std::map<std::string, size_t> program_index;
    std::vector<TrainingSetup> setups(spec.points.size());
    for (size_t pi = 0; pi < spec.points.size(); ++pi) {
      const Point& pt = spec.points[pi];
      if (pt.cluster != ci || pt.p != p) continue;
      TrainingSetup& s = setups[pi];
      s.cluster = cluster;
      s.p = p;
      s.workload = spec.workload;
      s.compute = profile_for(cluster);
      s.kernels.hbm_Bps = gpu_info(cluster.gpu, cluster.file, "gpu").hbm_TBps * 1e12;
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
      if (s.expand.backend == Backend::kMpi && !s.expand.mpi_cuda_aware && cluster.is_xml())
        throw InputError(file, "simulate.backend", "\"mpi\"",
                         "host staging needs a built cluster (an XML platform has no node CPU); "
                         "set mpi_cuda_aware or use a cluster preset");
      for (size_t oi = 0; oi < spec.optimizers.size(); ++oi) {
        const auto& kinds = kinds_of(oi, p);
        for (size_t ki = 0; ki < kinds.size(); ++ki) {
          // Step kinds with the same calls share one program (Adam's dense step and 1-bit
          // Adam's warmup step, for instance): the phase name does not change the traffic.
          StepKind calls_only = kinds[ki];
          calls_only.schedule.phase = Phase::kDense;
          std::string key = calls_only.signature();
          if (spec.overlap) key += fmt::format("|mb{}", pt.micro_batch);
          auto [it, fresh] = program_index.try_emplace(key, programs.size());
          if (fresh) programs.push_back(step_program(kinds[ki], s));
          jobs.push_back({pi, oi, ki, it->second});
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
    // Assemble runs in (point, optimizer) order.
    for (size_t pi = 0; pi < spec.points.size(); ++pi) {
      const Point& pt = spec.points[pi];
      if (pt.cluster != ci || pt.p != p) continue;
      const TrainingSetup& s = setups[pi];
      for (size_t oi = 0; oi < spec.optimizers.size(); ++oi) {
        std::vector<StepKindResult> kr;
        std::set<size_t> counted;
        double wall = 0, cpu = 0;
        uint64_t transfers = 0;
        for (const Job& j : jobs) {
          if (j.point != pi || j.opt != oi) continue;
          kr.push_back(
              step_result(kinds_of(oi, p)[j.kind], s, programs[j.program], results[j.program]));
          if (counted.insert(j.program).second) {
            wall += results[j.program].wall_s;
            cpu += results[j.program].cpu_s;
            transfers += results[j.program].transfers;
          }
        }
        const RunMetrics m = run_metrics(kr, s);
        nlohmann::json kinds = nlohmann::json::array();
        for (const auto& k : kr) kinds.push_back(kind_json(k));
        const OptEntry& opt = spec.optimizers[oi];
        nlohmann::json run = {
            {"cluster", cluster.name},
            {"gpus", p},
            {"nodes", nodes_for(cluster, p)},
            {"gpu", s.compute.gpu},
            {"optimizer", opt.label},
            {"type", opt.cfg.type_name()},
            {"baseline",
             opt.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(opt.baseline)},
            {"batch_size", s.batch_size()},
            {"micro_batch", s.micro_batch},
            {"grad_acc", s.grad_acc},
            {"total_steps", spec.total_steps},
            {"compute_profile", s.compute.to_json()},
            {"step_kinds", kinds},
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
             {{"wall_s", wall},
              {"cpu_s", cpu},
              {"transfers_per_cpu_s", cpu > 0 ? static_cast<double>(transfers) / cpu : 0.0}}}};
        point_runs[pi * spec.optimizers.size() + oi] = std::move(run);
      }
      // Baseline ratios, then the published values beside ours.
      for (size_t oi = 0; oi < spec.optimizers.size(); ++oi) {
        nlohmann::json& run = point_runs[pi * spec.optimizers.size() + oi];
        const std::string& b = spec.optimizers[oi].baseline;
        if (!b.empty()) {
          for (size_t bi = 0; bi < spec.optimizers.size(); ++bi) {
            if (spec.optimizers[bi].label != b) continue;
            const nlohmann::json& base = point_runs[pi * spec.optimizers.size() + bi]["simulated"];
            nlohmann::json& sim = run["simulated"];
            const double bytes = sim["total_bytes_per_gpu"].get<double>();
            if (bytes > 0)
              sim["volume_reduction"] = base["total_bytes_per_gpu"].get<double>() / bytes;
            sim["speedup"] = base["time_s"].get<double>() / sim["time_s"].get<double>();
          }
        }
        if (!pt.paper.is_null()) {
          nlohmann::json err = nlohmann::json::object();
          nlohmann::json paper = pt.paper;
          for (auto it = pt.paper.begin(); it != pt.paper.end(); ++it) {
            const std::string f = fmt::format("simulate.rows[{}].paper.{}", pi, it.key());
            if (!it.value().is_number())
              throw InputError(file, f, it.value().dump(), "expected a number");
            const double sim = simulated_value(run, it.key(), file, f);
            err[it.key()] = 100.0 * (sim - it.value().get<double>()) / it.value().get<double>();
          }
          if (!pt.paper_source.empty()) paper["source"] = pt.paper_source;
          run["paper"] = paper;
          run["simulated"]["error_pct_vs_paper"] = err;
        }
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

  nlohmann::json clusters = nlohmann::json::object();
  for (const auto& c : spec.clusters) clusters[c.name] = c.to_json();
  nlohmann::json optimizers = nlohmann::json::object();
  for (const auto& o : spec.optimizers) optimizers[o.label] = to_json(o.cfg);
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
      {"max_flows_per_round", spec.session.max_flows_per_round}};
  const double total_wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return {{"schema", "clbo.simulate/1"},
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
          {"runs", runs},
          {"timing", {{"wall_s", total_wall}, {"groups", group_timing}}}};
}

void validate_experiment(const nlohmann::json& spec, const std::string& file) {
  (void)parse_spec(spec, file);
}

std::string default_results_path(const std::string& experiment_path) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(experiment_path).lexically_normal();
  std::vector<std::string> parts;
  for (const auto& part : p) parts.push_back(part.string());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] != "experiments") continue;
    fs::path rebuilt;
    for (size_t j = 0; j < parts.size(); ++j)
      rebuilt /= (j == i ? std::string("results") : parts[j]);
    return rebuilt.string();
  }
  return (fs::path("results") / p.filename()).string();
}

nlohmann::json without_timing(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("timing");
    for (auto& [k, v] : j.items()) v = without_timing(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = without_timing(v);
  }
  return j;
}

std::string results_table(const nlohmann::json& results) {
  std::string out = fmt::format("{:<18} {:>5} {:<14} {:>10} {:>26} {:>10} {:>7} {:>7} {:>6}\n",
                                "cluster", "GPUs", "optimizer", "samples/s", "step ms per kind",
                                "run GB/GPU", "volume", "speedup", "eff");
  for (const auto& run : results["runs"]) {
    std::string kinds;
    for (const auto& k : run["step_kinds"]) {
      if (!kinds.empty()) kinds += " ";
      kinds += fmt::format("{:.0f}", k["simulated"]["time_ms"].get<double>());
    }
    if (kinds.size() > 26) kinds = kinds.substr(0, 23) + "...";
    const auto& s = run["simulated"];
    auto ratio = [](const nlohmann::json& v) {
      return v.is_null() ? std::string("-") : fmt::format("{:.2f}x", v.get<double>());
    };
    out += fmt::format("{:<18} {:>5} {:<14} {:>10.1f} {:>26} {:>10.1f} {:>7} {:>7} {:>5.0f}%\n",
                       run["cluster"].get<std::string>().substr(0, 18), run["gpus"].get<int>(),
                       run["optimizer"].get<std::string>().substr(0, 14),
                       s["samples_per_s"].get<double>(), kinds,
                       s["total_bytes_per_gpu"].get<double>() / 1e9, ratio(s["volume_reduction"]),
                       ratio(s["speedup"]), 100 * s["scaling_efficiency"].get<double>());
    if (run.contains("paper")) {
      std::string errs;
      for (auto it = s["error_pct_vs_paper"].begin(); it != s["error_pct_vs_paper"].end(); ++it)
        errs += fmt::format(" {} {:+.1f}%", it.key(), it.value().get<double>());
      out += "    vs paper:" + errs + "\n";
    }
  }
  return out;
}

}  // namespace clbo::sim
