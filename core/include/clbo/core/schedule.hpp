// CommSchedule: what an optimizer communicates at one step, as a list of collective calls.
// The same description drives the real backends (which must send exactly these bytes, see
// plan/plan.hpp) and the simulator (which expands each call for a cluster layout).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace clbo {

enum class CollKind {
  kAllreduce,            // dense ring allreduce of `count` elements
  kCompressedAllreduce,  // 1-bit two-phase scheme (docs/reference/algorithms.md §2) over `count`
                         // elements
  kSparseAllreduce,      // ring allreduce of a compacted buffer of `count` elements
  kTopkAllgather,        // allgather of `count` (index, value) pairs from each rank
  kAlltoall,
  kAllgather,
};

enum class DType { kF32, kF16, kU8 };

// The phase a step belongs to; the simulator weights each distinct kind by its count.
enum class Phase { kDense, kWarmup, kCompression, kVarianceStep, kLocalStep, kSyncStep, kPlain };

struct CommCall {
  CollKind kind = CollKind::kAllreduce;
  size_t count = 0;  // elements (for compressed: the unpadded n; for top-k: k per rank)
  DType dtype = DType::kF32;
  std::string what;  // "grad", "momentum", "params", ... for reports
};

struct CommSchedule {
  Phase phase = Phase::kDense;
  std::vector<CommCall> calls;
};

const char* to_string(CollKind k);
const char* to_string(DType d);
const char* to_string(Phase p);
size_t dtype_bytes(DType d);

}  // namespace clbo
