#include "clbo/validate/plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace clbo::validate {

namespace {

// An op whose algorithm is the benchmark's default runs in the default job; the others
// (clbo's ring allreduce, the all-to-all compressed allreduce) in the alternative job.
bool default_algo(const OpSpec& o) {
  return o.algo.empty() || o.algo == "native" || o.algo == "gather";
}

// Generous: the slowest case of a job on a loaded machine, a few times over.
double timeout_for(const ValidationSpec& s, const ClusterConfig& c, size_t ops) {
  const double bytes = static_cast<double>(c.sizes.max_bytes) * 4;  // binomial ≈ 2 log2(p) x
  const double calls = static_cast<double>(s.iters + s.warmup + 2);
  const double sizes = static_cast<double>(c.sizes.list().size());
  return 120 + 10 * static_cast<double>(ops) *
                   (calls * bytes * 8 / (c.link_Mbps * 1e6) + sizes * s.min_time_s);
}

// The ping-pong job of one launch, also its result's file name: pingpong-net, pingpong-net-2,
// ... (pingpong-host for two ranks of one host).
std::string pingpong_job_id(bool same_host, int launch) {
  return std::string(same_host ? "pingpong-host" : "pingpong-net") +
         (launch == 0 ? "" : fmt::format("-{}", launch + 1));
}

}  // namespace

std::string cluster_dir(const Tools& t, const ClusterConfig& c) {
  return t.work_dir + "/" + c.id;
}
std::string pingpong_out(const Tools& t, const ClusterConfig& c, bool same_host, int launch) {
  return cluster_dir(t, c) + "/" + pingpong_job_id(same_host, launch) + ".json";
}
std::string steps_out(const Tools& t, const ClusterConfig& c) {
  return cluster_dir(t, c) + "/steps.json";
}
std::string steps_experiment_path(const Tools& t, const ClusterConfig& c) {
  return cluster_dir(t, c) + "/steps-experiment.json";
}
std::string calibration_out(const Tools& t, const ClusterConfig& c, bool alone) {
  return cluster_dir(t, c) + (alone ? "/calibration-alone.json" : "/calibration.json");
}
std::string calibration_experiment_path(const Tools& t, const ClusterConfig& c, bool alone) {
  return cluster_dir(t, c) +
         (alone ? "/calibration-alone-experiment.json" : "/calibration-experiment.json");
}

std::vector<BenchJob> bench_jobs(const ValidationSpec& s, const ClusterConfig& c, const Tools& t) {
  BenchJob def{"bench-default", {}, cluster_dir(t, c) + "/bench-default.json"};
  BenchJob alt{"bench-alt", {}, cluster_dir(t, c) + "/bench-alt.json"};
  for (const OpSpec& o : s.ops) (default_algo(o) ? def : alt).ops.push_back(o);
  std::vector<BenchJob> jobs;
  for (BenchJob* j : {&def, &alt})
    if (!j->ops.empty()) jobs.push_back(*j);
  return jobs;
}

nlohmann::json steps_optimizer(const ValidationSpec& s, const std::string& type) {
  const int64_t f = s.steps.freeze_step;
  // Only the steps' times are compared; a small rate keeps every optimizer finite over the
  // run (0/1 Adam at 1e-3 went NaN at step 10 of 14 with its variance frozen at step 6).
  nlohmann::json params = {{"lr", 1e-4}, {"eps", 1e-6}};
  if (type == "OneBitAdam" || type == "OneBitLamb") params["freeze_step"] = f;
  if (type == "ZeroOneAdam") {
    // Phase 1 mixes variance and compressed steps (variance at 1, 2, 4, ...); phase 2 runs
    // two local steps for every sync, so that each kind is measured several times.
    params["var_freeze_step"] = f;
    params["var_update_scaler"] = 1;
    params["local_step_scaler"] = 1;
    params["local_step_clipper"] = 3;
  }
  // Every f/2 steps (at least 2): a run of a few times f steps then measures several syncs,
  // not the two that an interval of f leaves after the first step.
  if (type == "Slamb") params["local_steps"] = std::max<int64_t>(2, f / 2);
  return {{"type", type}, {"params", params}};
}

nlohmann::json steps_experiment(const ValidationSpec& s, const ClusterConfig& c) {
  nlohmann::json runs = nlohmann::json::array();
  for (const std::string& type : s.steps.optimizers)
    runs.push_back({{"label", type}, {"optimizer", steps_optimizer(s, type)}});
  return {
      {"description", fmt::format("clbo validate: whole optimizer steps on the emulated cluster {} "
                                  "(generated from {})",
                                  c.id, s.file)},
      {"model", "mlp"},
      {"workers", c.ranks()},
      {"batch_size", c.ranks() * s.steps.batch_per_worker},
      {"micro_batch", s.steps.batch_per_worker},
      {"steps", s.steps.steps},
      {"evaluate", false},  // only the step times are compared; evaluating is waiting time
      {"seeds", {1}},
      {"runs", runs}};
}

nlohmann::json calibration_experiment(const ValidationSpec& s, int ranks) {
  ClusterConfig one;
  one.id = "calibration";
  one.hosts = 1;
  one.ranks_per_host = ranks;
  nlohmann::json exp = steps_experiment(s, one);
  exp["description"] = fmt::format(
      "clbo validate: the compute of {} ranks at once on one emulated host (no network between "
      "them), for the next steps job",
      ranks);
  return exp;
}

