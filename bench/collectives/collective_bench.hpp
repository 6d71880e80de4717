// `clbo bench collectives`: an nccl-tests-style sweep over message sizes for clbo's
// collectives on the local (threads), mpi and nccl backends.
//
// Flags, defaults and output are nccl-tests' own (docs/hardware.md has the table): every
// nccl-tests flag means what it means there, one that cannot apply to clbo is rejected
// naming its nccl-tests meaning, and clbo's own choices have names nccl-tests does not use
// (--collective, --backend, --algo, --sparse-k, --seed).
//
// Sizes and counts follow nccl-tests: `size` is the larger of one rank's send and receive
// buffers; `count` is the count argument of the call: the elements of one rank's buffer for
// allreduce, compressed and sparse, the elements sent to each peer for alltoall and the
// elements each rank contributes for allgather (both rounded down to 16 bytes, as nccl-tests
// does).
//
// Each row has nccl-tests' columns (size, count, type, redop, root, then time, algbw, busbw
// and #wrong out of place and in place), then clbo's: eq_busbw out of place and in place and
// wire_bytes (what one call really sent per rank, counted by the backend, the most any rank
// sent).
//   - Dense ops: busbw = algbw × the nccl-tests factor (2(p−1)/p allreduce, (p−1)/p
//     alltoall and allgather); eq_busbw is N/A.
//   - Compressed and sparse: busbw = wire_bytes / time (the bus really used), and the
//     explicitly labelled eq_busbw = size·2(p−1)/p / time: the busbw an uncompressed
//     allreduce would need to finish in the same time ("equivalent busbw").
//   - pingpong: every pair of ranks (0, 1), (2, 3), ... at once: the even rank sends `size`
//     bytes to the odd one, which sends them back (with p odd the last rank waits); time is
//     half the round trip, the one-way time of one message, and busbw = algbw = size / time
//     (the OSU latency/bandwidth pair's definition). With 2 ranks it is OSU's ping-pong; with
//     more, the per-message time while every rank messages at once.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/core/names.hpp"

namespace clbo::bench {

enum class Op { kAllreduce, kCompressed, kSparse, kAlltoall, kAllgather, kPingpong };
// --collective's spellings (the op field of results).
inline constexpr auto kOpNames = name_table<Op>({{Op::kAllreduce, "allreduce"},
                                                 {Op::kCompressed, "compressed"},
                                                 {Op::kSparse, "sparse"},
                                                 {Op::kAlltoall, "alltoall"},
                                                 {Op::kAllgather, "allgather"},
                                                 {Op::kPingpong, "pingpong"}});

// An nccl-tests flag clbo accepts only at its nccl-tests default (it cannot apply here).
struct FixedFlag {
  std::string name;     // "-G,--cudagraph"
  std::string value;    // what the user gave ("" = not given)
  std::string fixed;    // the only value clbo accepts (nccl-tests' default)
  std::string meaning;  // its nccl-tests meaning and why it cannot apply
};

struct CollectiveBenchConfig {
  // clbo's own flags.
  std::vector<std::string> collectives = {"allreduce"};  // --collective
  std::string backend = "local";                         // local|mpi|nccl
  std::string algo = "default";  // mpi: allreduce native|ring, compressed gather|alltoall
  double sparse_k = 0.1;         // sparse: kept fraction
  uint64_t seed = 0;
  // --halves: "both" (nccl-tests: out-of-place, then in-place) or "native", only the half the
  // collective runs without a staging copy (the one each row's own time reports).
  std::string halves = "both";
  // --min-time: 0 times -n iterations per size, as nccl-tests. Above 0, more iterations where
  // -n would take less than this many seconds (cheap sizes get enough calls to average over
  // TCP's jitter), as Google Benchmark's min_time; the count comes from the slowest rank's
  // untimed sync call, so every rank runs the same number.
  double min_time_s = 0;
  // nccl-tests' flags at nccl-tests' defaults (src/common.cu).
  std::string op = "sum";          // -o: reduction op (or all)
  std::string datatype = "float";  // -d: element type (or all)
  std::string min_bytes = "32M";   // -b (K/M/G are binary multiples, fractions allowed)
  std::string max_bytes = "32M";   // -e
  std::string step_bytes = "1M";   // -i: increment when -f is 1
  int64_t step_factor = 1;         // -f: multiply by this when > 1
  int64_t iters = 20;              // -n
  int64_t agg_iters = 1;           // -m: calls aggregated per timed iteration
  int64_t warmup = 1;              // -w
  int64_t run_cycles = 1;          // -N: repeat the sweep (0 = forever)
  int64_t check = 1;               // -c: checked iterations per size (0 = no check)
  int64_t average = 1;             // -a: time over ranks 0=rank 0, 1=mean, 2=min, 3=max
  int64_t blocking = 0;            // -z: 0 async, 1 wait+barrier, 2 wait, 3 see --help
  int64_t report_cputime = 0;      // -C
  int64_t report_timestamps = 0;   // -S
  int64_t nthreads = 1;            // -t: threads per process (local: the ranks)
  int64_t ngpus = 1;               // -g: GPUs per thread (nccl)
  int64_t root = 0;                // -r: rooted collectives only (clbo has none)
  double timeout_s = 0;            // -T: seconds before a stuck call fails (0 = never)
  std::string output_file;         // -J: JSON result ("" = none, as nccl-tests)
  std::vector<std::string> argv;   // the command line, for the JSON's "args" as nccl-tests
  std::vector<FixedFlag> fixed;    // the other nccl-tests flags (fixed_flags())
};

// nccl-tests' flags that cannot apply to clbo's collectives, with their defaults and
// meanings; main() registers them so that a non-default value is an error naming it.
std::vector<FixedFlag> fixed_flags();

const std::vector<std::string>& collective_names();
const std::vector<std::string>& backend_names();
// nccl-tests' names (-d, -o), clbo's subset of each is checked per collective.
const std::vector<std::string>& nccl_type_names();
const std::vector<std::string>& nccl_op_names();

// "8", "64K", "1.5M", "1G" → bytes, read as nccl-tests reads them (binary multiples; a
// trailing B after the unit is allowed). Throws InputError naming `flag` on anything else.
uint64_t parse_size(const std::string& text, const std::string& flag);

// Validates names, sizes and counts before any work; throws InputError naming the flag.
void validate(const CollectiveBenchConfig& c);

// Runs the sweep, prints the table on rank 0 and writes the JSON there (with -J); returns
// the process exit status. Under mpirun every rank calls it.
int run_collective_bench(const CollectiveBenchConfig& c);

}  // namespace clbo::bench
