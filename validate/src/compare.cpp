#include "clbo/validate/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "clbo/core/error.hpp"
#include "clbo/kernels/mask.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/schedule/schedule.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/expansion/expand.hpp"
#include "clbo/sim/projection.hpp"
#include "clbo/validate/model.hpp"

namespace clbo::validate {

// A calibration has a few steps per kind, and one step the OS preempted (seen: a 0/1 Adam sync
// step of 37 ms beside 7 and 9 ms) would carry a mean with it: hence medians.
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

namespace {

// clbo bench collectives' sparse op keeps the elements of random_mask(seed 0, step 1,
// k = 0.1) (bench/collectives/host_ops.cpp, the defaults validate runs it with).
size_t sparse_kept(size_t n) {
  std::vector<uint8_t> mask((n + 7) / 8, 0);
  kernels::random_mask(0, 1, 0.1, 0, n, mask.data());
  return kernels::mask_count(mask.data(), n);
}

// The schedule call a benchmark row stands for, and the options its algorithm needs.
CommCall call_of(const std::string& op, uint64_t size, int p, sim::ExpandOptions& o,
                 const std::string& algo) {
  const size_t floats = static_cast<size_t>(size / 4);
  if (op == "allreduce") {
    o.allreduce = algo == "ring" ? sim::Algo::kRing : sim::Algo::kBinomial;
    return {CollKind::kAllreduce, floats, DType::kF32, "buffer"};
  }
  if (op == "compressed") {
    o.mpi_gather = algo != "alltoall";
    return {CollKind::kCompressedAllreduce, floats, DType::kF32, "buffer"};
  }
  if (op == "sparse") {
    o.param_count = floats;
    return {CollKind::kSparseAllreduce, sparse_kept(floats), DType::kF32, "buffer"};
  }
  // alltoall: size is the whole send buffer, one block per peer; allgather: size is the
  // gathered buffer, one block per rank.
  const size_t block = floats / static_cast<size_t>(p);
  return {op == "alltoall" ? CollKind::kAlltoall : CollKind::kAllgather, block, DType::kF32,
          "buffer"};
}

std::string algo_of(const BenchJob& job, const std::string& op) {
  for (const OpSpec& o : job.ops)
    if (o.op == op) return o.algo;
  return "";
}

nlohmann::json base_case(const ClusterConfig& c) {
  return {{"hosts", c.hosts},
          {"ranks_per_host", c.ranks_per_host},
          {"rate_Mbps", c.link_Mbps},
          {"topology", sim::to_string(c.topology)},
          {"cluster", c.id},
          {"oversubscription", c.topology == sim::TopologyKind::kTwoLevel
                                   ? nlohmann::json(c.oversubscription)
                                   : nlohmann::json(nullptr)}};
}

// One kind of the machine's CPU time (/proc/stat's "steal", "idle", ...) as a share of the
// time `part` of an emulation record ran: part["cpu_split"][kind], null where that is absent
// (work folders kept before the emulation split the CPU time, jobs shorter than a tick).
nlohmann::json cpu_split_share(const nlohmann::json& part, const char* kind) {
  if (!part.is_object() || !part.contains("cpu_split")) return nullptr;
  const auto& split = part["cpu_split"];
  if (!split.is_object() || !split.contains(kind)) return nullptr;
  return split[kind];
}

// The share of the CPUs the hypervisor took (steal) while the emulation's job `job` ran.
nlohmann::json steal_share(const nlohmann::json& record, const std::string& job) {
  if (!record.contains("jobs") || !record["jobs"].contains(job)) return nullptr;
  return cpu_split_share(record["jobs"][job], "steal");
}

// One kind of CPU time while every host of the cluster streamed at once: the link probe
// whose rates the cluster's preset takes.
nlohmann::json probe_cpu_share(const nlohmann::json& record, const char* kind) {
  if (!record.contains("probes") || !record["probes"].contains("bulk_all_hosts_at_once_cpu"))
    return nullptr;
  return cpu_split_share(record["probes"]["bulk_all_hosts_at_once_cpu"], kind);
}

// The kernel's share of the CPUs (system and softirq) while every host streamed at its link's
// rate; 0 where the record has no split (folders kept before 2026-12-03).
double probe_kernel_share(const nlohmann::json& record) {
  double share = 0;
  for (const char* kind : {"system", "softirq"})
    if (const nlohmann::json v = probe_cpu_share(record, kind); v.is_number())
      share += v.get<double>();
  return share;
}

// The probe's share of each kind a case records: steal over kStealShare means every case of
// the cluster was simulated on links slower than they are; idle under kProbeIdleShare that
// the links were bound by the CPUs.
void probe_cpu_shares(nlohmann::json& k, const nlohmann::json& record) {
  k["probe_steal_share"] = probe_cpu_share(record, "steal");
  k["probe_idle_share"] = probe_cpu_share(record, "idle");
}

// compute_s: the simulated time every rank spends computing (kernels, and for steps the
// gradient and optimizer arithmetic), which the network does not set.
void finish_case(nlohmann::json& k, double measured, double simulated, double no_latency,
                 double compute_s) {
  k["measured_s"] = measured;
  k["simulated_s"] = simulated;
  k["rel_error"] = measured > 0 ? (simulated - measured) / measured : 0.0;
  const double latency = simulated > 0 ? std::max(0.0, 1 - no_latency / simulated) : 0.0;
  const double compute = simulated > 0 ? std::min(1.0, compute_s / simulated) : 0.0;
  k["simulated_latency_share"] = latency;
  k["simulated_compute_share"] = compute;
  k["bound"] = latency > kLatencyBoundShare   ? "latency"
               : compute > kComputeBoundShare ? "compute"
                                              : "bandwidth";
  k["provenance"] = {{"measured_s", "measured"},
                     {"simulated_s", "simulated"},
                     {"simulated_latency_share", "simulated"},
                     {"simulated_compute_share", "simulated"}};
}

double compute_of(const sim::Program& prog) {
  double t = 0;
  for (const auto& s : prog.segments) t += s.compute_s;
  return t;
}

// The steps of one kind that its medians read: all but its first occurrence (TCP connections
// are opened and buffers allocated there) when the kind occurs more than once.
std::vector<size_t> steady(const std::vector<size_t>& steps) {
  return {steps.begin() + (steps.size() > 1 ? 1 : 0), steps.end()};
}

template <class Value>
double median_over(const std::vector<size_t>& steps, Value value) {
  std::vector<double> v;
  for (size_t i : steps) v.push_back(value(i));
  return median(std::move(v));
}

// One clbo train run's per-step times (`timing.steps`), columns looked up by name: each
// column's slowest worker (`rows`) and, where every worker ran in its own process, each
// worker's own (`workers`). Checked once: every table has a row per step and every row a
// value per column, so a truncated or hand-edited file is an error, not a crash.
class RunTimes {
 public:
  RunTimes(const nlohmann::json& run, const std::string& where)
      : steps_(run.at("timing").at("steps")), where_(where) {
    const auto& rows = steps_.at("rows");
    n_ = rows.size();
    slowest_cols_ = columns(steps_, "timing.steps");
    for (const auto& r : rows)
      if (r.size() != slowest_cols_.size())
        bad("timing.steps.rows", "a row of " + std::to_string(r.size()) + " values");
    if (steps_.contains("workers")) {
      const auto& w = steps_["workers"];
      worker_cols_ = columns(w, "timing.steps.workers");
      if (w.at("rows").size() != n_)
        bad("timing.steps.workers.rows",
            std::to_string(w["rows"].size()) + " steps for " + std::to_string(n_));
      for (const auto& step : w["rows"]) {
        if (step.empty()) bad("timing.steps.workers.rows", "a step without workers");
        for (const auto& r : step)
          if (r.size() != worker_cols_.size())
            bad("timing.steps.workers.rows", "a row of " + std::to_string(r.size()) + " values");
      }
    }
  }
  size_t steps() const { return n_; }
  bool per_worker() const { return !worker_cols_.empty(); }
  const std::vector<std::string>& worker_columns() const { return worker_cols_; }
  double slowest(size_t step, const std::string& col) const {
    return steps_["rows"][step][index(slowest_cols_, col)].get<double>();
  }
  // The mean over the workers of f(the worker's row, column lookup).
  template <class F>
  double worker_mean(size_t step, F f) const {
    const auto& workers = steps_["workers"]["rows"][step];
    double sum = 0;
    for (const auto& w : workers)
      sum += f([&](const std::string& col) { return w[index(worker_cols_, col)].get<double>(); });
    return sum / static_cast<double>(workers.size());
  }
  // The optimizer's arithmetic in a step: its step less the communication and compression
  // kernels inside it. From each worker's own parts where the run has them (the mean over the
  // workers), else from the slowest worker's columns: those come from different workers, so
  // a worker that waited in a collective for another still computing leaves its wait in the
  // optimizer column and not in the communication column of the slowest communicator, and the
  // difference loses the arithmetic (seen: SLAMB on 8 ranks 7.5 ms, each worker's 15.5).
  double arithmetic(size_t step) const {
    auto own = [](auto part) {
      return std::max(0.0, part("optimizer_s") - part("comm_s") - part("compression_kernels_s"));
    };
    if (per_worker()) return worker_mean(step, own);
    return own([&](const std::string& col) { return slowest(step, col); });
  }

