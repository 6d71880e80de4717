#include "clbo/validate/spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/validate/model.hpp"

namespace clbo::validate {

namespace {

// Emulation limits (emu/clbo_emu/names.py): hosts per cluster and leaf switches.
constexpr int kMaxHosts = 8;
constexpr int kMaxLeaves = 4;
// htb on veth pairs shapes faithfully from 1 Mbit/s; above 1 Gbit/s per link the machine's
// CPUs, not the shaper, would set the rate (Mininet's TCLink stops at 1000 as well).
constexpr double kMinMbps = 1, kMaxMbps = 1000;
// Ranks per CPU core the emulation may oversubscribe: MPI ranks sleep while they wait
// (mpi_yield_when_idle, the backend's polling back-off), so a few per core still run.
constexpr int kRanksPerCpu = 8;

const std::vector<std::string> kTypes = {"Adam",       "Lamb",        "OneBitAdam",
                                         "OneBitLamb", "ZeroOneAdam", "Slamb"};

uint64_t parse_bytes(ConfigReader& r, const nlohmann::json& obj, const std::string& key,
                     uint64_t def) {
  r.ignore(key);
  if (!obj.contains(key)) return def;
  const nlohmann::json& v = obj[key];
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() > 0))
    return v.get<uint64_t>();
  if (!v.is_string()) r.fail(key, "expected bytes: a positive integer or \"64K\", \"16M\", \"1G\"");
  const std::string s = v.get<std::string>();
  size_t pos = 0;
  uint64_t n = 0;
  try {
    n = std::stoull(s, &pos);
  } catch (const std::exception&) {
    r.fail(key, "expected bytes: a positive integer or \"64K\", \"16M\", \"1G\"");
  }
  const std::string suffix = s.substr(pos);
  const uint64_t mult = suffix.empty()  ? 1
                        : suffix == "K" ? 1ull << 10
                        : suffix == "M" ? 1ull << 20
                        : suffix == "G" ? 1ull << 30
                                        : 0;
  if (mult == 0 || n == 0 || s[0] == '-') r.fail(key, "expected bytes such as 64K, 16M or 1G");
  return n * mult;
}

Sizes parse_sizes(const nlohmann::json& obj, const std::string& file, const std::string& where,
                  const Sizes& def) {
  if (!obj.is_object())
    throw InputError(file, where, obj.dump(),
                     "expected {\"min\": ..., \"max\": ..., \"factor\": ...}");
  ConfigReader r(obj, file, where);
  Sizes s;
  s.min_bytes = parse_bytes(r, obj, "min", def.min_bytes);
  s.max_bytes = parse_bytes(r, obj, "max", def.max_bytes);
  s.factor = r.integer<uint64_t>("factor", def.factor, 2, 1024);
  r.finish();
  if (s.min_bytes % 64 != 0)
    throw InputError(file, r.field("min"), std::to_string(s.min_bytes),
                     "must be a multiple of 64 bytes (every op's element and rank split)");
  if (s.min_bytes > s.max_bytes)
    throw InputError(file, r.field("min"), std::to_string(s.min_bytes),
                     fmt::format("larger than max = {}", s.max_bytes));
  if (s.max_bytes > (1ull << 30))
    throw InputError(file, r.field("max"), std::to_string(s.max_bytes),
                     "at most 1G: every rank holds several buffers of this size");
  return s;
}

// A scalar or a non-empty list of them, for a grid field.
std::vector<nlohmann::json> values(ConfigReader& r, const nlohmann::json& obj,
                                   const std::string& key, const nlohmann::json& def) {
  r.ignore(key);
  if (!obj.contains(key)) {
    if (def.is_null()) r.fail(key, "required");
    return {def};
  }
  const nlohmann::json& v = obj[key];
  if (!v.is_array()) return {v};
  if (v.empty()) r.fail(key, "an empty list expands to no cluster");
  return std::vector<nlohmann::json>(v.begin(), v.end());
}

int int_value(const nlohmann::json& v, const std::string& file, const std::string& field, int lo,
              int hi, const std::string& why) {
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw InputError(file, field, v.dump(), why);
  return v.get<int>();
}

double number_value(const nlohmann::json& v, const std::string& file, const std::string& field,
                    double lo, double hi, const std::string& why) {
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
    throw InputError(file, field, v.dump(), why);
  return v.get<double>();
}

std::string mbps_id(double mbps) {
  return mbps == static_cast<int>(mbps) ? std::to_string(static_cast<int>(mbps))
                                        : fmt::format("{:.3g}", mbps);
}

