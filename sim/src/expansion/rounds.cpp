#include "clbo/sim/expansion/rounds.hpp"

#include <algorithm>
#include <bit>
#include <functional>

#include "clbo/core/error.hpp"
#include "segments.hpp"

namespace clbo::sim {

namespace {

Round& round_at(std::vector<Round>& rounds, size_t i) {
  if (rounds.size() <= i) rounds.resize(i + 1);
  return rounds[i];
}

CommPlan empty_plan(int p) {
  CommPlan plan;
  plan.p = p;
  return plan;
}

}  // namespace

std::vector<Round> rounds_from_plan(const CommPlan& plan) {
  std::vector<Round> rounds(static_cast<size_t>(plan.num_rounds()));
  for (const Transfer& t : plan.transfers)
    rounds[static_cast<size_t>(t.round)].push_back(Xfer{t.src, t.dst, t.bytes, 1});
  return rounds;
}

std::vector<Round> ring_allreduce_rounds(int p, size_t count, size_t elem_bytes) {
  CommPlan plan = empty_plan(p);
  ring_allreduce_plan(plan, count, elem_bytes);
  return rounds_from_plan(plan);
}

std::vector<Round> ring_allgather_rounds(int p, uint64_t bytes_per_rank) {
  CommPlan plan = empty_plan(p);
  ring_allgather_plan(plan, bytes_per_rank);
  return rounds_from_plan(plan);
}

std::vector<Round> alltoall_rounds(int p, uint64_t bytes_per_pair) {
  CommPlan plan = empty_plan(p);
  direct_exchange_plan(plan, bytes_per_pair);
  return rounds_from_plan(plan);
}

std::vector<Round> binomial_allreduce_rounds(int p, uint64_t bytes) {
  std::vector<Round> rounds;
  if (p <= 1 || bytes == 0) return rounds;
  int levels = 0;
  while ((1 << levels) < p) ++levels;
  for (int r = 1; r <= levels; ++r) {
    Round round;
    for (int v = 0; v < p; v += 1 << r)
      if (v + (1 << (r - 1)) < p) round.push_back(Xfer{v + (1 << (r - 1)), v, bytes, 1});
    rounds.push_back(std::move(round));
  }
  std::vector<Round> bcast(static_cast<size_t>(levels));
  for (int w = 1; w < p; ++w) {
    const int top = std::bit_width(static_cast<unsigned>(w)) - 1;  // ⌊log₂w⌋
    const int round = std::popcount(static_cast<unsigned>(w)) - 1;
    bcast[static_cast<size_t>(round)].push_back(Xfer{w - (1 << top), w, bytes, 1});
  }
  for (Round& r : bcast)
    if (!r.empty()) rounds.push_back(std::move(r));
  return rounds;
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
        add_transfer(r, n * g + l, n * g + (l + 1) % g,
                     chunk(count, g, ((l - s) % g + g) % g) * eb);
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
        add_transfer(r, n * g + l, ((n + 1) % nodes) * g + l, chunk(owned, nodes, piece) * eb);
      }
    }
    rounds.push_back(std::move(r));
  }
  // Allgather inside each node.
  for (int s = 0; s < g - 1; ++s) {
    Round r;
    for (int n = 0; n < nodes; ++n)
      for (int l = 0; l < g; ++l)
        add_transfer(r, n * g + l, n * g + (l + 1) % g,
                     chunk(count, g, ((l + 1 - s) % g + g) % g) * eb);
    rounds.push_back(std::move(r));
  }
  return rounds;
}

}  // namespace clbo::sim
