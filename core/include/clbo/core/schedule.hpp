// CommSchedule: what an optimizer communicates at one step, as a list of collective calls.
// The same description drives the real backends (which must send exactly these bytes, see
// plan/plan.hpp) and the simulator (which expands each call for a cluster layout).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "clbo/core/names.hpp"

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

inline constexpr auto kCollKindNames = name_table<CollKind>({
    {CollKind::kAllreduce, "allreduce"},
    {CollKind::kCompressedAllreduce, "compressed_allreduce"},
    {CollKind::kSparseAllreduce, "sparse_allreduce"},
    {CollKind::kTopkAllgather, "topk_allgather"},
    {CollKind::kAlltoall, "alltoall"},
    {CollKind::kAllgather, "allgather"},
});
inline constexpr auto kDTypeNames =
    name_table<DType>({{DType::kF32, "fp32"}, {DType::kF16, "fp16"}, {DType::kU8, "u8"}});
inline constexpr auto kPhaseNames = name_table<Phase>({
    {Phase::kDense, "dense"},
    {Phase::kWarmup, "warmup"},
    {Phase::kCompression, "compression"},
    {Phase::kVarianceStep, "variance_step"},
    {Phase::kLocalStep, "local_step"},
    {Phase::kSyncStep, "sync_step"},
    {Phase::kPlain, "plain"},
});

const char* to_string(CollKind k);
const char* to_string(DType d);
const char* to_string(Phase p);
size_t dtype_bytes(DType d);

}  // namespace clbo
