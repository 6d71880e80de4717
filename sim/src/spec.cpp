#include "clbo/sim/spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "clbo/schedule/schedule.hpp"

namespace clbo::sim {

namespace {

// Upper bounds that keep every run finite: the simulator walks the schedule of every step
// (step_kinds), about a microsecond each.
constexpr int64_t kMaxSimulatedSteps = 100'000'000;
constexpr int kMaxRounds = 1 << 20;

Implementation parse_implementation(const nlohmann::json& v, const std::string& file,
                                    const std::string& field) {
  const auto found = v.is_string() ? kImplementationNames.find(v.get<std::string>()) : std::nullopt;
  if (!found)
    throw InputError(
        file, field, v.dump(),
        "unknown implementation: expected \"clbo\" or \"deepspeed\"" +
            (v.is_string() ? did_you_mean(v.get<std::string>(), kImplementationNames.names())
                           : ""));
  return *found;
}

// "implementation": one profile or a non-empty list of distinct ones.
std::vector<Implementation> parse_implementations(const nlohmann::json& v, const std::string& file,
                                                  const std::string& field, bool list_allowed) {
  if (!v.is_array()) return {parse_implementation(v, file, field)};
  if (!list_allowed)
    throw InputError(file, field, v.dump(),
                     "an optimizer entry runs under one implementation: \"clbo\" or "
                     "\"deepspeed\"");
  if (v.empty()) throw InputError(file, field, "[]", "expected at least one implementation");
  std::vector<Implementation> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const Implementation im = parse_implementation(v[i], file, fmt::format("{}[{}]", field, i));
    if (std::find(out.begin(), out.end(), im) != out.end())
      throw InputError(file, fmt::format("{}[{}]", field, i), v[i].dump(), "listed twice");
    out.push_back(im);
  }
  return out;
}

DType parse_dtype(ConfigReader& r, const std::string& key, DType def) {
  return r.choice(key, def, kDTypeNames, {DType::kF16, DType::kF32});
}

// Micro-batch, and gradient accumulation from either grad_acc or a global batch size.
void batch_of(ConfigReader& r, RunPoint& pt, int64_t def_mb, int64_t def_batch, int64_t def_ga,
              const std::string& file) {
  pt.micro_batch = r.integer("micro_batch", def_mb, 1, kMaxBatch);
  if (pt.micro_batch < 1) r.fail("micro_batch", "required");
  const bool has_batch = r.has("batch_size"), has_ga = r.has("grad_acc");
  if (has_batch && has_ga) r.fail("grad_acc", "give batch_size or grad_acc, not both");
  const int64_t batch = r.integer("batch_size", has_ga ? 0 : def_batch, 1, kMaxBatch);
  if (batch > 0) {
    const int64_t per_step = pt.p * pt.micro_batch;
    if (batch % per_step != 0)
      throw InputError(file, r.field("batch_size"), std::to_string(batch),
                       fmt::format("not divisible by GPUs × micro-batch = {} × {} = {}", pt.p,
                                   pt.micro_batch, per_step));
    pt.grad_acc = batch / per_step;
  } else {
    pt.grad_acc = r.integer("grad_acc", def_ga, 1, kMaxBatch);
  }
}

// The batch DeepSpeed would run on this point's GPU count.
void deepspeed_batch(const DeepSpeedConfig& ds, RunPoint& pt, const std::string& where) {
  const DeepSpeedBatch::Resolved b = ds.batch.resolve(pt.p, where);
  if (b.micro_batch > kMaxBatch || b.grad_acc > kMaxBatch)
    throw InputError(ds.file, "train_batch_size", std::to_string(*ds.batch.train_batch_size),
                     fmt::format("gives a micro-batch of {} and {} accumulation steps at {}; at "
                                 "most {} each",
                                 b.micro_batch, b.grad_acc, where, kMaxBatch));
  pt.micro_batch = b.micro_batch;
  pt.grad_acc = b.grad_acc;
}

}  // namespace

ComputeProfile ExperimentSpec::profile_for(const ClusterSpec& c) const {
  auto it = compute.find(c.gpu_spec.name);
  return it != compute.end() ? it->second : workload->compute_for(c.gpu_spec, c.file, "gpu");
}

