// CommPlan: one collective call expanded into its point-to-point transfers, with exact
// byte counts, in dependency order (transfers of one `round` may run concurrently). The
// real backends must move exactly these bytes, and the simulator executes these transfers.
// This header depends on core only, so the simulator can use it without linking kernels.
//
// The plans mirror clbo's algorithms (algorithms.hpp) message for message:
//   kAllreduce           "ring": 2(p−1) rounds; in reduce-scatter round s (0 ≤ s < p−1)
//                        rank r sends chunk (r−s) mod p to r+1, in allgather round p−1+s
//                        it sends chunk (r+1−s) mod p; chunk j = [j·n/p, (j+1)·n/p) of
//                        `count` elements of dtype_bytes(dtype) each.
//   kSparseAllreduce     "ring" over the compacted `count` elements (same as above).
//   kCompressedAllreduce "onebit_two_phase": round 0 all-to-all of c/8-byte sign pieces,
//                        round 1 allgather of 4-byte worker scales, round 2 allgather of
//                        c/8-byte server sign chunks, round 3 allgather of 4-byte server
//                        scales (c = n'/p, n' the padded size; dtype is ignored).
//   kTopkAllgather       "direct_allgather" of one 8·k-byte message per rank (k uint32
//                        indices then k fp32 values; `count` = k, dtype is ignored).
//   kAlltoall            "direct_alltoall": `count` elements per destination block.
//   kAllgather           "direct_allgather": `count` elements contributed per rank.
// Messages of zero bytes are never sent, so they never appear in a plan; at p = 1 every
// plan is empty.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "clbo/core/onebit_padding.hpp"  // the padding rule onebit_exchanges sizes by
#include "clbo/core/schedule.hpp"

namespace clbo {

struct Transfer {
  int src = 0, dst = 0;
  uint64_t bytes = 0;
  int round = 0;  // transfers of one round are independent of each other
};

struct CommPlan {
  std::string algorithm;  // "ring", "onebit_two_phase", "direct_alltoall", "direct_allgather"
  int p = 1;
  std::vector<Transfer> transfers;
  uint64_t bytes_sent_by(int rank) const;
  uint64_t bytes_received_by(int rank) const;
  uint64_t messages_sent_by(int rank) const;
  uint64_t total_bytes() const;
  int num_rounds() const;  // 1 + the largest round, 0 for an empty plan
};

// The plan of one call as executed by clbo's algorithms on a flat world of p ranks (p ≥ 1).
// For sparse allreduce, `call.count` is the compacted length.
CommPlan make_plan(const CommCall& call, int p);

// The builders make_plan composes, one per transfer pattern, each the single definition of
// that pattern (the simulator expands library collectives with the same ones):
//   ring_allreduce_plan    the "ring" above: n elements of elem_bytes each;
//   ring_allgather_plan    p−1 rounds, in each every rank sends `bytes` to rank+1 (the ring
//                          NCCL runs for ncclAllGather; per rank it sends what the direct
//                          allgather sends);
//   direct_exchange_plan   one round, every rank sends `bytes` to every other rank, in
//                          order of rank then distance (r → r+1, r+2, …): the direct
//                          all-to-all (`bytes` per destination block) and direct allgather.
// `round` offsets the rounds, so phases can be appended to one plan.
void ring_allreduce_plan(CommPlan& plan, size_t n, size_t elem_bytes);
void ring_allgather_plan(CommPlan& plan, uint64_t bytes, int round = 0);
void direct_exchange_plan(CommPlan& plan, uint64_t bytes, int round = 0);

// The four exchanges of the 1-bit two-phase scheme, in order. `kind` is kAlltoall (each rank
// sends `bytes` to every other rank, a different block to each) or kAllgather (each rank
// contributes `bytes` that every other rank receives); `name` is the one name reports and
// the simulator give the exchange. Empty for n = 0 (the algorithm returns before any).
struct OnebitExchange {
  CollKind kind;
  uint64_t bytes;
  const char* name;
};
std::vector<OnebitExchange> onebit_exchanges(size_t n, int p);

// Closed forms used by reports and cross-checked against make_plan in tests.
uint64_t onebit_bytes_per_rank(size_t n, int p);  // (p−1)·n'/(4p) + 8(p−1); 0 for n = 0
// Bytes rank `rank` sends in a ring allreduce of n elements: every chunk except
// (rank+1) mod p in the reduce-scatter and every chunk except (rank+2) mod p in the
// allgather, i.e. elem_bytes·(2n − |chunk rank+1| − |chunk rank+2|); 0 at p = 1.
uint64_t ring_bytes_per_rank(size_t n, int p, int rank, size_t elem_bytes);

// The element range [begin, end) of ring chunk j of n elements over p ranks:
// [j·n/p, (j+1)·n/p) with integer division. Shared by the ring algorithm and its plan.
inline size_t ring_chunk_begin(size_t n, int p, int j) {
  return static_cast<size_t>(j) * n / static_cast<size_t>(p);
}

}  // namespace clbo
