// ClusterSpec: the hardware a simulation runs on, read from a cluster JSON (a preset in
// experiments/clusters/, a file, or an inline object). Every field is validated when read;
// errors name the file, the dotted field and the value. Units in the JSON are stated in the
// field names (bandwidth_GBps, rate_Gbps, latency_us); inside the struct everything is SI
// (bytes per second, seconds).
//
// A cluster is either *built* (nodes × GPUs per node, intra-node links, NICs, fabric and
// topology, turned into SimGrid zones by the simulator) or a user's SimGrid *XML* platform
// plus a host→rank mapping.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/core/names.hpp"

namespace clbo::sim {

// Bounds of the sizes a cluster file may state, so that every product of them fits an int
// (nodes × GPUs per node is at most 2^30).
inline constexpr int kMaxNodes = 1 << 20;
inline constexpr int kMaxGpusPerNode = 1 << 10;
inline constexpr int kMaxGpus = kMaxNodes;  // a run's GPU count

enum class IntraKind { kNvlink, kPcie };
enum class FabricKind { kTcp, kInfiniband };
enum class TopologyKind { kSingleSwitch, kFatTree, kTwoLevel };

inline constexpr auto kIntraKindNames =
    name_table<IntraKind>({{IntraKind::kNvlink, "nvlink"}, {IntraKind::kPcie, "pcie"}});
inline constexpr auto kFabricKindNames =
    name_table<FabricKind>({{FabricKind::kTcp, "tcp"}, {FabricKind::kInfiniband, "infiniband"}});
inline constexpr auto kTopologyKindNames =
    name_table<TopologyKind>({{TopologyKind::kSingleSwitch, "single_switch"},
                              {TopologyKind::kFatTree, "fat_tree"},
                              {TopologyKind::kTwoLevel, "two_level"}});

struct ClusterSpec {
  std::string name, description, source;
  std::string file;  // where the spec was read from, for errors and results
  std::string gpu;   // compute profile name, e.g. "V100-SXM2" (see workload.hpp)
  int max_nodes = 1;
  int gpus_per_node = 1;

  // Per-GPU link to the node's switch (NVSwitch / NVLink fabric, or the PCIe switch).
  IntraKind intra_kind = IntraKind::kNvlink;
  double intra_Bps = 0, intra_latency_s = 0;
  // The node CPU's link to the same switch: host staging of the MPI backend crosses it.
  double host_Bps = 0, host_latency_s = 0;

  // NICs per node. The node's gateway link carries count × rate × efficiency: NCCL spreads
  // its channels over all NICs, and a flow-level model cannot tell the rails apart.
  int nic_count = 1;
  double nic_rate_Bps = 0;  // line rate of one NIC
  double nic_latency_s = 0;

  FabricKind fabric = FabricKind::kInfiniband;
  std::string ib_generation;  // QDR/FDR/EDR/HDR/NDR, informational once the rate is known
  // Fraction of line rate the node reaches in aggregate (TCP: the sockets transport's
  // achievable fraction; IB: the RDMA efficiency). Applied to the gateway link capacity.
  double efficiency = 1.0;
  // Per-message software latency on inter-node hops. Negative: NCCL's own per-hop network
  // latency for the chosen protocol (docs/reference/published.md). TCP clusters usually state it.
  double software_latency_s = -1;
  bool crosstraffic = false;   // SimGrid's 5% reverse (ACK) traffic; on for TCP by default
  std::string network_model;   // "CM02" (default) or "LV08" (SimGrid's TCP-fitted factors)
  double tcp_gamma_bytes = 0;  // SimGrid TCP window bound; 0 disables it

  TopologyKind topology = TopologyKind::kSingleSwitch;
  double switch_latency_s = 0;  // per switch hop
  int nodes_per_leaf = 0;       // fat_tree / two_level
  int spines = 0;               // fat_tree: level-2 switches (= nodes_per_leaf: non-blocking)
  double uplink_Bps = 0;        // two_level: each leaf switch's uplink, per direction

  // XML platforms: the file and the host of each rank, in rank order.
  std::string xml_file;
  std::vector<std::string> xml_hosts;

  bool is_xml() const { return !xml_file.empty(); }
  // Aggregate inter-node rate of one node's gateway.
  double node_net_Bps() const { return nic_count * nic_rate_Bps * efficiency; }
  int max_gpus() const { return max_nodes * gpus_per_node; }
  nlohmann::json to_json() const;
};

// Parses a cluster object; `file` and `prefix` locate it in errors.
ClusterSpec parse_cluster(const nlohmann::json& obj, const std::string& file,
                          const std::string& prefix = "");

// Resolves a reference as experiments and the command line write it: a preset name
// ("paper-eth-v100"), a path to a cluster JSON file ("my/cluster.json", or any name that
// contains a '/' or names an existing file), or an inline object. `where`/`field` locate the
// reference in errors: a path that does not exist, a file that is not JSON or not a cluster,
// an unknown preset (with the nearest name).
ClusterSpec resolve_cluster(const nlohmann::json& ref, const std::string& where,
                            const std::string& field);
// The JSON a reference stands for (the preset's or the file's content, or the object), and
// the file it came from (for relative paths inside it and for errors).
nlohmann::json cluster_json(const nlohmann::json& ref, const std::string& where,
                            const std::string& field, std::string* from = nullptr);

// Checks that p GPUs fit the cluster: p ≥ 1, p ≤ nodes × GPUs per node, and p is a multiple
// of GPUs per node whenever it spans more than one node. Throws InputError naming where/field.
void check_gpu_count(const ClusterSpec& c, int p, const std::string& where,
                     const std::string& field);

// Nodes used by p GPUs placed contiguously (ranks 0..G−1 on node 0, and so on).
inline int nodes_for(const ClusterSpec& c, int p) {
  return (p + c.gpus_per_node - 1) / c.gpus_per_node;
}

const char* to_string(IntraKind k);
const char* to_string(FabricKind k);
const char* to_string(TopologyKind k);

}  // namespace clbo::sim
