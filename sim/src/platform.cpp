// Cluster JSON → SimGrid zones (3.32 API; docs/reference/simgrid-notes.md §1.2 and §8.1).
//
//  node zone (star)   GPU hosts, each with a split-duplex link to the node switch (NVSwitch
//                     or PCIe switch); the node CPU with its PCIe link (host staging); an
//                     aggregation host on a zero-latency FATPIPE link (fast mode's per-node
//                     flows); a router as the zone's gateway.
//  NIC                split-duplex, count × rate × efficiency, between the node and fabric.
//  single_switch      a star of node zones.
//  two_level          a star of leaf stars; each leaf's uplink is a split-duplex link of
//                     uplink_GBps (oversubscription when below nodes_per_leaf × NIC).
//  fat_tree           create_fatTree_zone (2 levels, D-mod-k routing) with node zones as
//                     leaves and the NIC as each leaf's limiter link.
#include "platform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "clbo/core/error.hpp"

namespace sg4 = simgrid::s4u;

namespace clbo::sim {

namespace {

using Dir = sg4::LinkInRoute::Direction;

void attach(sg4::NetZone* zone, const simgrid::kernel::routing::NetPoint* np, sg4::Link* link,
            simgrid::kernel::routing::NetPoint* gw = nullptr) {
  zone->add_route(const_cast<simgrid::kernel::routing::NetPoint*>(np), nullptr, gw, nullptr,
                  {sg4::LinkInRoute(link, Dir::UP)}, true);
}

sg4::Link* duplex(sg4::NetZone* z, const std::string& name, double bw, double lat) {
  return z->create_split_duplex_link(name, bw)->set_latency(lat)->seal();
}

// A zero-latency link that never limits anything: switch-internal paths.
sg4::Link* fatpipe(sg4::NetZone* z, const std::string& name) {
  return z->create_link(name, 1e15)->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)->seal();
}

struct NodeZone {
  sg4::NetZone* zone;
  simgrid::kernel::routing::NetPoint* gateway;
};

// One node with `gpus` GPUs; appends its hosts to the endpoint table.
NodeZone make_node(const ClusterSpec& c, int n, int gpus, const sg4::NetZone* parent,
                   Platform& pf) {
  sg4::NetZone* z = sg4::create_star_zone(fmt::format("node{}", n));
  z->set_parent(parent);
  for (int g = 0; g < gpus; ++g) {
    sg4::Host* h = z->create_host(fmt::format("gpu{}_{}", n, g), 1.0)->seal();
    attach(z, h->get_netpoint(),
           duplex(z, fmt::format("intra{}_{}", n, g), c.intra_Bps, c.intra_latency_s));
    pf.hosts[static_cast<size_t>(n * pf.gpus_per_node + g)] = h;
  }
  sg4::Host* cpu = z->create_host(fmt::format("cpu{}", n), 1.0)->seal();
  attach(z, cpu->get_netpoint(),
         duplex(z, fmt::format("hostlink{}", n), c.host_Bps, c.host_latency_s));
  pf.hosts[static_cast<size_t>(pf.p + n)] = cpu;
  sg4::Host* agg = z->create_host(fmt::format("agg{}", n), 1.0)->seal();
  z->add_route(agg->get_netpoint(), nullptr, nullptr, nullptr,
               {sg4::LinkInRoute(fatpipe(z, fmt::format("agglink{}", n)))}, true);
  pf.hosts[static_cast<size_t>(pf.p + pf.nodes + n)] = agg;
  auto* gw = z->create_router(fmt::format("gw{}", n));
  z->seal();
  return {z, gw};
}

double nic_latency(const ClusterSpec& c) {
  // A route between two nodes crosses both NICs; each carries half a switch traversal so a
  // single-switch route has exactly one switch latency.
  return c.nic_latency_s + c.switch_latency_s / 2;
}

void build_star(const ClusterSpec& c, Platform& pf) {
  sg4::NetZone* root = sg4::create_star_zone("fabric");
  for (int n = 0; n < pf.nodes; ++n) {
    const int gpus = std::min(pf.gpus_per_node, pf.p - n * pf.gpus_per_node);
    NodeZone nz = make_node(c, n, gpus, root, pf);
    attach(root, nz.zone->get_netpoint(),
           duplex(root, fmt::format("nic{}", n), c.node_net_Bps(), nic_latency(c)), nz.gateway);
  }
  root->seal();
}

void build_two_level(const ClusterSpec& c, Platform& pf) {
  sg4::NetZone* root = sg4::create_star_zone("fabric");
  const int leaves = (pf.nodes + c.nodes_per_leaf - 1) / c.nodes_per_leaf;
  for (int l = 0; l < leaves; ++l) {
    sg4::NetZone* leaf = sg4::create_star_zone(fmt::format("leaf{}", l));
    leaf->set_parent(root);
    for (int n = l * c.nodes_per_leaf; n < std::min(pf.nodes, (l + 1) * c.nodes_per_leaf); ++n) {
      const int gpus = std::min(pf.gpus_per_node, pf.p - n * pf.gpus_per_node);
      NodeZone nz = make_node(c, n, gpus, leaf, pf);
      attach(leaf, nz.zone->get_netpoint(),
             duplex(leaf, fmt::format("nic{}", n), c.node_net_Bps(), nic_latency(c)), nz.gateway);
    }
    // The leaf's uplink port is a small zone of its own holding the gateway router: SimGrid
    // 3.32 mis-routes to a router placed directly in a star whose other members are zones
    // (it looks the router's id up among the zones), while zone-to-zone routes are right.
    sg4::NetZone* port = sg4::create_star_zone(fmt::format("leafport{}", l));
    port->set_parent(leaf);
    auto* lgw = port->create_router(fmt::format("leafgw{}", l));
    port->add_route(lgw, nullptr, nullptr, nullptr,
                    {sg4::LinkInRoute(fatpipe(port, fmt::format("leafport{}", l)))}, true);
    port->seal();
    leaf->add_route(port->get_netpoint(), nullptr, lgw, nullptr,
                    {sg4::LinkInRoute(fatpipe(leaf, fmt::format("leafcore{}", l)))}, true);
    leaf->seal();
    attach(root, leaf->get_netpoint(),
           duplex(root, fmt::format("uplink{}", l), c.uplink_Bps, c.switch_latency_s / 2), lgw);
  }
  root->seal();
}

void build_fat_tree(const ClusterSpec& c, Platform& pf) {
  // Fewer nodes than a leaf switch holds sit on one leaf switch.
  const unsigned per_leaf = static_cast<unsigned>(std::min(c.nodes_per_leaf, pf.nodes));
  const unsigned leaves = (static_cast<unsigned>(pf.nodes) + per_leaf - 1) / per_leaf;
  const sg4::FatTreeParams params(2, {per_leaf, leaves}, {1, static_cast<unsigned>(c.spines)},
                                  {1, 1});
  auto netpoint = [&](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id)
      -> std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*> {
    const int n = static_cast<int>(id);
    if (n >= pf.nodes)  // unused ports of the last leaf switch hold an idle host
      return {zone->create_host(fmt::format("unused{}", n), 1.0)->seal()->get_netpoint(), nullptr};
    const int gpus = std::min(pf.gpus_per_node, pf.p - n * pf.gpus_per_node);
    NodeZone nz = make_node(c, n, gpus, zone, pf);
    return {nz.zone->get_netpoint(), nz.gateway};
  };
  // SimGrid may ask for a leaf's limiter more than once; every call gets its own link.
  int limiters = 0;
  auto limiter = [&](sg4::NetZone* zone, const std::vector<unsigned long>&,
                     unsigned long id) -> sg4::Link* {
    return zone->create_link(fmt::format("nic{}_{}", id, limiters++), c.node_net_Bps())
        ->set_latency(c.nic_latency_s)
        ->seal();
  };
  sg4::NetZone* ft = sg4::create_fatTree_zone(
      "fabric", nullptr, params, sg4::ClusterCallbacks(netpoint, {}, limiter), c.node_net_Bps(),
      c.switch_latency_s, sg4::Link::SharingPolicy::SPLITDUPLEX);
  ft->seal();
}

Platform load_xml(sg4::Engine& e, const ClusterSpec& c, int p) {
  Platform pf;
  pf.p = p;
  pf.gpus_per_node = std::min(c.gpus_per_node, p);
  pf.nodes = (p + pf.gpus_per_node - 1) / pf.gpus_per_node;
  pf.built = false;
  pf.hosts.assign(static_cast<size_t>(p + 2 * pf.nodes), nullptr);
  try {
    e.load_platform(c.xml_file);
  } catch (const std::exception& ex) {
    throw InputError(c.xml_file, "(platform)", c.xml_file,
                     std::string("SimGrid could not load the platform: ") + ex.what());
  }
  std::vector<std::string> known;
  for (const sg4::Host* h : e.get_all_hosts()) known.push_back(h->get_name());
  std::set<std::string> seen;
  for (int r = 0; r < p; ++r) {
    const std::string& name = c.xml_hosts[static_cast<size_t>(r)];
    sg4::Host* h = sg4::Host::by_name_or_null(name);
    const std::string field = fmt::format("hosts[{}]", r);
    if (!h)
      throw InputError(c.file, field, name,
                       fmt::format("no such host in {}{}", c.xml_file, did_you_mean(name, known)));
    if (!seen.insert(name).second)
      throw InputError(c.file, field, name, "a host can hold only one rank");
    pf.hosts[static_cast<size_t>(r)] = h;
  }
  return pf;
}

}  // namespace

