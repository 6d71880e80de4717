// `clbo validate` experiments (experiments/validation/*.json): a grid of emulated clusters
// × collective ops × sizes, and optionally the six optimizers' whole steps, each measured on
// an emulated TCP cluster (emu/) and simulated on the cluster preset generated from that
// emulation's parameters and measured latency and rate (docs/validation.md).
//
//   {"name": ..., "description": ...,
//    "clusters": [{"topology": "single_switch"|"two_level", "hosts": 4 | [2, 4, 8],
//                  "ranks_per_host": 1 | [1, 2], "link_Mbps": 200 | [100, 400],
//                  "hosts_per_leaf": 2, "oversubscription": 2 | [1, 2],   (two_level)
//                  "sizes": {...}, "steps": true}],     (per entry: optional overrides)
//    "ops": ["allreduce:native", "allreduce:ring", "compressed:gather",
//            "compressed:alltoall", "allgather", "alltoall", "sparse"],
//    "sizes": {"min": "64K", "max": "16M", "factor": 16},
//    "bench": {"iters": 2, "warmup": 1, "min_time_s": 0.1},
//    "steps": {"optimizers": ["Adam", "Lamb", ...], "steps": 10, "batch_per_worker": 256},
//    "probes": {"pingpong_count": 1000, "bulk_seconds": 1.5},
//    "nice": -10,                         (the emulation's priority, emu/clbo_emu/runner.py)
//    "steal_retries": 0,                  (measure a cluster again, up to this many times,
//                                          while the hypervisor takes over 5% of the CPUs
//                                          during one of its jobs)
//    "tcp_congestion_control": "reno"}    (the emulated hosts' TCP, set in their namespaces;
//                                          one the machine allows in a namespace)
//
// A list in a cluster entry expands into one cluster per value (the product over the
// entry's lists). Every field is checked before anything starts: an unknown op or
// topology, a grid the machine cannot host (more ranks or memory than it has, rates htb
// cannot shape here) is an InputError naming the field and the value.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/sim/cluster.hpp"

namespace clbo::validate {

struct Sizes {
  uint64_t min_bytes = 65536, max_bytes = 16u << 20;
  uint64_t factor = 16;
  std::vector<uint64_t> list() const;  // min, min·f, ... ≤ max
};

struct ClusterConfig {
  std::string id;  // "single_switch-h4-r1-200M", unique in the grid
  sim::TopologyKind topology = sim::TopologyKind::kSingleSwitch;  // or kTwoLevel
  int hosts = 2, ranks_per_host = 1;
  double link_Mbps = 100;
  int hosts_per_leaf = 0;       // two_level
  double oversubscription = 1;  // two_level: leaf hosts × link / uplink
  double uplink_Mbps = 0;       // two_level
  Sizes sizes;
  bool steps = true;
  std::string where;  // "clusters[1]" for errors and provenance
  int ranks() const { return hosts * ranks_per_host; }
  nlohmann::json to_json() const;  // what the emulation takes (emu/clbo_emu/runner.py)
};

// One collective as the benchmark runs it: op name and MPI algorithm ("" when the op has
// no choice).
struct OpSpec {
  std::string op, algo;
  std::string name() const { return algo.empty() ? op : op + ":" + algo; }
};

struct StepsSpec {
  bool enabled = false;
  std::vector<std::string> optimizers;  // DeepSpeed type names
  int64_t steps = 10;
  int64_t batch_per_worker = 256;
  int64_t freeze_step = 4;  // 1-bit Adam/LAMB freeze_step, 0/1 Adam var_freeze_step
};

struct ValidationSpec {
  std::string file, name, description;
  nlohmann::json config;  // as read
  std::vector<ClusterConfig> clusters;
  std::vector<OpSpec> ops;
  int64_t iters = 2, warmup = 1;
  // `clbo bench collectives --min-time`: sizes whose `iters` calls take less get more calls
  // (0: exactly `iters`).
  double min_time_s = 0;
  StepsSpec steps;
  int pingpong_count = 1000;
  double bulk_seconds = 1.5;
  int nice = -10;
  // A cluster during one of whose jobs the hypervisor took over 5% of the CPUs (steal) is
  // measured again, up to this many times; every attempt's CPU splits stay in its record.
  int steal_retries = 0;
  // The TCP congestion control every emulated host runs. Reno by default: a loss-based TCP,
  // whose flows share a link as the simulator's TCP model does (docs/validation.md, "TCP
  // congestion control"); a new namespace would inherit the machine's own (bbr on some).
  std::string tcp_congestion_control = "reno";
};

// A case is measured on a disturbed machine when the hypervisor took more than this share of
// the CPUs (/proc/stat's steal) during the job that measured it: the times are a slower
// machine's than the one the cluster's probes and kernel rates describe (summary.steal; the
// emulation measures such a cluster again when the grid's steal_retries allows).
inline constexpr double kStealShare = 0.05;

// A cluster's links are bound by the machine's CPUs, not by their shaping, when the CPUs were
// idle less than this share of the time while every host streamed at its link's rate (the
// probe bulk_all_hosts_at_once): the kernel's packet processing then sets what TCP and MPI
// get, and the cluster's errors test the CPU more than the network model (summary.network_cpu;
// docs/validation.md, "Which clusters"). 8 hosts at 200 Mbit/s left 42-64% idle on the
// morning machine of 2026-12-06 and 7-17% on the evening's.
inline constexpr double kProbeIdleShare = 0.20;

const std::vector<std::string>& op_names();  // "allreduce:native", ...

// The memory the kernel says is available now (MemAvailable), in bytes; 0 when unknown.
double available_memory();

// Parses and checks everything, including what this machine can host (cpus and memory
// as given; the defaults read the machine).
ValidationSpec parse_validation_spec(const nlohmann::json& j, const std::string& file, int cpus = 0,
                                     double mem_available_bytes = 0);

// The congestion controls a network namespace may set on this machine
// (net.ipv4.tcp_allowed_congestion_control); empty when the kernel does not say.
std::vector<std::string> allowed_congestion_controls();

ValidationSpec load_validation_spec(const std::string& path);

// A grid's JSON less its description, which says what the grid is for and measures nothing:
// two runs with equal measured grids measured the same cases (--resimulate, --repeatability).
nlohmann::json measured_grid(nlohmann::json config);

// "experiments/validation/X.json" -> "results/validation/X.json".
std::string default_results_path(const std::string& spec_path);

}  // namespace clbo::validate
