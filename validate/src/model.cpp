#include "clbo/validate/model.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "clbo/core/error.hpp"
#include "clbo/sim/execution.hpp"
#include "clbo/sim/program.hpp"

namespace clbo::validate {

namespace {

const nlohmann::json& at(const nlohmann::json& j, const std::string& key,
                         const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw Error(fmt::format("{}: the emulation's record lacks '{}'", where, key));
  return j[key];
}

// A warm round that some host began late is left out (Links::warm_rounds) when its lateness,
// which its time counts, is over both of these: a millisecond, and this share of its time
// (on 8 hosts the 256 KiB rounds of 83 ms began 0.7-2.4 ms late on the slowest-waking host).
constexpr double kLateRoundS = 1e-3;
constexpr double kLateRoundShare = 0.05;

// Below this many bytes per pair a warm round is the empty one (the probe's 8 bytes).
constexpr double kEmptyRoundBytes = 64;

double steady(const nlohmann::json& bulk, const std::string& where) {
  return at(bulk, "steady_rate_Mbps", where).get<double>();
}

// The 8-byte row of a clbo bench collectives --collective pingpong result: one-way time, seconds.
double pingpong_s(const nlohmann::json& bench, const std::string& where) {
  for (const auto& row : at(bench, "rows", where))
    if (row.value("op", "") == "pingpong") return row["time_us"].get<double>() * 1e-6;
  throw Error(where + ": the MPI ping-pong result has no pingpong row");
}

// The middle value of a probe's repeats (the upper one of an even count); v not empty.
double upper_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median one-way time over the launches.
double median_pingpong_s(const std::vector<nlohmann::json>& launches, const std::string& where) {
  if (launches.empty()) throw Error(where + ": no MPI ping-pong result");
  std::vector<double> t;
  for (const auto& b : launches) t.push_back(pingpong_s(b, where));
  return upper_median(std::move(t));
}

nlohmann::json warm_rounds_json(const std::vector<Links::WarmRound>& rounds) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rounds)
    out.push_back({{"bytes_per_pair", r.bytes_per_pair}, {"median_s", r.seconds}});
  return out;
}

}  // namespace

nlohmann::json Links::to_json() const {
  auto opt = [](double v, double scale) {
    return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v * scale);
  };
  return {{"tcp_half_rtt_us", tcp_half_rtt_s * 1e6},
          {"mpi_half_rtt_us", mpi_half_rtt_s * 1e6},
          {"mpi_pingpong_ranks", mpi_probe_ranks},
          {"tcp_loopback_half_rtt_us", opt(tcp_lo_half_rtt_s, 1e6)},
          {"mpi_same_host_half_rtt_us", opt(mpi_lo_half_rtt_s, 1e6)},
          {"single_flow_Mbps", single_flow_Mbps},
          {"all_hosts_at_once_Mbps_per_flow", all_at_once_Mbps},
          {"uplink_achieved_Mbps", opt(uplink_Mbps, 1)},
          {"loopback_Mbps", opt(loopback_Mbps, 1)},
          {"tcp_alltoall_s", opt(tcp_alltoall_s, 1)},
          {"tcp_alltoall_bytes_per_pair", tcp_alltoall_bytes_per_pair},
          {"tcp_warm_rounds", warm_rounds_json(warm_rounds)},
          {"notes", notes},
          {"measured", true}};
}

