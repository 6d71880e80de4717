// Internals of `clbo bench collectives` shared by the driver and the backends: the resolved
// run, one rank's operations (RankOps, implemented per backend), deterministic inputs and
// their expected results.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collective_bench.hpp"

namespace clbo::bench {

// What one benchmark run measures: the validated flags, the ops and the message sizes of the
// sweep, and the element size of the datatype.
struct Sweep {
  CollectiveBenchConfig cfg;
  std::vector<Op> ops;
  std::vector<uint64_t> sizes;  // bytes, ascending
  size_t elem_bytes = 4;        // of cfg.dtype
};

struct Row {
  Op op = Op::kAllreduce;
  uint64_t bytes = 0;
  size_t count = 0;  // elements of one rank's buffer (allgather: of the gathered buffer)
  double time_us = 0;
  uint64_t wire_bytes = 0, wrong = 0;
};

const char* op_name(Op op);

// Elements in one rank's buffer for `op` at `bytes`, following nccl-tests (alltoall and
// allgather round down to a multiple of p). 0 means the size is too small for the op.
size_t count_for(Op op, uint64_t bytes, size_t elem_bytes, int p);

// One rank's side of the benchmark. The driver calls every method on every rank in the same
// order; the collective ones (barrier, *_over_ranks, the runs) must be called by all.
class RankOps {
 public:
  virtual ~RankOps() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  virtual double max_over_ranks(double v) = 0;
  virtual uint64_t max_over_ranks_u64(uint64_t v) = 0;
  virtual uint64_t sum_over_ranks(uint64_t v) = 0;
  // Allocates for op at `count` elements and agrees on (op, count) with every rank.
  virtual void setup(Op op, size_t count) = 0;
  // One call on the check inputs with fresh state; returns this rank's wrong elements.
  virtual uint64_t run_checked() = 0;
  // One call; returns the bytes this rank sent, as its backend counts them.
  virtual uint64_t run_counted() = 0;
  // Loads the inputs timed runs use (they keep running in place on them).
  virtual void prepare_timing() = 0;
  virtual void run() = 0;
  virtual void finish() {}  // waits for queued device work
  // Backend details for the result's environment block (library versions, devices).
  virtual nlohmann::json describe() const = 0;
};

// Runs the sweep of `run` on this rank; rank 0 prints each row as it completes and gets
// every row back (other ranks get an empty vector).
std::vector<Row> sweep(RankOps& ops, const Sweep& run);

// ---- deterministic inputs --------------------------------------------------------------

// Small integers, exact in fp16 and in any summation order: (rank + i) % 5 + 1.
inline float dense_check_value(int rank, size_t i) {
  return static_cast<float>((static_cast<size_t>(rank) + i) % 5 + 1);
}
// Uniform in [-1, 1) from Philox(seed, rank, i), the compressed allreduce's check input.
void fill_uniform(float* x, size_t n, uint64_t seed, int rank);
// Byte pattern of block `block` sent by `sender` (alltoall and allgather checks).
inline uint8_t pattern_byte(int sender, int block, size_t i) {
  return static_cast<uint8_t>(sender * 7 + block * 13 + static_cast<int>(i % 251));
}

// The compressed allreduce's output for the check inputs of all p ranks, computed
// sequentially with the scalar reference kernels (kernels::ref) from zero error state.
// Cached per (p, n, seed): every rank of a process shares one computation.
const std::vector<float>& reference_compressed(int p, size_t n, uint64_t seed);

// The backends.
std::vector<Row> run_local_backend(const Sweep& run, nlohmann::json& describe);
std::vector<Row> run_mpi_backend(const Sweep& run, nlohmann::json& describe, bool& is_root);
std::vector<Row> run_nccl_backend(const Sweep& run, nlohmann::json& describe, bool& is_root);

}  // namespace clbo::bench
