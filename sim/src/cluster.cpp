#include "clbo/sim/cluster.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <map>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/input_file.hpp"
#include "clbo/sim/presets.hpp"

namespace clbo::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kGB = 1e9;

std::string text(ConfigReader& r, const nlohmann::json& obj, const std::string& key) {
  r.ignore(key);
  if (!obj.contains(key) || obj[key].is_null()) return "";
  if (obj[key].is_string()) return obj[key].get<std::string>();
  if (obj[key].is_object() || obj[key].is_array()) return obj[key].dump();
  r.fail(key, "expected a string");
}

// Positive bandwidth in GB/s (or Gb/s when `gbits`), required unless def > 0.
double bandwidth(ConfigReader& r, const std::string& key, double def) {
  const double v = r.number(key, def);
  if (!(v > 0)) r.fail(key, "must be a positive bandwidth");
  return v;
}

double latency_us(ConfigReader& r, const std::string& key, double def) {
  return r.number_in(key, def, 0, true, 1e7, true) * 1e-6;
}

// Data rate of one InfiniBand port per generation, Gb/s (QDR signals 40 Gb/s with 8b/10b
// coding, i.e. 32 Gb/s of data; FDR onward use 64b/66b).
double ib_rate_Gbps(const std::string& gen) {
  if (gen == "QDR") return 32;
  if (gen == "FDR") return 54.5;
  if (gen == "EDR") return 100;
  if (gen == "HDR") return 200;
  if (gen == "NDR") return 400;
  return 0;
}

void parse_fabric(ClusterSpec& c, const nlohmann::json& obj, const std::string& file,
                  const std::string& prefix, ConfigReader& nic) {
  ConfigReader r(obj, file, prefix);
  c.fabric = r.required_choice("type", kFabricKindNames);
  double line = 0;
  if (c.fabric == FabricKind::kInfiniband) {
    c.ib_generation = r.choice("generation", "", {"QDR", "FDR", "EDR", "HDR", "NDR"});
    line = ib_rate_Gbps(c.ib_generation);
  }
  // The NIC's rate may come from the IB generation; a stated rate wins.
  const double rate = nic.number("rate_Gbps", line);
  if (!(rate > 0)) nic.fail("rate_Gbps", "must be a positive rate (or give fabric.generation)");
  c.nic_rate_Bps = rate * 1e9 / 8;
  c.efficiency = r.number_in(c.fabric == FabricKind::kTcp ? "achievable_fraction" : "efficiency",
                             c.fabric == FabricKind::kTcp ? 1.0 : 1.0, 0, false, 1, true);
  if (c.fabric == FabricKind::kTcp) r.ignore("efficiency");
  if (c.fabric == FabricKind::kInfiniband) r.ignore("achievable_fraction");
  c.software_latency_s =
      r.has("software_latency_us") ? latency_us(r, "software_latency_us", 0) : -1.0;
  c.crosstraffic = r.boolean("crosstraffic", c.fabric == FabricKind::kTcp);
  c.network_model = r.choice("model", "CM02", {"CM02", "LV08"});
  c.tcp_gamma_bytes = r.number_in("tcp_gamma_bytes", 0, 0, true, kInf, false);
  r.ignore("source");
  r.finish();
}

void parse_topology(ClusterSpec& c, const nlohmann::json& obj, const std::string& file,
                    const std::string& prefix) {
  ConfigReader r(obj, file, prefix);
  c.topology = r.choice("type", TopologyKind::kSingleSwitch, kTopologyKindNames);
  c.switch_latency_s = latency_us(r, "switch_latency_us", 0);
  if (c.topology == TopologyKind::kFatTree) {
    c.nodes_per_leaf = r.integer<int>("nodes_per_leaf", 0, 1, kMaxNodes);
    if (c.nodes_per_leaf == 0) r.fail("nodes_per_leaf", "required for a fat_tree");
    c.spines = r.integer<int>("spines", c.nodes_per_leaf, 1, kMaxNodes);
  } else if (c.topology == TopologyKind::kTwoLevel) {
    c.nodes_per_leaf = r.integer<int>("nodes_per_leaf", 0, 1, kMaxNodes);
    if (c.nodes_per_leaf == 0) r.fail("nodes_per_leaf", "required for a two_level tree");
    if (r.has("uplink_GBps") == r.has("oversubscription"))
      r.fail("uplink_GBps", "give exactly one of uplink_GBps and oversubscription");
    if (r.has("uplink_GBps")) {
      c.uplink_Bps = bandwidth(r, "uplink_GBps", 0) * kGB;
    } else {
      const double over = r.number_in("oversubscription", 1, 1, true, 1e6, true);
      c.uplink_Bps = c.nodes_per_leaf * c.node_net_Bps() / over;
    }
  }
  r.ignore("source");
  r.finish();
}

}  // namespace

