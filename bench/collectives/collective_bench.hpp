// `clbo bench collectives`: an nccl-tests-style sweep over message sizes for clbo's
// collectives on the local (threads), mpi and nccl backends.
//
// Sizes follow nccl-tests: `size` is the bytes of one rank's buffer for allreduce,
// compressed and sparse (count = size / element bytes), the whole send buffer for alltoall
// (count rounded down to a multiple of p), and the whole gathered buffer for allgather
// (each rank contributes count/p elements).
//
// Columns: size, count, type, time_us (the slowest rank's mean over -n iterations after -w
// warmups), algbw = size/time, busbw, wire_bytes (what this op really sent per rank,
// counted by the backend, the most any rank sent), #wrong (elements that differ from the
// expected result in one checked call with fresh state; -c 0 skips the check).
//   - Dense ops: busbw = algbw × the nccl-tests factor (2(p−1)/p allreduce, (p−1)/p
//     alltoall and allgather).
//   - Compressed and sparse: busbw = wire_bytes / time (the bus really used), and the
//     explicitly labelled eq_busbw = size·2(p−1)/p / time: the busbw an uncompressed
//     allreduce would need to finish in the same time ("equivalent busbw").
//   - pingpong: rank 0 sends `size` bytes to rank 1, which sends them back (the other
//     ranks wait); time_us is half the round trip, the one-way time of one message, and
//     busbw = algbw = size / time (the OSU latency/bandwidth pair's definition).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::bench {

enum class Op { kAllreduce, kCompressed, kSparse, kAlltoall, kAllgather, kPingpong };

struct CollectiveBenchConfig {
  std::vector<std::string> ops = {
      "allreduce"};               // allreduce|compressed|sparse|alltoall|allgather|pingpong
  std::string backend = "local";  // local|mpi|nccl
  std::string dtype = "float";    // float|half|uint8
  std::string algo = "default";   // mpi: allreduce native|ring, compressed gather|alltoall
  std::string min_bytes = "8", max_bytes = "256M";  // -b, -e (K/M/G suffixes are 2^10..)
  int64_t step_factor = 2;                          // -f
  int64_t iters = 20, warmup = 5;                   // -n, -w
  int64_t check = 1;                                // -c
  int64_t ranks = 4;                                // local backend: threads (ranks)
  int64_t ngpus = 1;                                // nccl without mpirun: GPUs in one process
  double sparse_k = 0.1;                            // sparse: kept fraction
  uint64_t seed = 0;
  double timeout_s = 120;  // mpi: the longest wait for a peer before the job fails
  std::string out;         // JSON result path ("" = results/bench/collectives-<backend>-p<P>.json)
};

const std::vector<std::string>& op_names();
const std::vector<std::string>& backend_names();
const std::vector<std::string>& dtype_names();

// "8", "64K", "256M", "1G" → bytes (binary multiples, as nccl-tests reads them). Throws
// InputError naming `flag` on anything else.
uint64_t parse_size(const std::string& text, const std::string& flag);

// Validates names, sizes and counts before any work; throws InputError naming the flag.
void validate(const CollectiveBenchConfig& c);

// Runs the sweep, prints the table on rank 0 and writes the JSON there; returns the
// process exit status. Under mpirun every rank calls it.
int run_collective_bench(const CollectiveBenchConfig& c);

}  // namespace clbo::bench