 private:
  std::vector<std::string> columns(const nlohmann::json& table, const std::string& name) const {
    if (!table.contains("columns") || !table["columns"].is_array())
      bad(name + ".columns", "missing");
    return table["columns"].get<std::vector<std::string>>();
  }
  size_t index(const std::vector<std::string>& cols, const std::string& col) const {
    for (size_t c = 0; c < cols.size(); ++c)
      if (cols[c] == col) return c;
    bad("timing.steps", "no column '" + col + "'");
  }
  [[noreturn]] void bad(const std::string& field, const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", where_, field, what));
  }

  const nlohmann::json& steps_;
  std::string where_;
  size_t n_ = 0;
  std::vector<std::string> slowest_cols_, worker_cols_;
};

// The median over a kind's steady steps of each part's mean over the workers, and of their
// arithmetic: what a typical worker spent where, beside the slowest worker's columns
// (`measured_parts`). A worker's comm_s holds its waits for the others.
nlohmann::json worker_parts(const RunTimes& times, const std::vector<size_t>& steps) {
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& col : times.worker_columns())
    out[col] = median_over(steps, [&](size_t i) {
      return times.worker_mean(i, [&](auto part) { return part(col); });
    });
  out["arithmetic_s"] = median_over(steps, [&](size_t i) { return times.arithmetic(i); });
  return out;
}

}  // namespace