Links read_links(const nlohmann::json& record, const std::vector<nlohmann::json>& pp_net,
                 const std::vector<nlohmann::json>& pp_host, const std::string& where) {
  const nlohmann::json& probes = at(record, "probes", where);
  Links l;
  l.tcp_half_rtt_s =
      at(at(probes, "tcp_pingpong", where), "half_rtt_us", where)["median"].get<double>() * 1e-6;
  l.mpi_half_rtt_s = median_pingpong_s(pp_net, where + " (MPI ping-pong between hosts)");
  if (!pp_net.empty() && pp_net.front().contains("backend"))
    l.mpi_probe_ranks = pp_net.front()["backend"].value("p", 2);
  l.single_flow_Mbps = steady(at(probes, "bulk_host_link", where), where);
  double sum = 0;
  const auto& all = at(probes, "bulk_all_hosts_at_once", where);
  for (const auto& f : all) sum += steady(f, where);
  l.all_at_once_Mbps = sum / static_cast<double>(all.size());
  if (probes.contains("uplink_aggregate")) {
    // What the flows delivered while all of them were sending (emu/clbo_emu/runner.py,
    // uplink_aggregate).
    l.uplink_Mbps = at(probes["uplink_aggregate"], "rate_Mbps", where).get<double>();
    l.uplink_source =
        "uplink: what leaf 0's hosts, sending across it at once, delivered together while all "
        "of them were sending";
  } else if (probes.contains("bulk_across_uplink")) {
    // Work folders kept before 2026-12-06: the sum of the flows' steady rates, which
    // overstates the uplink where TCP shares it unevenly (docs/validation.md, "What is
    // measured, per cluster").
    double up = 0;
    for (const auto& f : probes["bulk_across_uplink"]) up += steady(f, where);
    l.uplink_Mbps = up;
    l.uplink_source =
        "uplink: the summed steady rate of leaf 0's hosts sending across it at once (a work "
        "folder kept before 2026-12-06)";
  }
  if (probes.contains("bulk_loopback")) l.loopback_Mbps = steady(probes["bulk_loopback"], where);
  if (probes.contains("tcp_alltoall") && !probes["tcp_alltoall"].empty()) {
    std::vector<double> t;
    for (const auto& r : probes["tcp_alltoall"]) t.push_back(r["seconds"].get<double>());
    l.tcp_alltoall_s = upper_median(std::move(t));
    l.tcp_alltoall_bytes_per_pair = probes["tcp_alltoall"][0]["bytes_per_pair"].get<double>();
  }
  if (record.contains("shaping") && record["shaping"].contains("max_packet_frames")) {
    // A frame's TCP payload: 1514 bytes less Ethernet (14), IPv4 (20) and TCP with its
    // timestamp option (32).
    const nlohmann::json& sh = record["shaping"];
    l.packet_bytes =
        sh["max_packet_frames"].get<double>() * (sh.value("frame_bytes", 1514.0) - 66.0);
  }
  if (probes.contains("tcp_alltoall_rounds")) {
    for (const auto& r : at(probes["tcp_alltoall_rounds"], "rounds", where)) {
      const double bytes = at(r, "bytes_per_pair", where).get<double>();
      const auto t = at(r, "seconds", where).get<std::vector<double>>();
      const auto late = r.value("late_s", std::vector<double>(t.size(), 0.0));
      if (!l.warm_rounds.empty() && !(bytes > l.warm_rounds.back().bytes_per_pair))
        throw Error(fmt::format("{}: the warm rounds' sizes are not ascending ({} bytes after {})",
                                where, bytes, l.warm_rounds.back().bytes_per_pair));
      // The first round of each size warmed the connections; a round some host began late
      // (the mesh not up yet, a host not scheduled) measured that delay too.
      std::vector<double> kept;
      for (size_t i = 1; i < t.size(); ++i)
        if (i >= late.size() || late[i] <= std::max(kLateRoundS, kLateRoundShare * t[i]))
          kept.push_back(t[i]);
      // A size none of whose rounds began on time is left out with a note: the efficiency is
      // then interpolated between the sizes around it, and the grid's measurements stand.
      if (kept.empty()) {
        l.notes.push_back(fmt::format(
            "{}: no warm round of {} bytes per pair began on time ({} rounds, the first left "
            "out; a round begun over {} ms and {:.0f}% of its time late is): that size is left "
            "out of the all-pairs efficiency",
            where, bytes, t.size(), kLateRoundS * 1e3, kLateRoundShare * 100));
        continue;
      }
      l.warm_rounds.push_back({bytes, upper_median(kept)});
    }
    // Nothing left to take the efficiency from: the all-pairs rounds run at the fluid rate.
    const bool loaded = std::any_of(l.warm_rounds.begin(), l.warm_rounds.end(), [](const auto& r) {
      return r.bytes_per_pair > kEmptyRoundBytes;
    });
    if (!loaded && l.tcp_alltoall_s <= 0)
      l.notes.push_back(fmt::format(
          "{}: no loaded warm round is left and the Python probe did not run: every all-pairs "
          "round of this cluster is simulated at efficiency 1 (the fluid rate)",
          where));
  }
  if (!pp_host.empty()) l.mpi_lo_half_rtt_s = median_pingpong_s(pp_host, where + " (same host)");
  return l;
}

namespace {

// The TCP all-to-all probes' pattern, `bytes` between every pair of hosts, simulated on the
// preset without latency: the fluid time the probes' measurements are set against.
double probe_fluid_s(const sim::ClusterSpec& preset, const ClusterConfig& c, double bytes) {
  // The probe's flows run between hosts: from the first rank of each to the others'.
  const int g = c.ranks_per_host;
  sim::Program prog;
  prog.p = c.ranks();
  prog.gpus_per_node = g;
  sim::Segment s;
  s.label = "TCP all-to-all probe";
  s.alltoall = true;
  s.rounds.emplace_back();
  const auto b = static_cast<uint64_t>(bytes);
  for (int h = 0; h < c.hosts; ++h)
    for (int k = 0; k < c.hosts; ++k)
      if (h != k) s.rounds.front().push_back(sim::Xfer{h * g, k * g, b, 1});
  prog.segments.push_back(std::move(s));
  const sim::ClusterSpec bare = without_latency(preset);
  return sim::simulate_programs(bare, prog.p, {prog}).front().time_s;
}

}  // namespace