ClusterSpec parse_cluster(const nlohmann::json& obj, const std::string& file,
                          const std::string& prefix) {
  ConfigReader r(obj, file, prefix);
  auto at = [&](const std::string& k) { return r.field(k); };
  ClusterSpec c;
  c.file = file;
  c.name = text(r, obj, "name");
  if (c.name.empty()) r.fail("name", "required");
  c.description = text(r, obj, "description");
  c.source = text(r, obj, "source");
  r.ignore("sources");      // per-field notes for readers; results copy them verbatim
  r.ignore("calibration");  // how a fitted preset was fitted (clbo calibrate)
  c.gpu = text(r, obj, "gpu");
  if (c.gpu.empty()) r.fail("gpu", "required: the GPU type, e.g. \"V100-SXM2\"");
  c.gpus_per_node = r.integer<int>("gpus_per_node", 0, 0, kMaxGpusPerNode);
  if (c.gpus_per_node < 1) r.fail("gpus_per_node", "a node needs at least one GPU");

  const nlohmann::json& intra = r.object("intra", false);
  const nlohmann::json& nic = r.object("nic", false);
  const nlohmann::json& fabric = r.object("fabric", true);
  ConfigReader ir(intra, file, at("intra"));
  ConfigReader nr(nic, file, at("nic"));

  c.xml_file = text(r, obj, "xml");
  if (c.is_xml()) {
    const std::filesystem::path base = std::filesystem::path(file).parent_path();
    if (std::filesystem::path(c.xml_file).is_relative() && !base.empty() &&
        !std::filesystem::exists(c.xml_file))
      c.xml_file = (base / c.xml_file).string();
    r.ignore("hosts");
    if (!obj.contains("hosts") || !obj["hosts"].is_array() || obj["hosts"].empty())
      r.fail("hosts", "an XML platform needs \"hosts\": the SimGrid host of each rank, in order");
    std::map<std::string, size_t> host_index;
    for (size_t i = 0; i < obj["hosts"].size(); ++i) {
      if (!obj["hosts"][i].is_string())
        throw InputError(file, fmt::format("{}[{}]", at("hosts"), i), obj["hosts"][i].dump(),
                         "expected a host name");
      c.xml_hosts.push_back(obj["hosts"][i].get<std::string>());
      const auto [first, fresh] = host_index.emplace(c.xml_hosts.back(), i);
      if (!fresh)
        throw InputError(
            file, fmt::format("{}[{}]", at("hosts"), i), c.xml_hosts[i],
            fmt::format("a host can hold only one rank (also {}[{}])", at("hosts"), first->second));
    }
    // The platform itself is read by SimGrid when simulating; that it is a readable file is
    // known now.
    try {
      ::close(open_input_file(c.xml_file));
    } catch (const InputError& e) {
      throw InputError(file, at("xml"), c.xml_file, e.why());
    }
    if (c.xml_hosts.size() % static_cast<size_t>(c.gpus_per_node) != 0)
      throw InputError(
          file, at("hosts"), fmt::format("{} hosts", c.xml_hosts.size()),
          fmt::format("the mapping must fill whole nodes of gpus_per_node = {}", c.gpus_per_node));
    if (c.xml_hosts.size() > static_cast<size_t>(kMaxGpus))
      throw InputError(file, at("hosts"), fmt::format("{} hosts", c.xml_hosts.size()),
                       fmt::format("at most {} hosts are supported", kMaxGpus));
    c.max_nodes = static_cast<int>(c.xml_hosts.size()) / c.gpus_per_node;
    r.ignore("nodes");
  } else {
    c.max_nodes = r.integer<int>("nodes", 0, 0, kMaxNodes);
    if (c.max_nodes < 1) r.fail("nodes", "a cluster needs at least one node");
  }

  // Intra-node links: required for built clusters (the XML describes its own).
  c.intra_kind = c.is_xml() ? ir.choice("type", IntraKind::kNvlink, kIntraKindNames)
                            : ir.required_choice("type", kIntraKindNames);
  if (!c.is_xml()) {
    c.intra_Bps = bandwidth(ir, "bandwidth_GBps", 0) * kGB;
    c.intra_latency_s = latency_us(ir, "latency_us", 1.0);
  }
  ir.ignore("source");
  ir.finish();

  const nlohmann::json& host = r.object("host_link", false);
  ConfigReader hr(host, file, at("host_link"));
  c.host_Bps =
      bandwidth(hr, "bandwidth_GBps", 12.0) * kGB;  // PCIe Gen3 x16 (docs/reference/published.md)
  c.host_latency_s = latency_us(hr, "latency_us", 1.0);
  hr.ignore("source");
  hr.finish();

  c.nic_count = nr.integer<int>("count", 1, 1, 64);
  c.nic_latency_s = latency_us(nr, "latency_us", 1.0);
  nr.ignore("source");
  parse_fabric(c, fabric, file, at("fabric"), nr);
  nr.finish();

  parse_topology(c, r.object("topology", false), file, at("topology"));
  if (c.is_xml() && c.topology != TopologyKind::kSingleSwitch)
    r.fail("topology", "an XML platform describes its own topology");
  r.finish();
  return c;
}