void expand_clusters(const nlohmann::json& entries, ValidationSpec& s, const Sizes& sizes,
                     bool steps_default) {
  if (!entries.is_array() || entries.empty())
    throw InputError(s.file, "clusters", entries.dump().substr(0, 80),
                     "expected a non-empty list of cluster entries");
  std::set<std::string> ids;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = fmt::format("clusters[{}]", i);
    const nlohmann::json& e = entries[i];
    if (!e.is_object()) throw InputError(s.file, where, e.dump(), "expected an object");
    ConfigReader r(e, s.file, where);
    using sim::TopologyKind;
    const TopologyKind topo =
        r.required_choice("topology", sim::kTopologyKindNames,
                          {TopologyKind::kSingleSwitch, TopologyKind::kTwoLevel});
    const bool two_level = topo == TopologyKind::kTwoLevel;
    const auto hosts = values(r, e, "hosts", nullptr);
    const auto rphs = values(r, e, "ranks_per_host", 1);
    const auto rates = values(r, e, "link_Mbps", nullptr);
    std::vector<nlohmann::json> overs = {1};
    int per_leaf = 0;
    if (two_level) {
      per_leaf = r.integer<int>("hosts_per_leaf", 0, 1, 64);
      if (per_leaf == 0) r.fail("hosts_per_leaf", "required for a two_level topology");
      overs = values(r, e, "oversubscription", 1);
    } else {
      for (const char* k : {"hosts_per_leaf", "oversubscription"})
        if (e.contains(k))
          r.fail(k, "only a two_level topology has leaves (this entry is single_switch)");
    }
    Sizes own = sizes;
    r.ignore("sizes");
    if (e.contains("sizes")) own = parse_sizes(e["sizes"], s.file, r.field("sizes"), sizes);
    const bool steps = r.boolean("steps", steps_default);
    if (steps && !steps_default)
      r.fail("steps", "true needs the top-level \"steps\" block (optimizers, steps)");
    r.finish();
    for (size_t hi = 0; hi < hosts.size(); ++hi)
      for (size_t ri = 0; ri < rphs.size(); ++ri)
        for (size_t li = 0; li < rates.size(); ++li)
          for (size_t oi = 0; oi < overs.size(); ++oi) {
            auto at = [&](const char* key, size_t idx, size_t n) {
              return n > 1 ? fmt::format("{}.{}[{}]", where, key, idx)
                           : fmt::format("{}.{}", where, key);
            };
            ClusterConfig c;
            c.where = where;
            c.topology = topo;
            c.hosts = int_value(hosts[hi], s.file, at("hosts", hi, hosts.size()), 2, kMaxHosts,
                                fmt::format("hosts must be in 2..{} (the emulation's names "
                                            "allow {} hosts per cluster)",
                                            kMaxHosts, kMaxHosts));
            c.ranks_per_host = int_value(rphs[ri], s.file, at("ranks_per_host", ri, rphs.size()), 1,
                                         16, "ranks_per_host must be in 1..16");
            c.link_Mbps = number_value(
                rates[li], s.file, at("link_Mbps", li, rates.size()), kMinMbps, kMaxMbps,
                fmt::format("htb shapes {}..{} Mbit/s faithfully on this machine's veth pairs; "
                            "above that its CPUs, not the shaper, would set the rate",
                            kMinMbps, kMaxMbps));
            c.sizes = own;
            c.steps = steps;
            if (two_level) {
              c.hosts_per_leaf = per_leaf;
              c.oversubscription =
                  number_value(overs[oi], s.file, at("oversubscription", oi, overs.size()), 1, 64,
                               "oversubscription must be in 1..64");
              const int leaves = c.hosts / per_leaf;
              if (c.hosts % per_leaf != 0 || leaves < 2 || leaves > kMaxLeaves)
                throw InputError(s.file, fmt::format("{}.hosts_per_leaf", where),
                                 std::to_string(per_leaf),
                                 fmt::format("must split {} hosts into 2..{} equal leaves", c.hosts,
                                             kMaxLeaves));
              c.uplink_Mbps = c.link_Mbps * per_leaf / c.oversubscription;
              if (c.uplink_Mbps > kMaxMbps || c.uplink_Mbps < kMinMbps)
                throw InputError(s.file, at("oversubscription", oi, overs.size()),
                                 fmt::format("{}", c.oversubscription),
                                 fmt::format("gives an uplink of {} Mbit/s, outside the {}..{} "
                                             "Mbit/s htb shapes here",
                                             c.uplink_Mbps, kMinMbps, kMaxMbps));
            }
            c.id = fmt::format("{}-h{}-r{}-{}M", two_level ? "tl" : "ss", c.hosts, c.ranks_per_host,
                               mbps_id(c.link_Mbps));
            if (two_level) c.id += fmt::format("-k{}-o{}", per_leaf, mbps_id(c.oversubscription));
            if (!ids.insert(c.id).second)
              throw InputError(s.file, where, c.id, "this cluster appears twice in the grid");
            s.clusters.push_back(c);
          }
  }
}