JobCompute job_compute(const nlohmann::json& run, const std::vector<size_t>& steps,
                       const std::string& where) {
  const RunTimes times(run, where);
  for (size_t i : steps)
    if (i >= times.steps())
      throw Error(
          fmt::format("{}: step index {} beyond the run's {} steps", where, i, times.steps()));
  return {median_over(steps, [&](size_t i) { return times.slowest(i, "gradient_s"); }),
          median_over(steps, [&](size_t i) { return times.arithmetic(i); })};
}

namespace {

void op_cases(const ClusterMeasurements& m, const sim::ClusterSpec& preset,
              const sim::KernelModel& km, const AllPairs& all_pairs,
              std::vector<nlohmann::json>& out) {
  const ClusterConfig& c = *m.config;
  const int p = c.ranks();
  const sim::ClusterSpec bare_preset = without_latency(preset);
  std::vector<sim::Program> progs, bare_progs;
  std::vector<nlohmann::json> cases;
  for (size_t j = 0; j < m.bench.size(); ++j) {
    for (const auto& row : m.bench[j]["rows"]) {
      const std::string op = row["op"].get<std::string>();
      const std::string algo = algo_of(m.jobs[j], op);
      const uint64_t size = row["size_bytes"].get<uint64_t>();
      sim::ExpandOptions o;
      o.backend = sim::Backend::kMpiHost;
      all_pairs.apply(o);
      const CommCall call = call_of(op, size, p, o, algo);
      progs.push_back(sim::calls_program({call}, preset, p, km, o));
      // Software latencies are part of the expanded program: expand again without them.
      bare_progs.push_back(sim::calls_program({call}, bare_preset, p, km, o));
      nlohmann::json k = base_case(c);
      k["op"] = op;
      k["algo"] = algo.empty() ? nlohmann::json(nullptr) : nlohmann::json(algo);
      k["bytes"] = size;
      k["measured_algorithm"] = row["algorithm"];
      k["measured_wire_bytes"] = row["wire_bytes"];
      k["measured_s"] = row["time_us"].get<double>() * 1e-6;
      // The timed calls behind measured_s (bench --min-time; absent in older bench files).
      k["measured_iterations"] = row.contains("iterations") ? row["iterations"] : nullptr;
      k["steal_share"] = steal_share(m.record, m.jobs[j].id);
      probe_cpu_shares(k, m.record);
      // The compression kernels' share of it, every rank's mean (bench's kernel_us; absent
      // in older bench files and for ops without kernels): what the kernel model predicts,
      // apart from the network.
      k["measured_kernel_s"] = row.contains("kernel_us")
                                   ? nlohmann::json(row["kernel_us"].get<double>() * 1e-6)
                                   : nlohmann::json(nullptr);
      cases.push_back(k);
    }
  }
  if (progs.empty()) return;
  const auto full = sim::simulate_programs(preset, p, progs);
  const auto bare = sim::simulate_programs(bare_preset, p, bare_progs);
  for (size_t i = 0; i < cases.size(); ++i) {
    nlohmann::json& k = cases[i];
    k["simulated_bytes_per_rank"] = static_cast<double>(full[i].traffic_bytes) / p;
    k["simulated_program"] = nlohmann::json::array();
    for (const auto& seg : progs[i].segments) k["simulated_program"].push_back(seg.label);
    finish_case(k, k["measured_s"].get<double>(), full[i].time_s, bare[i].time_s,
                compute_of(progs[i]));
    if (!k["measured_kernel_s"].is_null()) {
      k["simulated_kernel_s"] = compute_of(progs[i]);
      k["provenance"]["measured_kernel_s"] = "measured";
      k["provenance"]["simulated_kernel_s"] = "simulated";
    }
    out.push_back(std::move(k));
  }
}

// The calibration's value for one optimizer and phase ({type: {phase: value}}), or null
// where it did not run that kind.
const nlohmann::json* of_kind(const nlohmann::json& by_kind, const std::string& type,
                              const std::string& phase) {
  if (!by_kind.is_object() || !by_kind.contains(type) || !by_kind[type].contains(phase))
    return nullptr;
  return &by_kind[type][phase];
}

void step_cases(const ValidationSpec& s, const ClusterMeasurements& m,
                const sim::ClusterSpec& preset, const sim::KernelModel& km, double factor,
                const AllPairs& all_pairs, const Calibration& cal,
                std::vector<nlohmann::json>& out) {
  const ClusterConfig& c = *m.config;
  const int p = c.ranks();
  const std::string where = "steps of " + c.id;
  auto workload = std::make_shared<sim::Workload>();
  workload->name = "mlp";
  workload->layout = ParamLayout::from_json(m.steps["resolved"]["layout"], where);
  sim::TrainingSetup setup;
  setup.cluster = preset;
  setup.p = p;
  setup.workload = workload;
  setup.kernels = km;
  setup.micro_batch = s.steps.batch_per_worker;
  setup.grad_acc = 1;
  setup.total_steps = s.steps.steps;
  setup.grad_dtype = DType::kF32;  // clbo's optimizers allreduce fp32 gradients
  setup.expand.backend = sim::Backend::kMpiHost;
  setup.expand.allreduce = sim::Algo::kRing;  // ring_allreduce_mean
  all_pairs.apply(setup.expand);
  // Between its collectives a rank keeps the parameters, the gradient and two moments live.
  setup.expand.resident_bytes_per_rank = 16.0 * static_cast<double>(workload->layout.total());
  setup.compute.gpu = "CPU";
  // The gradient is one pass, charged as forward and none as backward: each case's own
  // (Pending::gradient_s), set where the case is scored.

  struct Pending {
    nlohmann::json k;
    sim::StepKind kind;
    double optimizer_s;
    double gradient_s;            // the calibration's for this kind, x the contention factor
    nlohmann::json comm_floor_s;  // the calibration's communication, null where it has none
    JobCompute job;
  };
  // The calibration's communication is a floor only where it ran these p ranks.
  const bool has_floor = cal.ranks == p && cal.comm_floor_s.is_object();
  std::vector<Pending> pending;
  std::vector<sim::Program> progs, bare_progs;
  sim::TrainingSetup bare_setup = setup;
  bare_setup.cluster = without_latency(preset);
  for (const auto& run : m.steps["runs"]) {
    const std::string type = run["optimizer_type"].get<std::string>();
    const OptimizerConfig cfg = parse_optimizer_config(steps_optimizer(s, type), where);
    const auto kinds = sim::step_kinds(cfg, workload->layout, p, s.steps.steps, DType::kF32);
    const RunTimes times(run, where + ", run " + type);
    const auto& bytes = run["bytes_sent_per_worker_per_step"];
    for (const sim::StepKind& kind : kinds) {
      std::vector<size_t> steps;
      for (int64_t t = 1; t <= static_cast<int64_t>(times.steps()); ++t) {
        sim::StepKind probe;
        probe.schedule = schedule_at(cfg, t, workload->layout, p);
        if (probe.signature() == kind.signature()) steps.push_back(static_cast<size_t>(t - 1));
      }
      if (steps.empty()) continue;
      double measured_bytes = 0;
      for (size_t i : steps) measured_bytes += bytes[i].get<double>();
      const std::string phase = to_string(kind.schedule.phase);
      nlohmann::json k = base_case(c);
      k["op"] = "step";
      k["optimizer"] = type;
      k["phase"] = phase;
      k["algo"] = nullptr;
      k["bytes"] = static_cast<uint64_t>(measured_bytes / static_cast<double>(steps.size()));
      k["first_step"] = kind.first_step;
      k["steal_share"] = steal_share(m.record, "steps");
      probe_cpu_shares(k, m.record);
      const std::vector<size_t> used = steady(steps);
      nlohmann::json parts = nlohmann::json::object();
      for (const char* col :
           {"step_s", "gradient_s", "optimizer_s", "comm_s", "compression_kernels_s"})
        parts[col] = median_over(used, [&](size_t i) { return times.slowest(i, col); });
      k["measured_steps"] = used.size();
      k["measured_parts"] = parts;
      if (times.per_worker()) k["measured_worker_parts"] = worker_parts(times, used);
      const nlohmann::json* opt = of_kind(cal.optimizer_s, type, phase);
      const double opt_s = opt ? opt->get<double>() : 0.0;
      const nlohmann::json* floor_of_kind = of_kind(cal.comm_floor_s, type, phase);
      const nlohmann::json floor =
          has_floor && floor_of_kind ? *floor_of_kind : nlohmann::json(nullptr);
      // The kind's own gradient where the calibration ran it: a step's gradient phase ends
      // with a gather, so it holds what the step before left unequal between the workers,
      // which differs by kind (what comes before it: 0/1 Adam's last sync step follows local
      // steps, which wait for nothing). Else the gradient pooled over every step.
      const nlohmann::json* grad = of_kind(cal.gradient_kind, type, phase);
      const double grad_s = grad ? grad->get<double>() : cal.gradient_s;
      pending.push_back({k, kind, opt_s * factor, grad_s * factor, floor,
                         job_compute(run, used, where + ", run " + type)});
      progs.push_back(sim::step_program(kind, setup));
      bare_progs.push_back(sim::step_program(kind, bare_setup));
    }
  }
  if (progs.empty()) return;
  const double kernel_share = probe_kernel_share(m.record);
  const auto full = sim::simulate_programs(preset, p, progs);
  const auto bare = sim::simulate_programs(bare_setup.cluster, p, bare_progs);
  for (size_t i = 0; i < pending.size(); ++i) {
    const double fwd_per_sample_s =
        pending[i].gradient_s / static_cast<double>(s.steps.batch_per_worker);
    sim::TrainingSetup own = setup;
    own.compute.fwd_per_sample_s = fwd_per_sample_s;
    own.compute.optimizer_s = pending[i].optimizer_s;
    const sim::StepKindResult r = sim::step_result(pending[i].kind, own, progs[i], full[i]);
    sim::TrainingSetup lat0 = bare_setup;
    lat0.compute.fwd_per_sample_s = fwd_per_sample_s;
    lat0.compute.optimizer_s = pending[i].optimizer_s;
    const sim::StepKindResult r0 = sim::step_result(pending[i].kind, lat0, bare_progs[i], bare[i]);
    nlohmann::json& k = pending[i].k;
    const double floor_s =
        pending[i].comm_floor_s.is_null() ? 0.0 : pending[i].comm_floor_s.get<double>();
    // Every rank's bytes count as its host's: with several ranks per host some of them stay
    // on the host, so the share is an upper bound there (4 hosts x 2 ranks in the grid).
    const double host_bytes = r.bytes_per_gpu * static_cast<double>(c.ranks_per_host);
    const double link_Bps = c.link_Mbps * 1e6 / 8;
    const FlooredComm comm = floored_comm(
        r.comm_s, floor_s, packet_cpu_share(kernel_share, host_bytes, r.comm_s, link_Bps));
    // The floor is the CPUs' part of the communication, not the network's latency: the
    // latency-free simulation keeps it too.
    const FlooredComm comm0 = floored_comm(
        r0.comm_s, floor_s, packet_cpu_share(kernel_share, host_bytes, r0.comm_s, link_Bps));
    k["simulated_parts"] = {{"compute_s", r.fwd_s + r.bwd_s},
                            {"optimizer_s", r.optimizer_s},
                            {"compression_kernels_s", r.compression_s},
                            {"comm_s", comm.comm_s},
                            {"comm_network_s", comm.network_s},
                            {"comm_floor_s", pending[i].comm_floor_s},
                            {"comm_packet_cpu_share", comm.packet_cpu_share}};
    k["simulated_bytes_per_rank"] = r.bytes_per_gpu;
    const double measured = k["measured_parts"]["step_s"].get<double>();
    finish_case(k, measured, r.time_s + comm.extra_s, r0.time_s + comm0.extra_s,
                r.compute_s() + r.compression_s);
    k["provenance"]["simulated_parts.comm_floor_s"] =
        pending[i].comm_floor_s.is_null()
            ? "none: the calibration did not run the cluster's ranks over MPI"
            : "measured: the calibration's step over loopback less its gradient, arithmetic "
              "and kernels";
    // The same simulated communication and kernels with the steps job's own compute in
    // place of the calibration's: the model's error apart from the CPU's drift between the
    // two jobs (docs/validation.md, "Steps with the job's own compute").
    const JobCompute& job = pending[i].job;
    sim::TrainingSetup with_job = setup;
    with_job.compute.fwd_per_sample_s =
        job.gradient_s / static_cast<double>(s.steps.batch_per_worker);
    with_job.compute.optimizer_s = job.arithmetic_s;
    const double t =
        sim::step_result(pending[i].kind, with_job, progs[i], full[i]).time_s + comm.extra_s;
    k["with_job_compute"] = {{"gradient_s", job.gradient_s},
                             {"arithmetic_s", job.arithmetic_s},
                             {"simulated_s", t},
                             {"rel_error", measured > 0 ? (t - measured) / measured : 0.0}};
    k["provenance"]["with_job_compute"] =
        "simulated, with the compute measured in the steps job itself";
    out.push_back(std::move(k));
  }
}

}  // namespace

