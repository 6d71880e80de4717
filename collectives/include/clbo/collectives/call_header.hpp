// The small header every rank of a hardware backend (MPI, NCCL) exchanges before a
// collective's payload, so mismatched sizes or configs fail every rank at once with one
// clear message instead of hanging or corrupting memory. Plain bytes: it is sent as is.
#pragma once
#include <cstdint>
#include <string>

namespace clbo {

struct CallHeader {
  char op[32] = {};    // e.g. "alltoall", "compressed_allreduce"
  uint64_t count = 0;  // elements (or bytes per rank for raw exchanges)
  uint64_t elem_bytes = 0;
  uint64_t config = 0;  // a hash of any further configuration (0 when none)
  static CallHeader make(const std::string& op, uint64_t count, uint64_t elem_bytes,
                         uint64_t config = 0);
  std::string op_name() const;
};

// Compares every rank's header with rank 0's, in rank order, and throws clbo::Error
// "<backend>: ranks disagree on <op>: rank 0 has <field> = a, rank j has <field> = b" at the
// first difference. Every rank holds the same p headers, so every rank throws the same text.
void check_call_headers(const CallHeader* all, int p, const char* backend);

}  // namespace clbo
