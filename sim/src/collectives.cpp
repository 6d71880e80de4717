#include "clbo/sim/collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "clbo/core/error.hpp"
#include "clbo/core/onebit_padding.hpp"
#include "segments.hpp"

namespace clbo::sim {

namespace {

constexpr double kUs = 1e-6;

// docs/reference/published.md §5.3, "NCCL's own cost model" (src/graph/tuning.cc), in µs.
// [ring=0 | tree=1][nvlink=0 | pcie=1 | network=2][LL, LL128, Simple]
constexpr double kHopUs[2][3][3] = {
    {{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}},
    {{0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}},
};
// Base latency per collective. docs/reference/published.md lists Ring LL/LL128/Simple and Tree LL;
// the tree's LL128 and Simple bases are taken equal to the ring's (documented assumption).
constexpr double kBaseUs[2][3] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}};

int proto_index(Proto p) {
  return p == Proto::kLL ? 0 : p == Proto::kLL128 ? 1 : 2;
}
int algo_index(Algo a) {
  return a == Algo::kTree ? 1 : 0;
}

int ceil_log2(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

std::vector<Proto> protocols(const ExpandOptions& o) {
  if (o.protocol != Proto::kAuto) return {o.protocol};
  return {Proto::kLL, Proto::kLL128, Proto::kSimple};
}

void add(Round& r, int src, int dst, uint64_t bytes) {
  if (bytes > 0 && src != dst) r.push_back(Xfer{src, dst, bytes, 1});
}

Round& round_at(std::vector<Round>& rounds, size_t i) {
  if (rounds.size() <= i) rounds.resize(i + 1);
  return rounds[i];
}

// Rank-level rounds moved onto the nodes' CPU endpoints (MPI with host staging): ranks of
// one node share their CPU, so their messages to each other become local copies.
std::vector<Round> onto_hosts(std::vector<Round> rounds, int p, int g) {
  for (Round& r : rounds)
    for (Xfer& x : r) {
      x.src = p + x.src / g;
      x.dst = p + x.dst / g;
    }
  return rounds;
}

}  // namespace

Segment make_segment(std::string label, int call, std::vector<Round> rounds, double hop_intra,
                     double hop_net, double base, double wire, const ExpandOptions& o, int target,
                     bool pipeline) {
  Segment s;
  s.label = std::move(label);
  s.call = call;
  s.rounds = std::move(rounds);
  s.hop_intra_s = hop_intra;
  s.hop_net_s = hop_net;
  s.start_latency_s = base;
  s.wire_factor = wire;
  if (!o.exact) {
    uint64_t biggest = 0;
    for (const Round& r : s.rounds)
      for (const Xfer& x : r) biggest = std::max(biggest, x.bytes);
    const int rounds = target > 0        ? target
                       : biggest < 65536 ? o.small_target_rounds
                                         : o.target_rounds;
    if (pipeline && o.tree_merge_fill)
      merge_pipeline_rounds(s.rounds, rounds);
    else
      merge_rounds(s.rounds, rounds);
  }
  return s;
}

Segment compute_segment(std::string label, int call, double seconds, bool compression) {
  Segment s;
  s.label = std::move(label);
  s.call = call;
  s.compute_s = seconds;
  s.compression = compression;
  return s;
}

