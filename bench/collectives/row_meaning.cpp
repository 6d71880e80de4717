// What the numbers of a `clbo bench collectives` row mean: nccl-tests' shapes and bus
// factors, each collective's reduction and algorithm, and which half stages through a copy.
#include <algorithm>

#include "bench_world.hpp"

namespace clbo::bench {

namespace {

bool dense_factor_op(Op op) {
  return op == Op::kAllreduce || op == Op::kAlltoall || op == Op::kAllgather || op == Op::kPingpong;
}

// nccl-tests' bus factor for the dense ops.
double bus_factor(Op op, int p) {
  if (op == Op::kPingpong) return 1.0;
  if (p <= 1) return 0.0;
  const double q = static_cast<double>(p);
  return op == Op::kAllreduce ? 2.0 * (q - 1) / q : (q - 1) / q;
}

bool chose(const Sweep& run, const char* algo) {
  const auto chosen = split_commas(run.cfg.algo);
  return std::find(chosen.begin(), chosen.end(), algo) != chosen.end();
}

}  // namespace

// The redop column: what the collective computes.
const char* redop_of(Op op) {
  switch (op) {
    case Op::kAllreduce:
    case Op::kSparse:
      return "sum";
    case Op::kCompressed:
      return "1b-avg";  // the 1-bit compressed mean with error feedback
    default:
      return "none";  // nccl-tests' label for collectives without a reduction
  }
}

// The algorithm that carries `op` on the run's backend, as reported in table and JSON.
std::string algorithm_of(const Sweep& run, Op op) {
  const std::string& b = run.cfg.backend;
  switch (op) {
    case Op::kAllreduce:
      if (b == "mpi") return chose(run, "ring") ? "ring" : "MPI_Allreduce";
      return b == "nccl" ? "ncclAllReduce" : "ring";
    case Op::kCompressed:
      if (b == "mpi")
        return chose(run, "alltoall")
                   ? "onebit_two_phase (MPI_Alltoall)"
                   : "onebit_two_phase (DeepSpeed MPI: p x MPI_Igather, MPI_Allgather)";
      return b == "nccl" ? "onebit_two_phase (grouped send/recv, ncclAllGather, fused GPU kernels)"
                         : "onebit_two_phase";
    case Op::kSparse:
      return b == "nccl" ? "compact + ncclAllReduce + scatter" : "compact + ring + scatter";
    case Op::kAlltoall:
      return b == "mpi" ? "MPI_Alltoall" : b == "nccl" ? "grouped ncclSend/ncclRecv" : "direct";
    case Op::kAllgather:
      return b == "mpi" ? "MPI_Allgather" : b == "nccl" ? "ncclAllGather" : "direct";
    case Op::kPingpong:
      return "send + recv within every pair of ranks (0, 1), (2, 3), ... at once (half round "
             "trip)";
  }
  return "";
}

Bandwidths bandwidths(const Row& row, const Half& h, int p) {
  const double t = h.time_us * 1e-6;
  Bandwidths b;
  if (t <= 0) return b;
  b.algbw = static_cast<double>(row.shape.bytes) / t / 1e9;
  if (dense_factor_op(row.c.op)) {
    b.busbw = b.algbw * bus_factor(row.c.op, p);
  } else {
    b.busbw = static_cast<double>(row.wire_bytes) / t / 1e9;
    b.eq_busbw = b.algbw * bus_factor(Op::kAllreduce, p);
  }
  return b;
}

std::string staging_note(Op op, const std::string& backend) {
  switch (op) {
    case Op::kAllreduce:
      if (backend == "nccl") return "";
      [[fallthrough]];
    case Op::kCompressed:
    case Op::kSparse:
      return "out-of-place copies the input into the output buffer, then runs in place";
    case Op::kAlltoall:
    case Op::kAllgather:
      if (backend == "nccl" && op == Op::kAllgather) return "";
      return "in-place copies the input out of the output buffer, then runs out of place";
    case Op::kPingpong:
      return "";
  }
  return "";
}

// The half a collective runs without a staging copy: its row-level fields, which readers of
// earlier results (validate, calibrate) take.
bool native_in_place(Op op, const std::string& backend) {
  const std::string note = staging_note(op, backend);
  return note.empty() || note.rfind("out-of-place", 0) == 0;
}

Shape shape_for(Op op, uint64_t bytes, size_t elem_bytes, int p) {
  Shape s;
  const size_t count = static_cast<size_t>(bytes / elem_bytes);
  if (op == Op::kAlltoall || op == Op::kAllgather) {
    // nccl-tests: the per-rank count rounded down to a multiple of 16 bytes.
    const size_t align = std::max<size_t>(1, 16 / elem_bytes);
    const size_t per = (count / static_cast<size_t>(p)) / align * align;
    s.call_count = per;
    s.buffer_count = per * static_cast<size_t>(p);
  } else {
    s.call_count = s.buffer_count = count;
  }
  s.bytes = s.buffer_count * elem_bytes;
  return s;
}

}  // namespace clbo::bench