ErrorStats error_stats(std::vector<double> e) {
  ErrorStats s;
  s.n = e.size();
  if (e.empty()) return s;
  s.max = *std::max_element(e.begin(), e.end());
  s.median = median(std::move(e));
  return s;
}

nlohmann::json ErrorStats::to_json() const {
  return {{"cases", n},
          {"median_abs_rel_error", n ? nlohmann::json(median) : nlohmann::json(nullptr)},
          {"max_abs_rel_error", n ? nlohmann::json(max) : nlohmann::json(nullptr)}};
}

std::string op_family(const nlohmann::json& k) {
  const std::string op = k["op"].get<std::string>();
  if (op == "allreduce") return "dense_allreduce";
  if (op == "compressed") return "compressed_allreduce";
  return op;
}

nlohmann::json Calibration::to_json() const {
  return {{"ranks", ranks},
          {"gradient_s", gradient_s},
          {"gradient_by_kind_s", gradient_kind},
          {"optimizer_arithmetic_s", optimizer_s},
          {"comm_floor_s", comm_floor_s},
          {"measured", true},
          {"run", how},
          {"definition",
           "`ranks` workers at once (clbo train, batch_per_worker examples each), "
           "steady-state medians over the steps after the first (of each optimizer and "
           "phase): the gradient (the slowest worker's, with the gather that ends the phase), "
           "pooled over every step in gradient_s (the compute contention's) and per optimizer "
           "and phase in gradient_by_kind_s (the one each step case is simulated with), "
           "and per optimizer and phase the optimizer step less its communication and "
           "compression-kernel time (each worker's own, averaged over the workers, where every "
           "worker ran in its own process; else from the slowest worker's columns), and "
           "comm_floor_s: the slowest worker's step less the slowest gradient, that arithmetic "
           "and the slowest worker's compression kernels, the floor of the step's simulated "
           "communication"}};
}