namespace {

Segment nccl_ring_allgather(const ClusterSpec& c, int p, uint64_t bytes_per_rank,
                            const std::string& label, int call, const ExpandOptions& o) {
  const Proto pr = nccl_choose_ring_protocol(c, p, static_cast<double>(bytes_per_rank), o);
  return make_segment(fmt::format("{} (ring/{})", label, to_string(pr)), call,
                      ring_allgather_rounds(p, bytes_per_rank),
                      nccl_hop_s(c, Algo::kRing, pr, false), nccl_hop_s(c, Algo::kRing, pr, true),
                      nccl_base_s(Algo::kRing, pr), 1 / proto_efficiency(pr), o);
}

Segment nccl_alltoall(const ClusterSpec& c, int p, uint64_t bytes_per_pair,
                      const std::string& label, int call, const ExpandOptions& o) {
  // NCCL runs all-to-all as grouped send/recv with the Simple protocol.
  const Proto pr = Proto::kSimple;
  Segment s =
      make_segment(fmt::format("{} (all-to-all)", label), call, alltoall_rounds(p, bytes_per_pair),
                   nccl_hop_s(c, Algo::kRing, pr, false), nccl_hop_s(c, Algo::kRing, pr, true),
                   nccl_base_s(Algo::kRing, pr), 1.0, o);
  s.alltoall = true;
  return s;
}

std::vector<Segment> nccl_allreduce(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                    const ExpandOptions& o) {
  const uint64_t bytes = call.count * dtype_bytes(call.dtype);
  if (o.allreduce == Algo::kBinomial)
    throw Error("the binomial allreduce is MPI's (libnbc); NCCL runs ring or tree");
  const NcclChoice ch = nccl_choose_allreduce(c, p, static_cast<double>(bytes), o);
  std::vector<Round> rounds;
  const int g = std::min(c.gpus_per_node, p);
  uint64_t chain_bytes = 0;
  switch (ch.algo) {
    case Algo::kTree: {
      const bool chain = o.exact || o.tree_chains || g == 1;
      TreePlan t = tree_allreduce_rounds(p, g, bytes, o.tree_chunks, chain);
      rounds = std::move(t.rounds);
      chain_bytes = t.chain_bytes;
      break;
    }
    case Algo::kHierarchical:
      rounds = hierarchical_allreduce_rounds(p, g, call.count, dtype_bytes(call.dtype));
      break;
    default: {
      CommCall ring = call;
      ring.kind = CollKind::kAllreduce;
      rounds = rounds_from_plan(make_plan(ring, p));
    }
  }
  const Algo hops = ch.algo == Algo::kTree ? Algo::kTree : Algo::kRing;
  std::vector<Segment> out;
  out.push_back(
      make_segment(fmt::format("allreduce {} {} ({}/{})", call.what, to_string(call.dtype),
                               to_string(ch.algo), to_string(ch.proto)),
                   idx, std::move(rounds), nccl_hop_s(c, hops, ch.proto, false),
                   nccl_hop_s(c, hops, ch.proto, true), nccl_base_s(hops, ch.proto),
                   1 / proto_efficiency(ch.proto), o,
                   ch.algo == Algo::kTree ? o.tree_target_rounds : 0, ch.algo == Algo::kTree));
  out.back().analytic_bytes = chain_bytes;
  out.back().pipelined = ch.algo == Algo::kTree;
  return out;
}

std::vector<Segment> onebit_nccl(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                 const KernelModel& km, const ExpandOptions& o) {
  const uint64_t n = onebit_padded_size(call.count, p);
  const uint64_t piece = n / static_cast<uint64_t>(p) / 8;
  std::vector<Segment> s;
  s.push_back(compute_segment("compress (worker error feedback + sign + scale)", idx,
                              km.worker_compress_s(n), true));
  s.push_back(nccl_alltoall(c, p, piece, "1-bit phase 1: worker sign pieces", idx, o));
  s.push_back(nccl_ring_allgather(c, p, 4, "1-bit phase 1: worker scales allgather", idx, o));
  s.push_back(compute_segment("server average + re-compress", idx, km.server_s(n, p), true));
  s.push_back(nccl_ring_allgather(c, p, piece, "1-bit phase 2: server chunks allgather", idx, o));
  s.push_back(nccl_ring_allgather(c, p, 4, "1-bit phase 2: server scales allgather", idx, o));
  s.push_back(compute_segment("unpack", idx, km.unpack_s(n), true));
  return s;
}

std::vector<Segment> onebit_mpi(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                const KernelModel& km, const ExpandOptions& o) {
  const uint64_t n = onebit_padded_size(call.count, p);
  const uint64_t piece = n / static_cast<uint64_t>(p) / 8;
  const int g = std::min(c.gpus_per_node, p);
  const double net = c.software_latency_s >= 0 ? c.software_latency_s : o.mpi_latency_s;
  const double intra = o.mpi_latency_s;  // shared-memory or CUDA IPC message
  auto mpi = [&](const std::string& label, std::vector<Round> rounds) {
    return make_segment("MPI " + label, idx,
                        o.mpi_cuda_aware ? std::move(rounds) : onto_hosts(std::move(rounds), p, g),
                        intra, net, 0, 1.0, o);
  };
  // Device↔host copies of each rank's buffers through the node's PCIe path (DeepSpeed's
  // mpi.py stages cupy buffers in host memory when MPI is not CUDA-aware).
  auto stage = [&](const std::string& label, uint64_t bytes, bool to_host) {
    Round r;
    for (int rank = 0; rank < p; ++rank) {
      const int host = p + rank / g;
      add(r, to_host ? rank : host, to_host ? host : rank, bytes);
    }
    Segment s =
        make_segment("stage " + label, idx, {r}, o.copy_latency_s, o.copy_latency_s, 0, 1.0, o);
    s.staging = true;
    return s;
  };
  std::vector<Segment> s;
  s.push_back(compute_segment("compress (worker error feedback + sign + scale)", idx,
                              km.worker_compress_s(n), true));
  if (!o.mpi_cuda_aware) s.push_back(stage("worker signs device→host", n / 8 + 4, true));
  s.push_back(mpi("phase 1: gather of sign pieces to their servers", alltoall_rounds(p, piece)));
  s.back().alltoall = true;
  s.push_back(mpi("phase 1: allgather of worker scales", ring_allgather_rounds(p, 4)));
  if (!o.mpi_cuda_aware) s.push_back(stage("gathered pieces host→device", n / 8, false));
  s.push_back(compute_segment("server average + re-compress", idx, km.server_s(n, p), true));
  if (!o.mpi_cuda_aware) s.push_back(stage("server chunk device→host", piece + 4, true));
  s.push_back(mpi("phase 2: allgather of server chunks", ring_allgather_rounds(p, piece)));
  s.push_back(mpi("phase 2: allgather of server scales", ring_allgather_rounds(p, 4)));
  if (!o.mpi_cuda_aware)
    s.push_back(stage("server chunks host→device", n / 8 + 4 * static_cast<uint64_t>(p), false));
  s.push_back(compute_segment("unpack", idx, km.unpack_s(n), true));
  return s;
}

}  // namespace

