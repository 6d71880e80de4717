// What `clbo validate` asks the emulation to run (emu/clbo_emu/runner.py reads it): per
// cluster, the probes and the MPI jobs, with every output file named, and the training
// experiment each cluster's step job runs.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/validate/spec.hpp"

namespace clbo::validate {

struct Tools {
  std::string clbo;      // absolute path of the clbo binary the jobs run
  std::string work_dir;  // absolute; everything the run writes lands below it
  // absolute path of clbo-tcp-rounds, the warm-round TCP probe every cluster runs ("": none,
  // and the all-pairs rounds keep the long probe's efficiency)
  std::string tcp_rounds;
};

// The bench jobs of a cluster: one per algorithm family, each sweeping its ops over the
// cluster's sizes (clbo bench collectives runs one --algo per op family at a time).
struct BenchJob {
  std::string id;           // "bench-default", "bench-alt"
  std::vector<OpSpec> ops;  // in the grid's order
  std::string out;          // the JSON result it writes
};

std::vector<BenchJob> bench_jobs(const ValidationSpec& s, const ClusterConfig& c, const Tools& t);

// The clbo train experiment of a cluster's optimizer steps: the MLP, one worker per rank,
// batch_per_worker examples each, every optimizer of the spec with short phases so that each
// of its step kinds occurs (warmup and compression; 0/1 Adam's variance, compressed, local
// and sync steps; SLAMB's plain and sync steps) at least twice.
nlohmann::json steps_experiment(const ValidationSpec& s, const ClusterConfig& c);
// The DeepSpeed block of optimizer `type` in that experiment.
nlohmann::json steps_optimizer(const ValidationSpec& s, const std::string& type);

// The compute calibration of a cluster: its ranks' compute measured with no network between
// them, all on the cluster's host 0, right before its steps job (docs/validation.md, "CPU
// contention"): the steps experiment on the cluster's p ranks at once (the compute of its
// steps, at the contention its ranks see), and Adam on one rank alone (the gradient without
// contention, against which the p ranks' slowdown of the compression kernels is measured).
nlohmann::json calibration_experiment(const ValidationSpec& s, int ranks);
nlohmann::json calibration_alone_experiment(const ValidationSpec& s);

std::string cluster_dir(const Tools& t, const ClusterConfig& c);
// The MPI ping-pong (every pair of the cluster's ranks at once) runs as kPingpongLaunches
// separate mpirun launches, and the model takes the median: a launch settles the ranks'
// placement on the cores, and two-rank launches were bimodal (6-88 us on one machine).
inline constexpr int kPingpongLaunches = 3;
// Launch `launch` (0-based) writes here: pingpong-net.json, pingpong-net-2.json, ...
std::string pingpong_out(const Tools& t, const ClusterConfig& c, bool same_host, int launch = 0);
std::string steps_out(const Tools& t, const ClusterConfig& c);
std::string steps_experiment_path(const Tools& t, const ClusterConfig& c);
std::string calibration_out(const Tools& t, const ClusterConfig& c, bool alone = false);
std::string calibration_experiment_path(const Tools& t, const ClusterConfig& c, bool alone = false);

// The whole plan (schema clbo.emu.plan/1).
nlohmann::json emu_plan(const ValidationSpec& s, const Tools& t);

}  // namespace clbo::validate