void check_capacity(const ValidationSpec& s, int cpus, double mem) {
  for (const ClusterConfig& c : s.clusters) {
    const int max_ranks = kRanksPerCpu * cpus;
    if (c.ranks() > max_ranks)
      throw InputError(
          s.file, c.where + ".ranks_per_host", std::to_string(c.ranks_per_host),
          fmt::format("{} hosts x {} ranks = {} ranks; this machine runs at most {} "
                      "({} per CPU, {} CPUs)",
                      c.hosts, c.ranks_per_host, c.ranks(), max_ranks, kRanksPerCpu, cpus));
    // The compressed allreduce keeps about 4 buffers of the largest size per rank (input,
    // worker error, gathered and server signs); the trainer ~250 MB (the dataset in floats).
    const double per_rank =
        std::max(4.0 * static_cast<double>(c.sizes.max_bytes), c.steps ? 2.6e8 : 0.0) + 5e7;
    if (mem > 0 && per_rank * c.ranks() > 0.8 * mem)
      throw InputError(s.file, c.where + ".sizes.max", std::to_string(c.sizes.max_bytes),
                       fmt::format("{} ranks need about {:.1f} GB; {:.1f} GB of memory are "
                                   "available",
                                   c.ranks(), per_rank * c.ranks() / 1e9, mem / 1e9));
  }
}

// A congestion control the emulated hosts can run: a plain name the machine allows in a
// namespace (a namespace other than the machine's own may set only those).
void check_congestion_control(const std::string& cc, const std::string& file) {
  const bool plain = !cc.empty() && cc.size() <= 16 &&
                     std::islower(static_cast<unsigned char>(cc[0])) &&
                     std::all_of(cc.begin(), cc.end(), [](char ch) {
                       return std::islower(static_cast<unsigned char>(ch)) ||
                              std::isdigit(static_cast<unsigned char>(ch)) || ch == '_';
                     });
  if (!plain)
    throw InputError(file, "tcp_congestion_control", cc,
                     "not a congestion control's name (such as reno, cubic or bbr)");
  const std::vector<std::string> allowed = allowed_congestion_controls();
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), cc) == allowed.end())
    throw InputError(file, "tcp_congestion_control", cc,
                     fmt::format("a network namespace on this machine may use only {} "
                                 "(net.ipv4.tcp_allowed_congestion_control)",
                                 fmt::join(allowed, ", ")));
}

}  // namespace

std::vector<std::string> allowed_congestion_controls() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
  std::vector<std::string> v;
  for (std::string name; in >> name;) v.push_back(name);
  return v;
}

double available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

std::vector<uint64_t> Sizes::list() const {
  std::vector<uint64_t> v;
  for (uint64_t s = min_bytes; s <= max_bytes; s *= factor) {
    v.push_back(s);
    if (s > max_bytes / factor) break;
  }
  return v;
}

nlohmann::json ClusterConfig::to_json() const {
  nlohmann::json j = {{"topology", sim::to_string(topology)},
                      {"hosts", hosts},
                      {"ranks_per_host", ranks_per_host},
                      {"link_Mbps", link_Mbps}};
  if (topology == sim::TopologyKind::kTwoLevel) {
    j["hosts_per_leaf"] = hosts_per_leaf;
    j["oversubscription"] = oversubscription;
    j["uplink_Mbps"] = uplink_Mbps;
  }
  return j;
}

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> v = {
      "allreduce:native", "allreduce:ring", "compressed:gather", "compressed:alltoall", "allgather",
      "alltoall",         "sparse"};
  return v;
}