nlohmann::json calibration_alone_experiment(const ValidationSpec& s) {
  nlohmann::json exp = calibration_experiment(s, 1);
  exp["runs"] = {{{"label", "Adam"}, {"optimizer", steps_optimizer(s, "Adam")}}};
  exp["description"] = "clbo validate: one rank alone, Adam: the gradient without CPU contention";
  return exp;
}

nlohmann::json emu_plan(const ValidationSpec& s, const Tools& t) {
  nlohmann::json clusters = nlohmann::json::array();
  for (const ClusterConfig& c : s.clusters) {
    nlohmann::json jobs = nlohmann::json::array();
    // Every pair of the cluster's ranks at once (between hosts: pairs of consecutive ranks
    // placed by node; within a host: by slot), as every rank messages in a collective.
    auto pingpong = [&](bool same_host, int launch) {
      return nlohmann::json{{"id", pingpong_job_id(same_host, launch)},
                            {"mpi", true},
                            {"np", c.ranks()},
                            {"map_by", same_host ? "slot" : "node"},
                            {"timeout_s", 120},
                            {"argv",
                             {t.clbo,
                              "bench",
                              "collectives",
                              "--backend",
                              "mpi",
                              "--collective",
                              "pingpong",
                              "-b",
                              "8",
                              "-e",
                              "8",
                              "-n",
                              "1000",
                              "-w",
                              "50",
                              "-c",
                              "1",
                              "-a",
                              "3",
                              "-T",
                              "120",
                              "-J",
                              pingpong_out(t, c, same_host, launch)}}};
    };
    for (int launch = 0; launch < kPingpongLaunches; ++launch) {
      jobs.push_back(pingpong(false, launch));
      if (c.ranks_per_host > 1) jobs.push_back(pingpong(true, launch));
    }
    for (const BenchJob& b : bench_jobs(s, c, t)) {
      std::vector<std::string> ops, algos;
      for (const OpSpec& o : b.ops) {
        if (std::find(ops.begin(), ops.end(), o.op) == ops.end()) ops.push_back(o.op);
        if (!o.algo.empty()) algos.push_back(o.algo);
      }
      nlohmann::json argv = {t.clbo, "bench", "collectives", "--backend", "mpi", "--collective",
                             fmt::format("{}", fmt::join(ops, ",")),
                             // compare.cpp reads the native half only: the staged one would
                             // double the grid's time for nothing
                             "--halves", "native"};
      if (b.id == "bench-alt")
        argv.insert(argv.end(), {"--algo", fmt::format("{}", fmt::join(algos, ","))});
      for (const std::string& a :
           {std::string("-b"), std::to_string(c.sizes.min_bytes), std::string("-e"),
            std::to_string(c.sizes.max_bytes), std::string("-f"), std::to_string(c.sizes.factor),
            std::string("-n"), std::to_string(s.iters), std::string("-w"), std::to_string(s.warmup),
            std::string("-c"), std::string("0"), std::string("-a"), std::string("3"),
            std::string("-T"), std::string("120"), std::string("-J"), b.out})
        argv.push_back(a);
      if (s.min_time_s > 0) {
        argv.push_back("--min-time");
        argv.push_back(fmt::format("{}", s.min_time_s));
      }
      jobs.push_back({{"id", b.id},
                      {"mpi", true},
                      {"np", c.ranks()},
                      {"timeout_s", timeout_for(s, c, b.ops.size())},
                      {"argv", argv}});
    }
    // The train jobs run with one thread per rank, as each rank is one worker.
    auto train = [&](const std::string& experiment, const std::string& out) {
      return nlohmann::json{t.clbo, "train", "--backend", "mpi", experiment,
                            "-o",   out,     "--threads", "1",   "--quiet"};
    };
    if (s.steps.enabled) {
      // Compute drifts with the machine's speed (seen: a fifth in the minutes between one
      // calibration before the emulation and the clusters' steps), and p ranks on C cores
      // slow each other by more than p/C (seen: 2.4-3.2x the 2-rank gradient on 4 ranks),
      // so each cluster measures its ranks' compute right before its steps, on host 0,
      // where only their compute is read (their messages cross its loopback).
      for (bool alone : {true, false})
        jobs.push_back({{"id", alone ? "calibration-alone" : "calibration"},
                        {"mpi", true},
                        {"np", alone ? 1 : c.ranks()},
                        {"one_host", true},
                        {"timeout_s", 600},
                        {"argv", train(calibration_experiment_path(t, c, alone),
                                       calibration_out(t, c, alone))}});
    }
    if (s.steps.enabled && c.steps)
      jobs.push_back({{"id", "steps"},
                      {"mpi", true},
                      {"np", c.ranks()},
                      {"timeout_s", 600},
                      {"argv", train(steps_experiment_path(t, c), steps_out(t, c))}});
    nlohmann::json probes = {{"pingpong_count", s.pingpong_count},
                             {"bulk_seconds", s.bulk_seconds}};
    if (!t.tcp_rounds.empty()) probes["tcp_rounds"] = t.tcp_rounds;
    clusters.push_back({{"id", c.id}, {"config", c.to_json()}, {"probes", probes}, {"jobs", jobs}});
  }
  return {{"schema", "clbo.emu.plan/1"},
          {"work_dir", t.work_dir},
          {"nice", s.nice},
          {"steal_retries", s.steal_retries},
          {"steal_threshold", kStealShare},
          {"tcp_congestion_control", s.tcp_congestion_control},
          {"clusters", clusters}};
}

}  // namespace clbo::validate
