#include "clbo/core/schedule.hpp"

namespace clbo {

const char* to_string(CollKind k) {
  switch (k) {
    case CollKind::kAllreduce:
      return "allreduce";
    case CollKind::kCompressedAllreduce:
      return "compressed_allreduce";
    case CollKind::kSparseAllreduce:
      return "sparse_allreduce";
    case CollKind::kTopkAllgather:
      return "topk_allgather";
    case CollKind::kAlltoall:
      return "alltoall";
    case CollKind::kAllgather:
      return "allgather";
  }
  return "?";
}

const char* to_string(DType d) {
  switch (d) {
    case DType::kF32:
      return "fp32";
    case DType::kF16:
      return "fp16";
    case DType::kU8:
      return "u8";
  }
  return "?";
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::kDense:
      return "dense";
    case Phase::kWarmup:
      return "warmup";
    case Phase::kCompression:
      return "compression";
    case Phase::kVarianceStep:
      return "variance_step";
    case Phase::kLocalStep:
      return "local_step";
    case Phase::kSyncStep:
      return "sync_step";
    case Phase::kPlain:
      return "plain";
  }
  return "?";
}

size_t dtype_bytes(DType d) {
  return d == DType::kF32 ? 4 : d == DType::kF16 ? 2 : 1;
}

}  // namespace clbo
