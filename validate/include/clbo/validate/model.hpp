// The simulated side of an emulated cluster, built only from the emulation's parameters
// and the run's own probes (never from the collective timings it is compared with):
//   links      the TCP ping-pong and bulk probes (emu/clbo_emu/probe.py) and the MPI
//              ping-pong (clbo bench collectives --collective pingpong) of the same cluster;
//   preset     a clbo cluster (sim/cluster.hpp) with one "node" per emulated host and one
//              "GPU" per rank: NIC rate = link rate × the achieved fraction, latencies
//              split into the TCP path (links) and MPI's own per-message cost (software
//              latency), uplinks at their achieved rate;
//   CPU        the hosts share this machine's CPUs: with p ranks on C cores every rank's
//              compute (gradient, optimizer, compression kernels) runs slower than alone
//              when all compute at once, which data-parallel ranks do: by the factor the run
//              measured, else by p/C (docs/validation.md, "CPU contention").
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "clbo/sim/cluster.hpp"
#include "clbo/sim/expansion/options.hpp"
#include "clbo/sim/kernel_model.hpp"
#include "clbo/sim/workload.hpp"
#include "clbo/validate/spec.hpp"

namespace clbo::validate {

struct Links {
  double tcp_half_rtt_s = 0;      // between two hosts (median)
  double mpi_half_rtt_s = 0;      // 8-byte MPI messages between hosts (median of launches)
  int mpi_probe_ranks = 2;        // ranks of that ping-pong, every pair at once
  double tcp_lo_half_rtt_s = -1;  // within a host (ranks_per_host > 1), loopback; -1 = none
  double mpi_lo_half_rtt_s = -1;
  double single_flow_Mbps = 0;  // one bulk flow, steady state
  double all_at_once_Mbps = 0;  // mean per flow when every host sends to the next at once
  double uplink_Mbps = -1;      // leaf 0's hosts through the uplink at once, together
  std::string uplink_source =
      "uplink: measured";     // how uplink_Mbps was measured (the preset's provenance)
  double loopback_Mbps = -1;  // one bulk flow over a host's loopback
  // TCP's own all-to-all (probe.py alltoall): the slowest host's time, median of the
  // repeats, for bytes_per_pair to every other host; -1 = not measured.
  double tcp_alltoall_s = -1;
  double tcp_alltoall_bytes_per_pair = 0;
  // The same exchange on warm connections in rounds of a few sizes (clbo-tcp-rounds): per
  // size, ascending, the median round on the slowest host, leaving out each size's first
  // round and any round some host began late (over 1 ms and 5% of its time; a size with no
  // round left is left out, with a note). The first size is an empty
  // round (8 bytes): what a round costs without bytes to carry. Empty when not measured
  // (work folders kept before 2026-12-06).
  struct WarmRound {
    double bytes_per_pair = 0;
    double seconds = 0;
  };
  std::vector<WarmRound> warm_rounds;
  // The payload of the largest packet TCP hands htb (gso_max_segs frames of MSS bytes; the
  // emulation's shaping record), 0 when not recorded.
  double packet_bytes = 0;
  // What the reader left out and why (one sentence each, naming the cluster); the run warns.
  std::vector<std::string> notes;
  nlohmann::json to_json() const;
};

// The fraction of the fluid rate concurrent TCP flows reached in the Python all-to-all probe
// (probe.py alltoall: work folders kept before 2026-12-07, or a run without clbo-tcp-rounds):
// the probe's pattern (one flow between every pair of hosts) simulated on the preset without
// latency, over its measured time, in [0.3, 1]; 1 when not measured. Simulated, so an
// oversubscribed uplink's share is the model's, not the probe's to explain.
double all_pairs_efficiency(const sim::ClusterSpec& preset, const ClusterConfig& c, const Links& l);

// The all-pairs efficiency the simulation of a cluster uses, by size where the warm rounds
// were measured. A warm round of b bytes per pair: the probe's pattern simulated on the
// preset without latency, over its measured time less the empty round's (the model charges
// latencies apart), in [0.3, 1]; 1 at one packet per pair begins the list (a flow of one
// packet has no start-up or uneven progress to lose time to, only the fluid sharing of the
// links), and the long burst ends it: since 2026-12-07 a warm round of half a second's worth
// at the rate, before that the Python probe's value at its own size. `efficiency` is the
// list's last (the largest size measured), all_pairs_efficiency where there is no list.
struct AllPairs {
  double efficiency = 1.0;
  std::vector<std::pair<double, double>> by_bytes;  // (bytes per pair, efficiency), ascending
  void apply(sim::ExpandOptions& o) const;
  nlohmann::json to_json() const;
};
AllPairs all_pairs_model(const sim::ClusterSpec& preset, const ClusterConfig& c, const Links& l);

// From the emulation's record of one cluster (clbo.emu.measured/1) and the MPI ping-pong
// results (clbo bench collectives JSON, one per launch; the MPI latencies are the median over
// the launches; same_host may be empty).
Links read_links(const nlohmann::json& record, const std::vector<nlohmann::json>& pingpong_net,
                 const std::vector<nlohmann::json>& pingpong_host, const std::string& where);

// The cluster preset JSON (parse_cluster accepts it; every section says where its numbers
// come from) and the parsed spec. `contention` stretches MPI's per-message software latency
// as it stretches compute: that latency is CPU time (matching, copies, system calls), and in
// a collective's rounds every rank needs the CPU at the same moment. It is the CPU
// contention of the cluster's ranks over that of the ping-pong's (1 when the ping-pong ran
// on all of them, every pair at once; p/C for a two-rank ping-pong).
nlohmann::json cluster_preset(const ClusterConfig& c, const Links& l, double contention);
sim::ClusterSpec cluster_spec(const ClusterConfig& c, const Links& l, double contention);
// The same cluster without any latency (link, switch and software latencies all 0): the
// bandwidth-and-compute-only time that classifies a case as bandwidth- or latency-bound.
sim::ClusterSpec without_latency(sim::ClusterSpec c);

// The CPUs the emulated ranks share (online processors, at least 1): the calibration runs one
// worker per CPU and cpu_contention divides by the same count, so both read it here.
int machine_cpus();

// What else about the measuring machine sets the emulation's latencies and rates, read from
// /proc and /sys (null where absent): `kernel` (its release), `cpu_model`, `cpuidle_driver`
// and `guest_halt_poll_ns` (a guest's halt-polling: with none, every wake-up of an idle vCPU
// goes through the hypervisor, which set the namespaces' round trips of 2026-12-06 19:57 at
// 4-10 times the runs' before).
nlohmann::json machine_facts();

// p ranks sharing `cpus` cores: the factor their concurrent compute is slowed by.
double cpu_contention(int ranks, int cpus);

// The compression kernels' rates from `clbo bench kernels --cpu` JSON measured in the same
// run (one rank alone). The rates from memory (and the copy bandwidth, which stands in for
// the roofline of any kernel the file lacks) are slowed by `streaming_contention`, the ranks
// sharing memory bandwidth and cores (kernel_contention.hpp); the in-cache rates and the
// compute-bound mask draw by `contention`, the ranks sharing cores. The cache model is on,
// shared by all `ranks` (the emulated hosts are one machine): a call whose ranks' buffers fit
// in the cache runs at the in-cache rates (sim::KernelModel::kernel_s).
sim::KernelModel kernel_model(const nlohmann::json& kernel_bench, const std::string& file,
                              double contention, double streaming_contention, int ranks);

}  // namespace clbo::validate