Calibration read_calibration(const nlohmann::json& j, const std::string& file,
                             const std::string& how) {
  Calibration c;
  c.how = how;
  if (j.contains("config") && j["config"].contains("workers") &&
      j["config"]["workers"].is_number_integer())
    c.ranks = j["config"]["workers"].get<int>();
  if (!j.contains("runs") || j["runs"].empty())
    throw Error(file + ": the calibration run has no runs");
  c.optimizer_s = nlohmann::json::object();
  c.comm_floor_s = nlohmann::json::object();
  c.gradient_kind = nlohmann::json::object();
  std::vector<double> grad;
  for (const auto& run : j["runs"]) {
    const std::string type = run["optimizer_type"].get<std::string>();
    const RunTimes times(run, file + ", run " + type);
    const auto& phases = run["phase"];
    std::map<std::string, std::vector<size_t>> by_phase;
    for (size_t i = 0; i < times.steps(); ++i) {
      // The slowest worker's gradient, with the gather that ends the phase: the phase lasts
      // until the last worker's gradient is in, and that is what the next part waits for.
      if (i > 0) grad.push_back(times.slowest(i, "gradient_s"));
      by_phase[phases.at(i).get<std::string>()].push_back(i);
    }
    for (const auto& [phase, steps] : by_phase) {
      c.gradient_kind[type][phase] =
          median_over(steady(steps), [&](size_t i) { return times.slowest(i, "gradient_s"); });
      c.optimizer_s[type][phase] =
          median_over(steady(steps), [&](size_t i) { return times.arithmetic(i); });
      // Not the slowest worker's comm_s: that column is the most any worker waited, which
      // holds the wait of the quickest worker for the slowest one's arithmetic, and the
      // simulated step charges the workers' mean arithmetic beside it: counted twice.
      c.comm_floor_s[type][phase] = median_over(steady(steps), [&](size_t i) {
        return std::max(0.0, times.slowest(i, "step_s") - times.slowest(i, "gradient_s") -
                                 times.arithmetic(i) - times.slowest(i, "compression_kernels_s"));
      });
    }
  }
  c.gradient_s = median(std::move(grad));
  return c;
}

