// CommPlan: one collective call expanded into its point-to-point transfers, with exact
// byte counts, in dependency order (transfers of one `round` may run concurrently). The
// real backends must move exactly these bytes, and the simulator executes these transfers.
// This header depends on core only, so the simulator can use it without linking kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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
  uint64_t total_bytes() const;
  int num_rounds() const;
};

// The plan of one call as executed by clbo's algorithms on a flat world of p ranks.
// For sparse allreduce, `call.count` is the compacted length.
CommPlan make_plan(const CommCall& call, int p);

// Closed forms used by reports and cross-checked against make_plan in tests.
uint64_t onebit_bytes_per_rank(size_t n, int p);  // (p−1)·n'/(4p) + 8(p−1)
uint64_t ring_bytes_per_rank(size_t n, int p, int rank, size_t elem_bytes);

}  // namespace clbo
