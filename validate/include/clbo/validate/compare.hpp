// Measured beside simulated: every benchmark row and every optimizer step kind of one
// emulated cluster becomes a case with the measured time, the simulated time on the
// generated preset (model.hpp) and the relative error; the summary gathers the errors of
// the bandwidth-bound cases (the target) apart from the latency-bound ones.
//
// A case is latency-bound when latency makes up more than 20% of its simulated time: the
// same program simulated without any latency (model.hpp, without_latency) takes less than
// 80% of the full simulation's time; else compute-bound when computing is over half of it;
// else bandwidth-bound (its time is the bytes on the busiest links).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/sim/cluster.hpp"
#include "clbo/sim/kernel_model.hpp"
#include "clbo/sim/workload.hpp"
#include "clbo/validate/model.hpp"
#include "clbo/validate/plan.hpp"
#include "clbo/validate/spec.hpp"

namespace clbo::validate {

inline constexpr double kLatencyBoundShare = 0.2;
// Else compute-bound when the ranks' computing (compression kernels; for steps also the
// gradient and the optimizer's arithmetic) is over half of the simulated time: then the CPU
// contention model, not the network's, sets the time.
inline constexpr double kComputeBoundShare = 0.5;

// The median of v, 0 for no values: the statistic of the summaries, the calibrations, the
// measured steps and the streaming contention (kernel_contention.hpp).
double median(std::vector<double> v);

// How many |relative errors|, their median and their max (0 for none): the summaries' unit,
// written as {cases, median_abs_rel_error, max_abs_rel_error} (null statistics for none).
struct ErrorStats {
  size_t n = 0;
  double median = 0, max = 0;
  nlohmann::json to_json() const;
};
ErrorStats error_stats(std::vector<double> abs_errors);

// The op family a case is summarised under: dense_allreduce, compressed_allreduce, or the op
// itself (allgather, alltoall, sparse, step).
std::string op_family(const nlohmann::json& case_json);

// Everything measured on one cluster, as read back from the run.
struct ClusterMeasurements {
  const ClusterConfig* config = nullptr;
  nlohmann::json record;              // the emulation's record (probes, jobs, load)
  std::vector<nlohmann::json> bench;  // clbo bench collectives results, one per BenchJob
  std::vector<BenchJob> jobs;         // which ops and algorithms each ran
  nlohmann::json steps;               // clbo train --backend mpi result, or null
};

// Compute of a worker while `ranks` workers compute at once, from a calibration run (clbo
// train): the gradient of batch_per_worker examples (pooled over every step, and per optimizer
// and phase: a step's gradient ends with the loss gather, so it holds what the step before
// left unequal between the workers, which differs by kind), and per optimizer and phase the
// optimizer's arithmetic (its step less communication and compression kernels, each worker's
// own, averaged over the workers, where the run timed every worker), each the median over the
// steps after the first. `how`: which run measured it, for the results.
// comm_floor_s: per optimizer and phase, the same median of the slowest worker's step less
// the parts the simulator charges apart (the slowest worker's gradient and kernels, the
// workers' arithmetic as above): the communication that makes a simulated step with no wire
// time the calibration's own. Its ranks talk over loopback, so that is what the step's
// collectives cost the CPUs (software, scheduling on shared cores, waits for ranks still
// computing): the floor of the step's communication on the cluster.
struct Calibration {
  int ranks = 1;                 // how many computed at once (the run's workers)
  double gradient_s = 0;         // pooled over every step after the first of every run
  nlohmann::json gradient_kind;  // {type: {phase: seconds}}: the same, per optimizer and phase
  nlohmann::json optimizer_s;    // {type: {phase: seconds}}
  nlohmann::json comm_floor_s;   // {type: {phase: seconds}}; absent kinds have no floor
  std::string how;
  nlohmann::json to_json() const;
};

// A step's simulated communication with the CPUs' part of it (`floor_s`, the calibration's
// floor, 0 for none): the network model charges the messages' wire and per-message software
// time, not the CPUs' part that the same ranks on the same cores pay over loopback too
// (docs/validation.md, "The collectives' CPU floor"). That part runs beside the wire time
// only on the CPU time the kernel's packet processing leaves: with `packet_cpu_share` of the
// CPUs busy moving the step's packets, the communication takes
//   comm_s = network_s + max(0, floor_s - network_s * (1 - packet_cpu_share)),
// the wire time or the CPUs' work over the cores, whichever is longer; with no packet
// processing that is max(network_s, floor_s), the floor. network_s: the simulator's; comm_s:
// the step's; extra_s: what the CPUs' part adds to the simulated step.
struct FlooredComm {
  double network_s = 0, floor_s = 0, packet_cpu_share = 0, comm_s = 0, extra_s = 0;
};
FlooredComm floored_comm(double network_s, double floor_s, double packet_cpu_share = 0);

// The share of the CPUs the kernel's packet processing takes while a step moves
// `bytes_per_host` over `network_s` on links of `link_Bps`: the link probe's kernel share
// (`probe_kernel_share`, system and softirq while every host streamed at its link's rate)
// scaled by how near that rate the step's own bytes run, at most 1; 0 for no time.
double packet_cpu_share(double probe_kernel_share, double bytes_per_host, double network_s,
                        double link_Bps);
Calibration read_calibration(const nlohmann::json& train_result, const std::string& file,
                             const std::string& how);

// What one kind of step computed in the steps job itself, in the calibration's terms: the
// medians over `steps` (indices into the run's timing.steps) of the slowest worker's gradient
// (with the gather that ends the phase) and of the optimizer's arithmetic (its step less its
// communication and compression kernels; each worker's own, averaged, where the run timed
// every worker). Step cases simulate with it beside the calibration (`with_job_compute`).
struct JobCompute {
  double gradient_s = 0, arithmetic_s = 0;
};
JobCompute job_compute(const nlohmann::json& run, const std::vector<size_t>& steps,
                       const std::string& where);

// The cases of one cluster: op cases for every benchmark row, step cases for every step kind
// of every optimizer (when steps ran). Simulates on `preset` with the kernel model `km`
// (contention already applied); the calibration's compute is multiplied by
// `calibration_factor` (1 when it ran on the cluster's own ranks).
// all_pairs: the measured efficiency of concurrent TCP flows (model.hpp, all_pairs_model), for
// every all-pair exchange.
std::vector<nlohmann::json> compare_cluster(const ValidationSpec& s, const ClusterMeasurements& m,
                                            const sim::ClusterSpec& preset,
                                            const sim::KernelModel& km, double calibration_factor,
                                            const AllPairs& all_pairs,
                                            const Calibration* calibration);

// median and max |rel_error| of the bandwidth-bound cases (overall, and per op family), of
// the latency-bound ones, and of the step cases; with the targets docs/validation.md states
// (bandwidth-bound: median ≤ 10%, max ≤ 20%; steps within ±15%).
nlohmann::json summarize(const std::vector<nlohmann::json>& cases);

// The plain-text table printed at the end of a run.
std::string cases_table(const std::vector<nlohmann::json>& cases, const nlohmann::json& summary);

}  // namespace clbo::validate