ExperimentSpec parse_experiment_spec(const nlohmann::json& spec, const std::string& file) {
  ExperimentSpec s;
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

  // A whole DeepSpeed config stands for the fields it sets; stating them beside it would
  // leave two answers to one question.
  r.ignore("ds_config");
  if (sim.contains("ds_config")) {
    s.deepspeed = resolve_deepspeed_config(sim["ds_config"], file, r.field("ds_config"));
    const std::pair<const char*, const char*> owned[] = {
        {"optimizers", "its optimizer block, with the uncompressed twin as the baseline"},
        {"micro_batch", "train_micro_batch_size_per_gpu"},
        {"batch_size", "train_batch_size"},
        {"grad_acc", "gradient_accumulation_steps"},
        {"backend", "optimizer.params.comm_backend_name"},
        {"mpi_cuda_aware", "optimizer.params.cuda_aware"},
        {"grad_dtype", "fp16.enabled / bf16.enabled / communication_data_type"}};
    for (const auto& [key, there] : owned)
      if (sim.contains(key))
        r.fail(key, fmt::format("ds_config sets this ({}); change it there or leave ds_config "
                                "out",
                                there));
    for (const std::string& w : s.deepspeed->warnings)
      s.warnings.push_back(fmt::format("{}: {}", s.deepspeed->file, w));
    // The workloads' compute profiles are mixed-precision (tensor-core fp16/bf16) rates.
    if (s.deepspeed->precision == Precision::kFp32)
      s.warnings.push_back(fmt::format(
          "{}: fp16.enabled and bf16.enabled are both off, so DeepSpeed trains in fp32: the "
          "gradients are simulated as fp32, but fp32 compute is not modelled (the workload's "
          "compute is its fp16/bf16 profile, several times faster on tensor cores)",
          s.deepspeed->file));
  }

  std::set<std::string> labels;
  if (s.deepspeed) {
    // The optimizer beside its uncompressed twin, which is its baseline.
    if (s.deepspeed->baseline) {
      OptimizerEntry b;
      b.config = *s.deepspeed->baseline;
      b.label = b.config.type_name();
      s.optimizers.push_back(b);
    }
    OptimizerEntry e;
    e.config = s.deepspeed->optimizer;
    e.label = e.config.type_name();
    if (!s.optimizers.empty()) e.baseline = s.optimizers.front().label;
    s.optimizers.push_back(e);
    for (const OptimizerEntry& o : s.optimizers) labels.insert(o.label);
  }
  const auto& opts = s.deepspeed ? nlohmann::json::array() : r.array("optimizers", true);
  for (size_t i = 0; i < opts.size(); ++i) {
    const std::string f = fmt::format("{}[{}]", r.field("optimizers"), i);
    ConfigReader o(opts[i], file, f);
    OptimizerEntry e;
    o.ignore("optimizer");
    o.ignore("implementation");
    if (opts[i].contains("implementation"))
      e.implementations =
          parse_implementations(opts[i]["implementation"], file, o.field("implementation"), false);
    if (!opts[i].contains("optimizer"))
      o.fail("optimizer", "required: a DeepSpeed optimizer block");
    require_optimizer_block(opts[i]["optimizer"], file, o.field("optimizer"), "simulate.ds_config");
    e.config = parse_optimizer_config(opts[i]["optimizer"], file);
    e.label = o.string("label", e.config.type_name());
    e.baseline = o.string("baseline", "");
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

  if (s.deepspeed && !sim.contains("total_steps")) {
    r.ignore("total_steps");
    if (!s.deepspeed->total_steps)
      r.fail("total_steps",
             "required with ds_config, whose scheduler states no run length: give --steps N (or "
             "simulate.total_steps), or a scheduler with total_num_steps (WarmupDecayLR, "
             "WarmupCosineLR)");
    s.total_steps = *s.deepspeed->total_steps;
    if (s.total_steps > kMaxSimulatedSteps)
      throw InputError(s.deepspeed->file, s.deepspeed->total_steps_field,
                       std::to_string(s.total_steps),
                       fmt::format("the simulator runs at most {} steps", kMaxSimulatedSteps));
  } else {
    s.total_steps = r.integer("total_steps", 1, 1, kMaxSimulatedSteps);
  }
  for (const OptimizerEntry& e : s.optimizers)
    for (const std::string& w : phase_warnings(e.config, s.total_steps))
      s.warnings.push_back(fmt::format("optimizer '{}': {}", e.label, w));
  s.grad_dtype = s.deepspeed ? s.deepspeed->grad_dtype : parse_dtype(r, "grad_dtype", DType::kF16);
  s.overlap = r.boolean("overlap_backward", false);
  s.bucket_bytes = r.number_in("bucket_mb", 25, 0, false, 1e6, true) * 1e6;
  s.kernel_efficiency = r.number_in("kernel_efficiency", 0.85, 0, false, 1, true);
  r.ignore("kernel_bench");
  if (sim.contains("kernel_bench")) {
    if (!sim["kernel_bench"].is_string())
      r.fail("kernel_bench", "expected the path of `clbo bench kernels` JSON output");
    s.kernel_bench_file = sim["kernel_bench"].get<std::string>();
    s.kernel_bench = load_json_file_named_by(s.kernel_bench_file, file, r.field("kernel_bench"));
    KernelModel probe;
    load_kernel_bench(probe, s.kernel_bench, s.kernel_bench_file);  // validate now
  }
  // A ds_config's backend and cuda_aware were read (and checked) by the DeepSpeed reader.
  s.expand.backend = s.deepspeed ? *kBackendNames.find(s.deepspeed->comm_backend)
                                 : r.choice("backend", Backend::kNccl, kBackendNames,
                                            {Backend::kNccl, Backend::kMpi});
  s.expand.mpi_cuda_aware =
      s.deepspeed ? s.deepspeed->cuda_aware : r.boolean("mpi_cuda_aware", false);
  s.expand.allreduce = r.choice("allreduce", Algo::kAuto, kAlgoNames,
                                {Algo::kAuto, Algo::kRing, Algo::kTree, Algo::kHierarchical});
  s.expand.protocol = r.choice("protocol", Proto::kAuto, kProtoNames);
  const std::string fidelity = r.choice("fidelity", "fast", {"fast", "exact"});
  s.expand.exact = fidelity == "exact";
  s.session.aggregate = fidelity == "fast";
  s.session.max_flows_per_round =
      r.integer<int>("max_flows_per_round", s.session.max_flows_per_round, 16, kMaxRounds);
  s.expand.target_rounds = r.integer<int>("target_rounds", s.expand.target_rounds, 1, kMaxRounds);
  r.ignore("implementation");
  if (sim.contains("implementation"))
    s.implementations =
        parse_implementations(sim["implementation"], file, r.field("implementation"), true);
  s.expand.implementation = s.implementations.front();
  s.expand.launch_s = r.number_in("launch_us", s.expand.launch_s * 1e6, 0, true, 1e6, true) * 1e-6;
  s.expand.host_sync_s =
      r.number_in("host_sync_us", s.expand.host_sync_s * 1e6, 0, true, 1e6, true) * 1e-6;
  for (OptimizerEntry& e : s.optimizers)
    if (e.implementations.empty()) e.implementations = s.implementations;

  r.ignore("compute");
  if (sim.contains("compute")) {
    ConfigReader cr(sim["compute"], file, r.field("compute"));
    for (auto it = sim["compute"].begin(); it != sim["compute"].end(); ++it) {
      const std::string f = cr.field(it.key());
      cr.ignore(it.key());
      // Any GPU name: a measured profile is how a GPU without a preset gets its compute.
      const std::string g = canonical_gpu_name(it.key());
      const nlohmann::json prof =
          it.value().is_string() ? load_json_file_named_by(it.value().get<std::string>(), file, f)
                                 : it.value();
      s.compute[g] =
          parse_profile(prof, g, it.value().is_string() ? it.value().get<std::string>() : file,
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
  const int64_t def_mb = r.integer("micro_batch", 0, 1, kMaxBatch);
  const int64_t def_batch = r.integer("batch_size", 0, 1, kMaxBatch);
  const int64_t def_ga = r.integer("grad_acc", 1, 1, kMaxBatch);
  if (sim.contains("batch_size") && sim.contains("grad_acc"))
    r.fail("grad_acc", "give batch_size or grad_acc, not both");
  if (sim.contains("rows")) {
    const auto& rows = r.array("rows", true);
    if (sim.contains("clusters") || sim.contains("gpus"))
      r.fail("rows", "give rows or clusters × gpus, not both");
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string f = fmt::format("{}[{}]", r.field("rows"), i);
      ConfigReader rr(rows[i], file, f);
      RunPoint pt;
      rr.ignore("cluster");
      if (!rows[i].contains("cluster")) rr.fail("cluster", "required");
      pt.cluster = cluster_index(rows[i]["cluster"], rr.field("cluster"));
      pt.p = rr.integer<int>("gpus", 0, 0, kMaxGpus);
      check_gpu_count(s.clusters[pt.cluster], pt.p, file, rr.field("gpus"));
      if (s.deepspeed) {
        for (const char* k : {"micro_batch", "batch_size", "grad_acc"})
          if (rows[i].contains(k))
            rr.fail(k,
                    "ds_config sets the batch (train_batch_size, "
                    "train_micro_batch_size_per_gpu, gradient_accumulation_steps)");
        deepspeed_batch(*s.deepspeed, pt, fmt::format("{} = {}", rr.field("gpus"), pt.p));
      } else {
        // A row inherits the sweep's batch settings unless it states its own.
        batch_of(rr, pt, def_mb, rows[i].contains("grad_acc") ? 0 : def_batch, def_ga, file);
      }
      rr.ignore("paper");
      rr.string("paper_source", "");
      rr.string("label", "");
      // Published values to compare with: the report's (report/paper_rows.hpp).
      if (rows[i].contains("paper") && !rows[i]["paper"].is_object())
        rr.fail("paper", "expected an object of numbers");
      rr.finish();
      s.points.push_back(pt);
    }
  } else {
    const auto& clusters = r.array("clusters", true);
    const auto& gpus = r.array("gpus", true);
    for (size_t ci = 0; ci < clusters.size(); ++ci) {
      const size_t idx =
          cluster_index(clusters[ci], fmt::format("{}[{}]", r.field("clusters"), ci));
      for (size_t gi = 0; gi < gpus.size(); ++gi) {
        const std::string f = fmt::format("{}[{}]", r.field("gpus"), gi);
        RunPoint pt;
        pt.cluster = idx;
        pt.p = static_cast<int>(json_int64(gpus[gi], file, f, 0, kMaxGpus));
        check_gpu_count(s.clusters[idx], pt.p, file, f);
        if (s.deepspeed) {
          deepspeed_batch(*s.deepspeed, pt, fmt::format("{} = {}", f, pt.p));
          s.points.push_back(pt);
          continue;
        }
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
  if (def_mb < 1 && !s.deepspeed) {
    for (size_t i = 0; i < s.points.size(); ++i)
      if (s.points[i].micro_batch < 1) r.fail("micro_batch", "required (at the top or per row)");
  }
  // Checked here rather than when the point is simulated, so --check rejects them too: each
  // cluster's GPU has a compute profile, and MPI host staging has node CPUs.
  std::vector<std::string> cluster_gpus;
  for (const ClusterSpec& c : s.clusters) cluster_gpus.push_back(c.gpu_spec.name);
  // A profile for a GPU that is neither a preset nor any cluster's is a typo, not a spare.
  for (const auto& [g, prof] : s.compute)
    if (!find_gpu_preset(g) &&
        std::find(cluster_gpus.begin(), cluster_gpus.end(), g) == cluster_gpus.end())
      throw InputError(
          file, r.field("compute") + "." + g, g,
          "no cluster of this experiment has this GPU" + did_you_mean(g, cluster_gpus));
  for (const ClusterSpec& c : s.clusters) {
    require_gpu_figures(c.gpu_spec, false, c.file, "gpu");
    (void)s.profile_for(c);
  }
  if (s.expand.backend == Backend::kMpi && !s.expand.mpi_cuda_aware)
    for (const RunPoint& pt : s.points)
      if (s.clusters[pt.cluster].is_xml())
        throw InputError(file, "simulate.backend", "\"mpi\"",
                         fmt::format("host staging needs a built cluster (the XML platform of "
                                     "cluster '{}' has no node CPU); set mpi_cuda_aware or use a "
                                     "cluster preset",
                                     s.clusters[pt.cluster].name));
  r.finish();
  return s;
}

}  // namespace clbo::sim