FlooredComm floored_comm(double network_s, double floor_s, double packet_cpu_share) {
  FlooredComm c;
  c.network_s = network_s;
  c.floor_s = std::max(0.0, floor_s);
  c.packet_cpu_share = std::clamp(packet_cpu_share, 0.0, 1.0);
  // The CPUs' part gets the CPU time the packets leave during the wire time; the rest of it
  // comes after.
  c.extra_s = std::max(0.0, c.floor_s - network_s * (1 - c.packet_cpu_share));
  c.comm_s = network_s + c.extra_s;
  return c;
}

double packet_cpu_share(double probe_kernel_share, double bytes_per_host, double network_s,
                        double link_Bps) {
  if (!(network_s > 0) || !(link_Bps > 0) || !(probe_kernel_share > 0)) return 0;
  return std::min(1.0, probe_kernel_share * std::min(1.0, bytes_per_host / network_s / link_Bps));
}

std::vector<nlohmann::json> compare_cluster(const ValidationSpec& s, const ClusterMeasurements& m,
                                            const sim::ClusterSpec& preset,
                                            const sim::KernelModel& km, double calibration_factor,
                                            const AllPairs& all_pairs, const Calibration* cal) {
  std::vector<nlohmann::json> out;
  op_cases(m, preset, km, all_pairs, out);
  if (!m.steps.is_null() && cal)
    step_cases(s, m, preset, km, calibration_factor, all_pairs, *cal, out);
  return out;
}