double all_pairs_efficiency(const sim::ClusterSpec& preset, const ClusterConfig& c,
                            const Links& l) {
  if (l.tcp_alltoall_s <= 0) return 1.0;
  const double fluid = probe_fluid_s(preset, c, l.tcp_alltoall_bytes_per_pair);
  return std::clamp(fluid / l.tcp_alltoall_s, 0.3, 1.0);
}

AllPairs all_pairs_model(const sim::ClusterSpec& preset, const ClusterConfig& c, const Links& l) {
  AllPairs a;
  a.efficiency = all_pairs_efficiency(preset, c, l);
  if (l.warm_rounds.empty()) return a;
  // Where no empty round began on time (the reader left it out: on a CPU-bound cluster a host
  // woke over a millisecond late, more than the round itself), the loaded rounds carry what a
  // round costs without bytes as well: about 1 ms, a few percent of a 64 KiB round on 8 hosts.
  const bool has_empty = l.warm_rounds.front().bytes_per_pair <= kEmptyRoundBytes;
  const size_t first = has_empty ? 1 : 0;
  if (first >= l.warm_rounds.size()) return a;
  const double empty_s = has_empty ? l.warm_rounds.front().seconds : 0.0;
  if (l.packet_bytes > 0 && l.packet_bytes < l.warm_rounds[first].bytes_per_pair)
    a.by_bytes.emplace_back(l.packet_bytes, 1.0);
  for (size_t i = first; i < l.warm_rounds.size(); ++i) {
    const Links::WarmRound& r = l.warm_rounds[i];
    const double carried = std::max(r.seconds - empty_s, 1e-9);
    a.by_bytes.emplace_back(
        r.bytes_per_pair,
        std::clamp(probe_fluid_s(preset, c, r.bytes_per_pair) / carried, 0.3, 1.0));
  }
  // Work folders kept before 2026-12-07 measured the long burst with the Python probe only.
  if (l.tcp_alltoall_s > 0 && l.tcp_alltoall_bytes_per_pair > a.by_bytes.back().first)
    a.by_bytes.emplace_back(l.tcp_alltoall_bytes_per_pair, a.efficiency);
  a.efficiency = a.by_bytes.back().second;
  return a;
}

void AllPairs::apply(sim::ExpandOptions& o) const {
  o.mpi_all_pairs_efficiency = efficiency;
  o.mpi_all_pairs_efficiency_by_bytes = by_bytes;
}

nlohmann::json AllPairs::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [bytes, eff] : by_bytes)
    rows.push_back({{"bytes_per_pair", bytes}, {"efficiency", eff}});
  return rows;
}

int machine_cpus() {
  return std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
}

namespace {

// The first line of a /proc or /sys file, or (with `key`) the value of its first "key : value"
// line; null where the file or the key is absent.
nlohmann::json first_line(const char* path, const std::string& key = "") {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (key.empty()) return line;
    const auto colon = line.find(':');
    if (line.rfind(key, 0) == 0 && colon != std::string::npos) {
      const auto start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? std::string() : line.substr(start);
    }
  }
  return nullptr;
}

}  // namespace

nlohmann::json machine_facts() {
  return {{"kernel", first_line("/proc/sys/kernel/osrelease")},
          {"cpu_model", first_line("/proc/cpuinfo", "model name")},
          {"cpuidle_driver", first_line("/sys/devices/system/cpu/cpuidle/current_driver")},
          {"guest_halt_poll_ns", first_line("/sys/module/haltpoll/parameters/guest_halt_poll_ns")}};
}

double cpu_contention(int ranks, int cpus) {
  return std::max(1.0, static_cast<double>(ranks) / std::max(cpus, 1));
}