ValidationSpec parse_validation_spec(const nlohmann::json& j, const std::string& file, int cpus,
                                     double mem) {
  ValidationSpec s;
  s.file = file;
  s.config = j;
  if (!j.is_object())
    throw InputError(file, "(top level)", j.dump().substr(0, 60), "expected an object");
  ConfigReader r(j, file);
  r.ignore("name");
  r.ignore("description");
  r.ignore("source");
  s.name = j.value("name", "");
  s.description = j.value("description", "");

  Sizes sizes;
  r.ignore("sizes");
  if (j.contains("sizes")) sizes = parse_sizes(j["sizes"], file, "sizes", sizes);

  r.ignore("ops");
  if (!j.contains("ops") || !j["ops"].is_array() || j["ops"].empty())
    r.fail("ops", "required: a list of " + fmt::format("{}", fmt::join(op_names(), ", ")));
  std::set<std::string> seen;
  for (size_t i = 0; i < j["ops"].size(); ++i) {
    const nlohmann::json& o = j["ops"][i];
    const std::string field = fmt::format("ops[{}]", i);
    if (!o.is_string()) throw InputError(file, field, o.dump(), "expected an op name");
    const std::string name = o.get<std::string>();
    if (std::find(op_names().begin(), op_names().end(), name) == op_names().end())
      throw InputError(file, field, name,
                       fmt::format("unknown op; choose from {}{}", fmt::join(op_names(), ", "),
                                   did_you_mean(name, op_names())));
    if (!seen.insert(name).second) throw InputError(file, field, name, "listed twice");
    const size_t colon = name.find(':');
    s.ops.push_back(colon == std::string::npos
                        ? OpSpec{name, ""}
                        : OpSpec{name.substr(0, colon), name.substr(colon + 1)});
  }

  r.ignore("bench");
  if (j.contains("bench")) {
    ConfigReader b(j["bench"], file, "bench");
    s.iters = b.integer<decltype(s.iters)>("iters", s.iters, 1, 1000000);
    s.warmup = b.integer<decltype(s.warmup)>("warmup", s.warmup, 0, 1000000);
    s.min_time_s = b.number_in("min_time_s", s.min_time_s, 0, true, 60, true);
    b.finish();
  }
  r.ignore("probes");
  if (j.contains("probes")) {
    ConfigReader p(j["probes"], file, "probes");
    s.pingpong_count = p.integer<int>("pingpong_count", s.pingpong_count, 100, 10000000);
    s.bulk_seconds = p.number_in("bulk_seconds", s.bulk_seconds, 0.5, true, 60, true);
    p.finish();
  }
  s.nice = static_cast<int>(r.number_in("nice", s.nice, -20, true, 19, true));
  if (j.contains("nice") && !j["nice"].is_number_integer()) r.fail("nice", "expected an integer");
  s.steal_retries = r.integer<int>("steal_retries", s.steal_retries, 0, 3);
  s.tcp_congestion_control = r.string("tcp_congestion_control", s.tcp_congestion_control);
  check_congestion_control(s.tcp_congestion_control, file);
  r.ignore("steps");
  if (j.contains("steps") && !j["steps"].is_null()) {
    ConfigReader st(j["steps"], file, "steps");
    s.steps.enabled = true;
    st.ignore("optimizers");
    const nlohmann::json& opts = j["steps"].value("optimizers", nlohmann::json(kTypes));
    if (!opts.is_array() || opts.empty())
      st.fail("optimizers", "expected a list of optimizer types");
    for (size_t i = 0; i < opts.size(); ++i) {
      const std::string field = fmt::format("steps.optimizers[{}]", i);
      const std::string t = opts[i].is_string() ? opts[i].get<std::string>() : opts[i].dump();
      if (std::find(kTypes.begin(), kTypes.end(), t) == kTypes.end())
        throw InputError(file, field, t,
                         fmt::format("unknown optimizer type; choose from {}{}",
                                     fmt::join(kTypes, ", "), did_you_mean(t, kTypes)));
      s.steps.optimizers.push_back(t);
    }
    s.steps.steps = st.integer<decltype(s.steps.steps)>("steps", s.steps.steps, 2, 1000000);
    s.steps.batch_per_worker = st.integer<decltype(s.steps.batch_per_worker)>(
        "batch_per_worker", s.steps.batch_per_worker, 1, 1 << 20);
    s.steps.freeze_step =
        st.integer<decltype(s.steps.freeze_step)>("freeze_step", s.steps.freeze_step, 1, 1000000);
    if (s.steps.freeze_step >= s.steps.steps)
      st.fail("freeze_step", fmt::format("must be below steps = {}, so compressed steps are "
                                         "measured too",
                                         s.steps.steps));
    st.finish();
  }
  r.ignore("clusters");
  if (!j.contains("clusters")) r.fail("clusters", "required: the emulated clusters");
  expand_clusters(j["clusters"], s, sizes, s.steps.enabled);
  r.finish();
  check_capacity(s, cpus > 0 ? cpus : machine_cpus(), mem > 0 ? mem : available_memory());
  return s;
}

ValidationSpec load_validation_spec(const std::string& path) {
  return parse_validation_spec(load_json_file(path), path);
}

std::string default_results_path(const std::string& spec_path) {
  std::string p = spec_path;
  const std::string marker = "experiments/";
  const size_t at = p.rfind(marker);
  if (at != std::string::npos) return p.substr(0, at) + "results/" + p.substr(at + marker.size());
  const size_t slash = p.find_last_of('/');
  return "results/validation/" + (slash == std::string::npos ? p : p.substr(slash + 1));
}

nlohmann::json measured_grid(nlohmann::json config) {
  if (config.is_object()) config.erase("description");
  return config;
}

}  // namespace clbo::validate