nlohmann::json summarize(const std::vector<nlohmann::json>& cases) {
  std::vector<double> bw, lat, cpu, steps, steps_job;
  std::map<std::string, std::vector<double>> by_family_bw, by_family_lat, by_family_cpu;
  std::map<std::string, std::vector<double>> kernel_errors;  // signed, any bound
  int64_t stolen = 0;
  nlohmann::json max_steal = nullptr;
  std::set<std::string> stolen_clusters, stolen_probes, cpu_bound_links;
  for (const auto& k : cases) {
    // A CPU share the case recorded; NaN (never over or under a threshold) where it has none.
    auto share = [&](const char* key) {
      return k.contains(key) && k[key].is_number() ? k[key].get<double>()
                                                   : std::numeric_limits<double>::quiet_NaN();
    };
    if (share("probe_steal_share") > kStealShare)
      stolen_probes.insert(k["cluster"].get<std::string>());
    if (share("probe_idle_share") < kProbeIdleShare)
      cpu_bound_links.insert(k["cluster"].get<std::string>());
    if (const double sh = share("steal_share"); !std::isnan(sh)) {
      if (max_steal.is_null() || sh > max_steal.get<double>()) max_steal = sh;
      if (sh > kStealShare) {
        ++stolen;
        stolen_clusters.insert(k["cluster"].get<std::string>());
      }
    }
    const double e = std::fabs(k["rel_error"].get<double>());
    if (k.contains("simulated_kernel_s") && k["measured_kernel_s"].get<double>() > 0)
      kernel_errors[op_family(k)].push_back(
          k["simulated_kernel_s"].get<double>() / k["measured_kernel_s"].get<double>() - 1);
    if (k["op"] == "step") {
      steps.push_back(e);
      if (k.contains("with_job_compute"))
        steps_job.push_back(std::fabs(k["with_job_compute"]["rel_error"].get<double>()));
      continue;
    }
    const std::string bound = k["bound"].get<std::string>();
    (bound == "latency" ? lat : bound == "compute" ? cpu : bw).push_back(e);
    (bound == "latency"   ? by_family_lat
     : bound == "compute" ? by_family_cpu
                          : by_family_bw)[op_family(k)]
        .push_back(e);
  }
  const ErrorStats b = error_stats(bw), l = error_stats(lat), cb = error_stats(cpu),
                   st = error_stats(steps);
  nlohmann::json fam = nlohmann::json::object();
  for (const auto& [name, v] : by_family_bw)
    fam[name]["bandwidth_bound"] = error_stats(v).to_json();
  for (const auto& [name, v] : by_family_lat) fam[name]["latency_bound"] = error_stats(v).to_json();
  for (const auto& [name, v] : by_family_cpu) fam[name]["compute_bound"] = error_stats(v).to_json();
  auto within = [](const std::vector<double>& v, double bound) {
    return static_cast<int64_t>(
        std::count_if(v.begin(), v.end(), [&](double e) { return e <= bound; }));
  };
  // The kernel model inside the collectives, apart from the network: per op family, every
  // case whose benchmark measured its kernels' time.
  nlohmann::json kernels = nlohmann::json::object();
  for (const auto& [name, v] : kernel_errors) {
    std::vector<double> abs_v;
    for (double e : v) abs_v.push_back(std::fabs(e));
    kernels[name] = error_stats(abs_v).to_json();
    kernels[name]["median_rel_error"] = median(v);
  }
  const ErrorStats dense = error_stats(by_family_bw["dense_allreduce"]);
  const ErrorStats comp = error_stats(by_family_bw["compressed_allreduce"]);
  auto meets = [](const ErrorStats& x, double med, double mx) {
    return x.n > 0 && x.median <= med && x.max <= mx;
  };
  nlohmann::json target = {
      {"definition",
       "bandwidth-bound cases: median |rel_error| <= 0.10 and max <= 0.20 for the dense and "
       "the compressed allreduce alike; optimizer steps within +-0.15"},
      {"dense_allreduce_met", meets(dense, 0.10, 0.20)},
      {"compressed_allreduce_met", meets(comp, 0.10, 0.20)},
      {"steps_met", st.n > 0 && st.max <= 0.15}};
  // The steps simulated again with the steps job's own compute (results since 2026-12-06).
  nlohmann::json with_job = nullptr;
  if (!steps_job.empty())
    with_job = {{"definition",
                 "the step cases simulated again with the compute the steps job itself measured "
                 "(each kind's median gradient and optimizer arithmetic) in place of the "
                 "calibration's: the model's error apart from the CPU's drift between the "
                 "calibration and the steps job; not the target's measure"},
                {"stats", error_stats(steps_job).to_json()},
                {"within_15pct", within(steps_job, 0.15)}};
  return {{"median_abs_rel_error", b.n ? nlohmann::json(b.median) : nlohmann::json(nullptr)},
          {"max_abs_rel_error", b.n ? nlohmann::json(b.max) : nlohmann::json(nullptr)},
          {"bandwidth_bound", b.to_json()},
          {"bandwidth_bound_within_10pct", within(bw, 0.10)},
          {"latency_bound", l.to_json()},
          {"latency_bound_within_10pct", within(lat, 0.10)},
          {"compute_bound", cb.to_json()},
          {"compute_bound_share_threshold", kComputeBoundShare},
          {"by_op", fam},
          {"kernels",
           {{"definition",
             "per op family, over every case whose benchmark measured its compression "
             "kernels' time (bench kernel_us, every rank's mean per call): rel_error of "
             "simulated_kernel_s against measured_kernel_s, whatever the case's bound"},
            {"by_op", kernels}}},
          {"steal",
           {{"definition",
             "the share of the machine's CPUs the hypervisor took (/proc/stat steal) during "
             "the job that measured a case; over the threshold the case measured a slower "
             "machine than the one its cluster's probes and kernel rates describe. "
             "probe_clusters_over: the clusters whose link probe (every host streaming at "
             "once) ran with steal over the threshold, so that every case of theirs was "
             "simulated on links slower than they are"},
            {"threshold", kStealShare},
            {"cases_over", stolen},
            {"max_share", max_steal},
            {"clusters_over", stolen_clusters},
            {"probe_clusters_over", stolen_probes}}},
          {"network_cpu",
           {{"definition",
             "the clusters whose CPUs were idle less than idle_threshold of the time while "
             "every host streamed at its link's rate (the link probe): their links are bound "
             "by the machine's packet processing, which the simulator does not model, so their "
             "cases' errors test the CPU more than the network model"},
            {"idle_threshold", kProbeIdleShare},
            {"cpu_bound_clusters", cpu_bound_links}}},
          {"steps", st.to_json()},
          {"steps_within_15pct", within(steps, 0.15)},
          {"steps_with_job_compute", with_job},
          {"latency_bound_share_threshold", kLatencyBoundShare},
          {"target", target}};
}