nlohmann::json cluster_json(const nlohmann::json& ref, const std::string& where,
                            const std::string& field, std::string* from) {
  if (ref.is_object()) {
    if (from) *from = where;
    return ref;
  }
  if (!ref.is_string())
    throw InputError(where, field, ref.dump(), "expected a preset name, a JSON path or an object");
  const std::string s = ref.get<std::string>();
  const bool path = (s.size() > 5 && s.substr(s.size() - 5) == ".json") ||
                    s.find('/') != std::string::npos || std::filesystem::is_regular_file(s);
  if (!path) {
    if (from) *from = preset_path("clusters", s);
    return preset_json("clusters", s, where, field);
  }
  if (!std::filesystem::is_regular_file(s))
    throw InputError(where, field, ref.dump(), "no such cluster file");
  nlohmann::json j;
  try {
    j = load_json_file(s);
  } catch (const InputError& e) {
    throw InputError(where, field, ref.dump(), std::string("not a cluster: ") + e.what());
  }
  // A cluster names its GPUs and its fabric; a file without them is something else (an
  // experiment, a results file), not a cluster with missing fields.
  if (!j.is_object() || !j.contains("gpus_per_node") || !j.contains("fabric"))
    throw InputError(where, field, ref.dump(),
                     "not a cluster: a cluster JSON has \"gpu\", \"gpus_per_node\", "
                     "\"fabric\", ... (docs/simulator.md, Clusters)");
  if (from) *from = s;
  return j;
}

ClusterSpec resolve_cluster(const nlohmann::json& ref, const std::string& where,
                            const std::string& field) {
  std::string from;
  const nlohmann::json j = cluster_json(ref, where, field, &from);
  return ref.is_object() ? parse_cluster(j, where, field) : parse_cluster(j, from);
}

void check_gpu_count(const ClusterSpec& c, int p, const std::string& where,
                     const std::string& field) {
  const std::string v = std::to_string(p);
  if (p < 1) throw InputError(where, field, v, "a run needs at least one GPU");
  if (p > c.max_gpus())
    throw InputError(where, field, v,
                     fmt::format("cluster '{}' has only {} nodes × {} GPUs = {} GPUs", c.name,
                                 c.max_nodes, c.gpus_per_node, c.max_gpus()));
  if (p > c.gpus_per_node && p % c.gpus_per_node != 0)
    throw InputError(where, field, v,
                     fmt::format("{} GPUs do not fill whole nodes of {} GPUs (cluster '{}')", p,
                                 c.gpus_per_node, c.name));
}

const char* to_string(IntraKind k) {
  return kIntraKindNames.name(k);
}
const char* to_string(FabricKind k) {
  return kFabricKindNames.name(k);
}
const char* to_string(TopologyKind k) {
  return kTopologyKindNames.name(k);
}

nlohmann::json ClusterSpec::to_json() const {
  nlohmann::json j;
  j["name"] = name;
  j["file"] = file;
  j["source"] = source;
  j["gpu"] = gpu;
  j["max_nodes"] = max_nodes;
  j["gpus_per_node"] = gpus_per_node;
  j["intra"] = {{"type", to_string(intra_kind)},
                {"bandwidth_GBps", intra_Bps / kGB},
                {"latency_us", intra_latency_s * 1e6}};
  j["host_link"] = {{"bandwidth_GBps", host_Bps / kGB}, {"latency_us", host_latency_s * 1e6}};
  j["nic"] = {{"count", nic_count},
              {"rate_Gbps", nic_rate_Bps * 8 / 1e9},
              {"latency_us", nic_latency_s * 1e6}};
  j["fabric"] = {
      {"type", to_string(fabric)},
      {"efficiency", efficiency},
      {"software_latency_us",
       software_latency_s < 0 ? nlohmann::json(nullptr) : nlohmann::json(software_latency_s * 1e6)},
      {"crosstraffic", crosstraffic},
      {"model", network_model},
      {"tcp_gamma_bytes", tcp_gamma_bytes}};
  if (!ib_generation.empty()) j["fabric"]["generation"] = ib_generation;
  j["topology"] = {{"type", to_string(topology)}, {"switch_latency_us", switch_latency_s * 1e6}};
  if (topology == TopologyKind::kFatTree) {
    j["topology"]["nodes_per_leaf"] = nodes_per_leaf;
    j["topology"]["spines"] = spines;
  } else if (topology == TopologyKind::kTwoLevel) {
    j["topology"]["nodes_per_leaf"] = nodes_per_leaf;
    j["topology"]["uplink_GBps"] = uplink_Bps / kGB;
  }
  j["node_net_GBps"] = node_net_Bps() / kGB;
  if (is_xml()) {
    j["xml"] = xml_file;
    j["hosts"] = xml_hosts;
  }
  return j;
}

}  // namespace clbo::sim
