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

// One benchmarked combination: a collective at one element type (-d all gives several).
struct Case {
  Op op = Op::kAllreduce;
  std::string type = "float";  // nccl-tests' type name
  size_t elem_bytes = 4;
};

// What one benchmark run measures: the validated flags, the cases and the requested message
// sizes of the sweep.
struct Sweep {
  CollectiveBenchConfig cfg;
  std::vector<Case> cases;
  std::vector<uint64_t> sizes;  // bytes, ascending (-b, -e, -f, -i)
};

// The buffers of one call at a requested size, as nccl-tests sizes them.
struct Shape {
  size_t buffer_count = 0;  // elements of the largest buffer (what RankOps::setup allocates)
  size_t call_count = 0;    // the count column: per rank (allreduce) or per peer/contribution
  uint64_t bytes = 0;       // the size column: buffer_count x element bytes
};
// 0 counts mean the size is too small for the op at p ranks.
Shape shape_for(Op op, uint64_t bytes, size_t elem_bytes, int p);

// One half of a row (out-of-place or in-place).
struct Half {
  bool ran = false;        // false: left out by --halves native (its columns print N/A)
  double time_us = 0;      // per call, reduced over ranks as -a says (pingpong: one way)
  int64_t iterations = 0;  // timed: -n, or more with --min-time
  uint64_t wrong = 0;      // wrong elements in the checked calls, all ranks
  // Per call, the mean over ranks of the wall time each rank spent in the compression
  // kernels (kernel_seconds(): compress, server step, unpack; mask count, compaction,
  // scatter) inside the timed calls; < 0 where not measured (the op has no host kernels, or
  // the backend runs them on a GPU).
  double kernel_us = -1;
};

struct Row {
  Case c;
  Shape shape;
  int64_t cycle = 0;  // -N
  uint64_t wire_bytes = 0;
  Half out_of_place, in_place;
  std::string timestamp;  // -S 1
};

const char* op_name(Op op);
std::vector<std::string> split_commas(const std::string& s);

// ---- what a row means (row_meaning.cpp) -------------------------------------------------

// The redop column: what the collective computes (sum, 1b-avg, or nccl-tests' "none").
const char* redop_of(Op op);
// The algorithm that carries `op` on the run's backend, as reported in table and JSON.
std::string algorithm_of(const Sweep& run, Op op);

struct Bandwidths {
  double algbw = 0, busbw = 0, eq_busbw = -1;  // GB/s (1e9 bytes/s); eq_busbw < 0: N/A
};
Bandwidths bandwidths(const Row& row, const Half& h, int p);

// One rank's side of the benchmark. The driver calls every method on every rank in the same
// order; the collective ones (barrier, *_over_ranks, the runs) must be called by all.
class RankOps {
 public:
  virtual ~RankOps() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  virtual std::vector<double> gather_over_ranks(double v) = 0;  // every rank's v, rank order
  virtual uint64_t max_over_ranks_u64(uint64_t v) = 0;
  virtual uint64_t sum_over_ranks(uint64_t v) = 0;
  // Allocates for `c` at `count` elements (Shape::buffer_count) and agrees on it with every
  // rank.
  virtual void setup(const Case& c, size_t count) = 0;
  // Out-of-place (separate send and receive buffers) or in-place; where the library has only
  // one of the two, the other stages the input through a local copy (staging_note says so).
  virtual void set_in_place(bool in_place) = 0;
  // One call on the check inputs with fresh state; returns this rank's wrong elements.
  virtual uint64_t run_checked() = 0;
  // One call; returns the bytes this rank sent, as its backend counts them.
  virtual uint64_t run_counted() = 0;
  // Loads the inputs timed runs use (they keep running on them).
  virtual void prepare_timing() = 0;
  virtual void run() = 0;
  virtual void finish() {}  // waits for queued device work
  // nccl-tests' -m: the calls of one timed iteration between ncclGroupStart and ncclGroupEnd,
  // so the library launches them together. Only the nccl backend can (validate() rejects -m
  // above 1 elsewhere).
  virtual void group_start() {}
  virtual void group_end() {}
  // Backend details for the result's environment block (library versions, devices).
  virtual nlohmann::json describe() const = 0;
};

// Which half of `op` the `backend` stages through a local copy ("" = both are native).
std::string staging_note(Op op, const std::string& backend);
// The half a collective runs without a staging copy: its row-level JSON fields, which
// readers of earlier results (validate, calibrate) take.
bool native_in_place(Op op, const std::string& backend);

// ---- nccl-tests' text output (nccl_table.cpp), rank 0 only ------------------------------

std::string now_text();  // nccl-tests' timestamp format
void print_preamble(const Sweep& run, int p);
void print_row(const Sweep& run, const Row& row, int p);
// min_busbw < 0: no NCCL_TESTS_MIN_BW to check against.
void print_footer(uint64_t out_of_bounds, double avg_busbw, double min_busbw);

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