std::string cases_table(const std::vector<nlohmann::json>& cases, const nlohmann::json& summary) {
  std::string t = fmt::format("{:<26} {:<22} {:>10} {:>12} {:>12} {:>8}  {}\n", "cluster", "case",
                              "bytes", "measured_s", "simulated_s", "error", "bound");
  for (const auto& k : cases) {
    std::string name = k["op"].get<std::string>();
    if (name == "step")
      name = fmt::format("step {} {}", k["optimizer"].get<std::string>(),
                         k["phase"].get<std::string>());
    else if (!k["algo"].is_null())
      name += ":" + k["algo"].get<std::string>();
    t += fmt::format("{:<26} {:<22} {:>10} {:>12.6f} {:>12.6f} {:>+7.1f}%  {}\n",
                     k["cluster"].get<std::string>(), name, k["bytes"].get<uint64_t>(),
                     k["measured_s"].get<double>(), k["simulated_s"].get<double>(),
                     100 * k["rel_error"].get<double>(), k["bound"].get<std::string>());
  }
  auto pct = [](const nlohmann::json& v) {
    return v.is_null() ? std::string("-") : fmt::format("{:.1f}%", 100 * v.get<double>());
  };
  const auto& b = summary["bandwidth_bound"];
  const auto& l = summary["latency_bound"];
  const auto& c = summary["compute_bound"];
  const auto& s = summary["steps"];
  auto line = [&](const char* name, const nlohmann::json& x) {
    return fmt::format("{}: {} cases, median |error| {}, max {}", name, x["cases"].get<int64_t>(),
                       pct(x["median_abs_rel_error"]), pct(x["max_abs_rel_error"]));
  };
  t += line("bandwidth-bound", b) + "; " + line("latency-bound", l) + "; " +
       line("compute-bound", c) + "; " + line("steps", s);
  if (summary.contains("steps_with_job_compute") && !summary["steps_with_job_compute"].is_null())
    t +=
        "; " + line("steps with the job's own compute", summary["steps_with_job_compute"]["stats"]);
  t += "\n";
  return t;
}

}  // namespace clbo::validate
