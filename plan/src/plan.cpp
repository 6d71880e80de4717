#include "clbo/plan/plan.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "clbo/core/error.hpp"
#include "clbo/core/onebit_padding.hpp"

namespace clbo {

namespace {

uint64_t ring_chunk_len(size_t n, int p, int j) {
  return ring_chunk_begin(n, p, j + 1) - ring_chunk_begin(n, p, j);
}

void add(CommPlan& plan, int src, int dst, uint64_t bytes, int round) {
  if (bytes > 0) plan.transfers.push_back(Transfer{src, dst, bytes, round});
}

}  // namespace

void ring_allreduce_plan(CommPlan& plan, size_t n, size_t elem_bytes) {
  const int p = plan.p;
  for (int s = 0; s < p - 1; ++s) {
    for (int r = 0; r < p; ++r) {
      const int chunk = ((r - s) % p + p) % p;
      add(plan, r, (r + 1) % p, ring_chunk_len(n, p, chunk) * elem_bytes, s);
    }
  }
  for (int s = 0; s < p - 1; ++s) {
    for (int r = 0; r < p; ++r) {
      const int chunk = ((r + 1 - s) % p + p) % p;
      add(plan, r, (r + 1) % p, ring_chunk_len(n, p, chunk) * elem_bytes, p - 1 + s);
    }
  }
}

void ring_allgather_plan(CommPlan& plan, uint64_t bytes, int round) {
  for (int s = 0; s + 1 < plan.p; ++s)
    for (int r = 0; r < plan.p; ++r) add(plan, r, (r + 1) % plan.p, bytes, round + s);
}

void direct_exchange_plan(CommPlan& plan, uint64_t bytes, int round) {
  for (int r = 0; r < plan.p; ++r) {
    for (int k = 1; k < plan.p; ++k) add(plan, r, (r + k) % plan.p, bytes, round);
  }
}

std::vector<OnebitExchange> onebit_exchanges(size_t n, int p) {
  if (n == 0) return {};
  const uint64_t piece = onebit_padded_size(n, p) / static_cast<uint64_t>(p) / 8;
  return {{CollKind::kAlltoall, piece, "worker sign pieces"},
          {CollKind::kAllgather, 4, "worker scales"},
          {CollKind::kAllgather, piece, "server chunks"},
          {CollKind::kAllgather, 4, "server scales"}};
}

uint64_t CommPlan::bytes_sent_by(int rank) const {
  uint64_t total = 0;
  for (const Transfer& t : transfers) total += t.src == rank ? t.bytes : 0;
  return total;
}

uint64_t CommPlan::bytes_received_by(int rank) const {
  uint64_t total = 0;
  for (const Transfer& t : transfers) total += t.dst == rank ? t.bytes : 0;
  return total;
}

uint64_t CommPlan::messages_sent_by(int rank) const {
  return static_cast<uint64_t>(std::count_if(transfers.begin(), transfers.end(),
                                             [rank](const Transfer& t) { return t.src == rank; }));
}

uint64_t CommPlan::total_bytes() const {
  uint64_t total = 0;
  for (const Transfer& t : transfers) total += t.bytes;
  return total;
}

int CommPlan::num_rounds() const {
  int rounds = 0;
  for (const Transfer& t : transfers) rounds = std::max(rounds, t.round + 1);
  return rounds;
}

CommPlan make_plan(const CommCall& call, int p) {
  if (p < 1) {
    throw InputError("make_plan", "p", std::to_string(p), "the world size must be at least 1");
  }
  CommPlan plan;
  plan.p = p;
  switch (call.kind) {
    case CollKind::kAllreduce:
    case CollKind::kSparseAllreduce:
      plan.algorithm = "ring";
      ring_allreduce_plan(plan, call.count, dtype_bytes(call.dtype));
      break;
    case CollKind::kCompressedAllreduce: {
      // clbo's algorithm runs every exchange, the allgathers included, as a direct exchange.
      plan.algorithm = "onebit_two_phase";
      int round = 0;
      for (const OnebitExchange& e : onebit_exchanges(call.count, p))
        direct_exchange_plan(plan, e.bytes, round++);
      break;
    }
    case CollKind::kTopkAllgather:
      plan.algorithm = "direct_allgather";
      direct_exchange_plan(plan, 8 * static_cast<uint64_t>(call.count));
      break;
    case CollKind::kAlltoall:
      plan.algorithm = "direct_alltoall";
      direct_exchange_plan(plan, call.count * dtype_bytes(call.dtype));
      break;
    case CollKind::kAllgather:
      plan.algorithm = "direct_allgather";
      direct_exchange_plan(plan, call.count * dtype_bytes(call.dtype));
      break;
  }
  return plan;
}

uint64_t onebit_bytes_per_rank(size_t n, int p) {
  if (n == 0 || p <= 1) return 0;
  const uint64_t pm1 = static_cast<uint64_t>(p - 1);
  return pm1 * onebit_padded_size(n, p) / (4 * static_cast<uint64_t>(p)) + 8 * pm1;
}

uint64_t ring_bytes_per_rank(size_t n, int p, int rank, size_t elem_bytes) {
  if (p <= 1) return 0;
  const uint64_t skipped =
      ring_chunk_len(n, p, (rank + 1) % p) + ring_chunk_len(n, p, (rank + 2) % p);
  return (2 * static_cast<uint64_t>(n) - skipped) * elem_bytes;
}

}  // namespace clbo