const char* to_string(Backend b) {
  return b == Backend::kNccl ? "nccl" : b == Backend::kMpi ? "mpi" : "mpi_host";
}
const char* to_string(Algo a) {
  switch (a) {
    case Algo::kAuto:
      return "auto";
    case Algo::kRing:
      return "ring";
    case Algo::kTree:
      return "tree";
    case Algo::kHierarchical:
      return "hierarchical";
    case Algo::kBinomial:
      return "binomial";
  }
  return "?";
}
const char* to_string(Proto p) {
  switch (p) {
    case Proto::kAuto:
      return "auto";
    case Proto::kLL:
      return "LL";
    case Proto::kLL128:
      return "LL128";
    case Proto::kSimple:
      return "Simple";
  }
  return "?";
}

double proto_efficiency(Proto pr) {
  // docs/reference/published.md: LL uses half the wire, LL128 93.75% of it.
  return pr == Proto::kLL ? 0.5 : pr == Proto::kLL128 ? 0.9375 : 1.0;
}

double nccl_hop_s(const ClusterSpec& c, Algo a, Proto pr, bool network) {
  if (network && c.software_latency_s >= 0) return c.software_latency_s;
  const int link = network ? 2 : (c.intra_kind == IntraKind::kNvlink ? 0 : 1);
  return kHopUs[algo_index(a)][link][proto_index(pr)] * kUs;
}

double nccl_base_s(Algo a, Proto pr) {
  return kBaseUs[algo_index(a)][proto_index(pr)] * kUs;
}

