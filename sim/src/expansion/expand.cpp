#include "clbo/sim/expansion/expand.hpp"

#include <fmt/format.h>

#include "libraries.hpp"
#include "segments.hpp"

namespace clbo::sim {

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

std::string expansion_key(const CommCall& call) {
  const bool named =
      call.kind != CollKind::kCompressedAllreduce && call.kind != CollKind::kTopkAllgather;
  return fmt::format("{}:{}:{}:{}", to_string(call.kind), call.count, to_string(call.dtype),
                     named ? call.what : "");
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