nlohmann::json cluster_preset(const ClusterConfig& c, const Links& l, double contention) {
  const double fraction = std::min(1.0, l.all_at_once_Mbps / c.link_Mbps);
  // One-way latencies: the TCP path of a network message crosses both hosts' links; MPI's
  // per-message cost on top of it is the fabric's software latency, paid on every hop.
  const double path_us = l.tcp_half_rtt_s * 1e6;
  const double pingpong_software_us = std::max(0.0, (l.mpi_half_rtt_s - l.tcp_half_rtt_s) * 1e6);
  const double software_us = pingpong_software_us * contention;
  // Ranks of one host talk TCP over its loopback: unshaped, bounded by the CPU.
  const double lo_GBps = l.loopback_Mbps > 0 ? l.loopback_Mbps / 8e3 : 10.0;
  const double lo_lat_us =
      l.mpi_lo_half_rtt_s > 0
          ? std::max(0.5, (l.mpi_lo_half_rtt_s * 1e6 - pingpong_software_us) / 2)
          : 1.0;
  nlohmann::json j = {
      {"name", "emu-" + c.id},
      {"description",
       fmt::format("generated by clbo validate from the emulated cluster {} ({} hosts x {} "
                   "ranks, {} Mbit/s links, {})",
                   c.id, c.hosts, c.ranks_per_host, c.link_Mbps, sim::to_string(c.topology))},
      {"source",
       "the emulation's parameters and this run's probes (TCP ping-pong and bulk flows, MPI "
       "ping-pong); no collective timing"},
      {"gpu", "CPU rank (emulated host)"},
      {"nodes", c.hosts},
      {"gpus_per_node", c.ranks_per_host},
      {"intra",
       {{"type", "pcie"},
        {"bandwidth_GBps", lo_GBps},
        {"latency_us", lo_lat_us},
        {"source", l.loopback_Mbps > 0
                       ? "measured: one TCP flow over a host's loopback; latency: half of the "
                         "same-host MPI one-way time less the software latency"
                       : "unused (one rank per host)"}}},
      {"nic",
       {{"count", 1},
        {"rate_Gbps", c.link_Mbps / 1e3},
        {"latency_us", std::max(0.0, path_us / 2 - lo_lat_us)},
        {"source",
         "rate: the emulation's htb rate; latency: half the measured TCP one-way "
         "time between two hosts less one intra link (a route crosses two of each)"}}},
      {"fabric",
       {{"type", "tcp"},
        {"achievable_fraction", fraction},
        {"software_latency_us", software_us},
        {"crosstraffic", false},
        {"source",
         "achievable_fraction: mean steady per-flow rate with every host sending to the next at "
         "once / link rate (frame headers and the reverse flows' ACKs included, so SimGrid's "
         "crosstraffic is off); software_latency_us: MPI one-way time of 8 bytes (every pair "
         "of the ping-pong's ranks at once) less TCP's, times the CPU contention its ranks did "
         "not have"}}},
  };
  if (c.topology == sim::TopologyKind::kTwoLevel) {
    const bool measured_up = l.uplink_Mbps > 0;
    const double up = measured_up ? l.uplink_Mbps : c.uplink_Mbps * fraction;
    j["topology"] = {
        {"type", sim::to_string(c.topology)},
        {"nodes_per_leaf", c.hosts_per_leaf},
        {"uplink_GBps", up / 8e3},
        {"source", measured_up ? l.uplink_source
                               : std::string("uplink: not measured; the htb rate times the "
                                             "hosts' achievable fraction")}};
  } else {
    j["topology"] = {{"type", sim::to_string(c.topology)}};
  }
  return j;
}

sim::ClusterSpec cluster_spec(const ClusterConfig& c, const Links& l, double contention) {
  return sim::parse_cluster(cluster_preset(c, l, contention), "emu-" + c.id);
}

sim::ClusterSpec without_latency(sim::ClusterSpec c) {
  c.intra_latency_s = c.host_latency_s = c.nic_latency_s = c.switch_latency_s = 0;
  c.software_latency_s = 0;
  return c;
}

sim::KernelModel kernel_model(const nlohmann::json& bench, const std::string& file,
                              double contention, double streaming_contention, int ranks) {
  sim::KernelModel k;
  sim::load_kernel_bench(k, bench, file);
  const double copy =
      sim::bench_context_number(sim::google_benchmark_of(bench), "copy_bytes_per_second", file);
  k.hbm_Bps = (copy > 0 ? copy : 5e9) / streaming_contention;
  k.efficiency = 1.0;
  for (double* eps :
       {&k.compress_eps, &k.unpack_eps, &k.server_eps, &k.compact_eps, &k.scatter_eps})
    *eps /= streaming_contention;
  for (auto& [p, eps] : k.server_eps_by_p) eps /= streaming_contention;
  k.mask_eps /= contention;  // the mask draw computes (Philox) and writes 1 bit per element
  for (sim::KernelModel::Cached* c :
       {&k.compress_cached, &k.unpack_cached, &k.compact_cached, &k.scatter_cached})
    c->eps /= contention;
  for (auto& [p, c] : k.server_cached_by_p) c.eps /= contention;
  // Every emulated host is this one machine: all the ranks' buffers share its cache.
  k.llc_sharers = std::max(1, ranks);
  return k;
}

}  // namespace clbo::validate