double nccl_predict_allreduce(const ClusterSpec& c, int p, double bytes, Algo a, Proto pr) {
  if (p <= 1) return 0;
  const int g = std::min(c.gpus_per_node, p);
  const int nodes = (p + g - 1) / g;
  const double eff = proto_efficiency(pr);
  const double intra = c.intra_Bps * eff, net = c.node_net_Bps() * eff;
  switch (a) {
    case Algo::kTree:
      return nccl_base_s(a, pr) +
             2 * ((g - 1) * nccl_hop_s(c, a, pr, false) +
                  ceil_log2(nodes) * nccl_hop_s(c, a, pr, true)) +
             2 * bytes / std::min(intra, nodes > 1 ? net : intra);
    case Algo::kHierarchical:
      return nccl_base_s(Algo::kRing, pr) + 2 * (g - 1) * nccl_hop_s(c, Algo::kRing, pr, false) +
             2 * (nodes - 1) * nccl_hop_s(c, Algo::kRing, pr, true) +
             2.0 * (g - 1) / g * bytes / intra +
             (nodes > 1 ? 2.0 * (nodes - 1) / nodes * bytes / net : 0.0);
    default:
      return nccl_base_s(Algo::kRing, pr) +
             2.0 * (p - 1) * nccl_hop_s(c, Algo::kRing, pr, nodes > 1) +
             2.0 * (p - 1) / p * bytes / (nodes > 1 ? std::min(intra, net) : intra);
  }
}

NcclChoice nccl_choose_allreduce(const ClusterSpec& c, int p, double bytes,
                                 const ExpandOptions& o) {
  const int nodes = (p + c.gpus_per_node - 1) / c.gpus_per_node;
  std::vector<Algo> algos;
  if (o.allreduce == Algo::kAuto) {
    algos = {Algo::kRing};
    if (nodes > 1) algos.push_back(Algo::kTree);  // NCCL's tree is an inter-node algorithm
  } else {
    algos = {o.allreduce};
  }
  NcclChoice best{algos.front(), Proto::kSimple, std::numeric_limits<double>::infinity()};
  for (Algo a : algos)
    for (Proto pr : protocols(o)) {
      const double t = nccl_predict_allreduce(c, p, bytes, a, pr);
      if (t < best.predicted_s) best = {a, pr, t};
    }
  return best;
}

Proto nccl_choose_ring_protocol(const ClusterSpec& c, int p, double b, const ExpandOptions& o) {
  const int nodes = (p + c.gpus_per_node - 1) / c.gpus_per_node;
  Proto best = Proto::kSimple;
  double best_t = std::numeric_limits<double>::infinity();
  for (Proto pr : protocols(o)) {
    const double bw =
        (nodes > 1 ? std::min(c.intra_Bps, c.node_net_Bps()) : c.intra_Bps) * proto_efficiency(pr);
    const double t = nccl_base_s(Algo::kRing, pr) +
                     (p - 1) * (nccl_hop_s(c, Algo::kRing, pr, nodes > 1) + b / bw);
    if (t < best_t) best = pr, best_t = t;
  }
  return best;
}