void configure_network(sg4::Engine& e, const ClusterSpec& c) {
  e.set_config("network/model:" +
               (c.network_model.empty() ? std::string("CM02") : c.network_model));
  e.set_config(std::string("network/crosstraffic:") + (c.crosstraffic ? "1" : "0"));
  // 0 removes the TCP window bound (checked on 3.32, docs/reference/simgrid-notes.md §2.3).
  e.set_config("network/TCP-gamma:" + fmt::format("{}", c.tcp_gamma_bytes));
  if (c.network_model != "LV08") e.set_config("network/weight-S:0");
}

Platform build_platform(sg4::Engine& e, const ClusterSpec& c, int p) {
  if (c.is_xml()) return load_xml(e, c, p);
  Platform pf;
  pf.p = p;
  pf.gpus_per_node = c.gpus_per_node;
  pf.nodes = (p + c.gpus_per_node - 1) / c.gpus_per_node;
  pf.hosts.assign(static_cast<size_t>(p + 2 * pf.nodes), nullptr);
  switch (c.topology) {
    case TopologyKind::kSingleSwitch:
      build_star(c, pf);
      break;
    case TopologyKind::kTwoLevel:
      pf.nodes_per_leaf = c.nodes_per_leaf;
      build_two_level(c, pf);
      break;
    case TopologyKind::kFatTree:
      pf.nodes_per_leaf = std::min(c.nodes_per_leaf, pf.nodes);
      build_fat_tree(c, pf);
      break;
  }
  return pf;
}

}  // namespace clbo::sim