TreePlan tree_allreduce_rounds(int p, int g, uint64_t bytes, int min_chunks, bool with_chain) {
  TreePlan plan;
  std::vector<Round>& rounds = plan.rounds;
  if (p <= 1 || bytes == 0) return plan;
  const int nodes = (p + g - 1) / g;
  // Node-level binary tree in in-order layout (root in the middle); the second tree is its
  // mirror image, so a node that is a leaf in one tree is mostly interior in the other, as
  // in NCCL's double binary tree.
  std::vector<int> node_parent(static_cast<size_t>(nodes), -1);
  std::function<int(int, int)> build = [&](int lo, int hi) -> int {
    if (lo > hi) return -1;
    const int mid = (lo + hi) / 2;
    for (int child : {build(lo, mid - 1), build(mid + 1, hi)})
      if (child >= 0) node_parent[static_cast<size_t>(child)] = mid;
    return mid;
  };
  build(0, nodes - 1);
  for (int tree = 0; tree < 2; ++tree) {
    auto node_of_tree = [&](int n) { return tree == 0 ? n : nodes - 1 - n; };
    // Rank tree: the node's first GPU joins the inter-node tree, the others hang below it
    // as an intra-node chain (emitted only with_chain).
    std::vector<int> parent(static_cast<size_t>(p), -1);
    std::vector<bool> member(static_cast<size_t>(p), false);
    for (int n = 0; n < nodes; ++n) {
      const int head = node_of_tree(n) * g;
      const int np = node_parent[static_cast<size_t>(n)];
      parent[static_cast<size_t>(head)] = np < 0 ? -1 : node_of_tree(np) * g;
      member[static_cast<size_t>(head)] = true;
      for (int l = 1; l < g && head + l < p; ++l) {
        if (with_chain) {
          parent[static_cast<size_t>(head + l)] = head + l - 1;
          member[static_cast<size_t>(head + l)] = true;
        }
        plan.chain_depth = std::max(plan.chain_depth, l);
      }
    }
    std::vector<std::vector<int>> children(static_cast<size_t>(p));
    int root = -1;
    for (int r = 0; r < p; ++r) {
      if (!member[static_cast<size_t>(r)]) continue;
      if (parent[static_cast<size_t>(r)] < 0)
        root = r;
      else
        children[static_cast<size_t>(parent[static_cast<size_t>(r)])].push_back(r);
    }
    std::vector<int> up(static_cast<size_t>(p), 0), depth(static_cast<size_t>(p), 0);
    std::function<int(int)> level = [&](int v) -> int {
      int l = 0;
      for (int ch : children[static_cast<size_t>(v)]) l = std::max(l, level(ch) + 1);
      return up[static_cast<size_t>(v)] = l;
    };
    level(root);
    std::function<void(int, int)> deepen = [&](int v, int d) {
      depth[static_cast<size_t>(v)] = d;
      for (int ch : children[static_cast<size_t>(v)]) deepen(ch, d + 1);
    };
    deepen(root, 0);
    const int height = up[static_cast<size_t>(root)];
    const int full_height = height + (with_chain ? 0 : plan.chain_depth);
    const uint64_t half = tree == 0 ? bytes / 2 : bytes - bytes / 2;
    // NCCL pipelines the tree in small chunks, so filling and draining the pipeline (about
    // 2·height rounds) costs little; keep that overhead near 3% of the rounds.
    const uint64_t chunks = std::clamp<uint64_t>(
        std::max<uint64_t>(static_cast<uint64_t>(min_chunks),
                           64ull * static_cast<uint64_t>(std::max(full_height, 1))),
        1, std::max<uint64_t>(half, 1));
    plan.chunk_bytes = std::max(plan.chunk_bytes, half / chunks);
    if (!with_chain)  // each chain edge carries the tree's half up and back down
      plan.chain_bytes += 2 * half * static_cast<uint64_t>(p - nodes);
    const uint64_t stand_ins = with_chain ? 0 : 2 * static_cast<uint64_t>(plan.chain_depth);
    for (uint64_t j = 0; j < chunks + stand_ins; ++j) {
      const bool real = j < chunks;
      const uint64_t chunk = half / chunks + (real && j < half % chunks ? 1 : 0);
      if (chunk == 0) continue;
      for (int v = 0; v < p; ++v) {
        const size_t sv = static_cast<size_t>(v);
        if (!member[sv]) continue;
        if (parent[sv] >= 0)
          round_at(rounds, j + static_cast<size_t>(up[sv]))
              .push_back(Xfer{v, parent[sv], chunk, 1, real});
        for (int ch : children[sv])
          round_at(rounds, j + static_cast<size_t>(height + depth[sv]))
              .push_back(Xfer{v, ch, chunk, 1, real});
      }
    }
  }
  return plan;
}

std::vector<Round> hierarchical_allreduce_rounds(int p, int g, size_t count, size_t eb) {
  std::vector<Round> rounds;
  if (p <= 1) return rounds;
  const int nodes = p / g;
  if (nodes * g != p) throw Error("hierarchical allreduce needs whole nodes");
  auto chunk = [](size_t n, int parts, int j) {
    return ring_chunk_begin(n, parts, j + 1) - ring_chunk_begin(n, parts, j);
  };
  // Reduce-scatter inside each node: local rank l ends owning chunk (l+1) mod g.
  for (int s = 0; s < g - 1; ++s) {
    Round r;
    for (int n = 0; n < nodes; ++n)
      for (int l = 0; l < g; ++l)
        add(r, n * g + l, n * g + (l + 1) % g, chunk(count, g, ((l - s) % g + g) % g) * eb);
    rounds.push_back(std::move(r));
  }
  // One inter-node ring allreduce per local rank over the chunk it owns.
  for (int s = 0; s < 2 * (nodes - 1); ++s) {
    Round r;
    for (int l = 0; l < g; ++l) {
      const size_t owned = chunk(count, g, (l + 1) % g);
      const int sub = s < nodes - 1 ? s : s - (nodes - 1);
      for (int n = 0; n < nodes; ++n) {
        const int piece = s < nodes - 1 ? ((n - sub) % nodes + nodes) % nodes
                                        : ((n + 1 - sub) % nodes + nodes) % nodes;
        add(r, n * g + l, ((n + 1) % nodes) * g + l, chunk(owned, nodes, piece) * eb);
      }
    }
    rounds.push_back(std::move(r));
  }
  // Allgather inside each node.
  for (int s = 0; s < g - 1; ++s) {
    Round r;
    for (int n = 0; n < nodes; ++n)
      for (int l = 0; l < g; ++l)
        add(r, n * g + l, n * g + (l + 1) % g, chunk(count, g, ((l + 1 - s) % g + g) % g) * eb);
    rounds.push_back(std::move(r));
  }
  return rounds;
}

std::vector<Round> ring_allgather_rounds(int p, uint64_t b) {
  std::vector<Round> rounds;
  for (int s = 0; s + 1 < p; ++s) {
    Round r;
    for (int rank = 0; rank < p; ++rank) add(r, rank, (rank + 1) % p, b);
    rounds.push_back(std::move(r));
  }
  return rounds;
}

std::vector<Round> alltoall_rounds(int p, uint64_t b) {
  Round r;
  r.reserve(static_cast<size_t>(p) * static_cast<size_t>(std::max(p - 1, 0)));
  for (int shift = 1; shift < p; ++shift)
    for (int rank = 0; rank < p; ++rank) add(r, rank, (rank + shift) % p, b);
  std::vector<Round> rounds;
  if (!r.empty()) rounds.push_back(std::move(r));
  return rounds;
}

std::vector<Segment> expand_call(const CommCall& call, int idx, const ClusterSpec& c, int p,
                                 const KernelModel& km, const ExpandOptions& o) {
  if (o.backend == Backend::kMpiHost) return mpi_host_expand_call(call, idx, c, p, km, o);
  std::vector<Segment> out;
  switch (call.kind) {
    case CollKind::kSparseAllreduce:
      out.push_back(compute_segment("compaction (shared mask + gather)", idx,
                                    km.compaction_s(o.param_count, call.count), true));
      [[fallthrough]];
    case CollKind::kAllreduce: {
      auto s = nccl_allreduce(call, idx, c, p, o);
      out.insert(out.end(), s.begin(), s.end());
      break;
    }
    case CollKind::kCompressedAllreduce:
      out = o.backend == Backend::kNccl ? onebit_nccl(call, idx, c, p, km, o)
                                        : onebit_mpi(call, idx, c, p, km, o);
      break;
    case CollKind::kTopkAllgather:
      out.push_back(nccl_ring_allgather(c, p, 8 * static_cast<uint64_t>(call.count),
                                        "top-k (index, value) allgather", idx, o));
      break;
    case CollKind::kAllgather:
      out.push_back(nccl_ring_allgather(c, p, call.count * dtype_bytes(call.dtype),
                                        fmt::format("allgather {}", call.what), idx, o));
      break;
    case CollKind::kAlltoall:
      out.push_back(nccl_alltoall(c, p, call.count * dtype_bytes(call.dtype),
                                  fmt::format("alltoall {}", call.what), idx, o));
      break;
  }
  return out;
}

Program calls_program(const std::vector<CommCall>& calls, const ClusterSpec& c, int p,
                      const KernelModel& km, const ExpandOptions& o) {
  Program prog;
  prog.p = p;
  prog.gpus_per_node = c.gpus_per_node;
  for (const auto& call : calls) {
    auto s = expand_call(call, 0, c, p, km, o);
    prog.segments.insert(prog.segments.end(), s.begin(), s.end());
  }
  return prog;
}

}  // namespace clbo::sim
