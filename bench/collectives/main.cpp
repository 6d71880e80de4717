// clbo_bench_collectives: the binary behind `clbo bench collectives` (which execs it). It is
// separate from `clbo` because it links MPI and NCCL, and `clbo` links SimGrid, whose SMPI
// exports MPI_* symbols of its own. Under mpirun every rank runs it.
#include <CLI/CLI.hpp>

#include <iostream>

#include "clbo/core/error.hpp"
#include "cli_integer.hpp"
#include "collective_bench.hpp"

int main(int argc, char** argv) {
  clbo::bench::CollectiveBenchConfig cfg;
  CLI::App app{
      "clbo bench collectives: nccl-tests for clbo's collectives. Flags, defaults and columns "
      "are nccl-tests' (size, count, type, redop, root, then time, algbw, busbw, #wrong out of "
      "place and in place); clbo's columns follow them: eq_busbw out of place and in place "
      "(compressed and sparse: the busbw an uncompressed allreduce would need for the same "
      "time) and wire_bytes (what one call sent per rank). An nccl-tests flag that cannot apply "
      "is rejected. Run under mpirun for --backend mpi, and for one process per GPU with "
      "--backend nccl.",
      "clbo bench collectives"};
  using clbo::cli::decimal_integer;
  auto integer = [&](const char* name, int64_t& v, const char* help) {
    return app.add_option(name, v, help)
        ->transform(decimal_integer<int64_t>())
        ->capture_default_str();
  };
  // clbo's own flags (names nccl-tests does not use).
  app.add_option("--collective", cfg.collectives,
                 "allreduce|compressed|sparse|alltoall|allgather|pingpong (comma list; "
                 "nccl-tests chooses it by binary)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--backend", cfg.backend, "local|mpi|nccl")->capture_default_str();
  app.add_option("--algo", cfg.algo, "mpi only: allreduce native|ring, compressed gather|alltoall")
      ->capture_default_str();
  app.add_option("--sparse-k", cfg.sparse_k, "sparse: fraction of elements kept")
      ->capture_default_str();
  app.add_option("--halves", cfg.halves,
                 "both (as nccl-tests: out-of-place, then in-place) or native: only the half "
                 "the collective runs without a staging copy, the other half's columns N/A "
                 "(halves the time; clbo validate uses it)")
      ->capture_default_str();
  app.add_option("--min-time", cfg.min_time_s,
                 "Seconds: time at least -n iterations per size and more where -n would take "
                 "less than this (the count from the slowest rank's untimed sync call; 0: -n "
                 "only, as nccl-tests)")
      ->capture_default_str();
  app.add_option("--seed", cfg.seed, "Seed of the inputs and the sparse mask")
      ->transform(decimal_integer<uint64_t>())
      ->capture_default_str();
  // nccl-tests' flags, with its defaults.
  integer("-t,--nthreads", cfg.nthreads,
          "Threads per process; on the local backend the ranks (threads)");
  integer("-g,--ngpus", cfg.ngpus, "nccl without mpirun: GPUs per thread");
  app.add_option("-b,--minbytes", cfg.min_bytes, "Smallest size (bytes; K/M/G, e.g. 1.5M)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", cfg.max_bytes, "Largest size (bytes; K/M/G)")
      ->capture_default_str();
  app.add_option("-i,--stepbytes", cfg.step_bytes, "Size increment when -f is 1")
      ->capture_default_str();
  integer("-f,--stepfactor", cfg.step_factor, "Size multiplier (1: step by -i)");
  integer("-n,--iters", cfg.iters, "Timed iterations per size");
  integer("-m,--agg_iters", cfg.agg_iters,
          "Calls per timed iteration in one NCCL group (time is per call; nccl backend, "
          "not compressed/sparse)");
  integer("-w,--warmup_iters", cfg.warmup, "Untimed iterations of every size first");
  integer("-N,--run_cycles", cfg.run_cycles,
          "Run and print the sizes of each collective and type N times (0: until stopped)");
  integer("-c,--check", cfg.check, "Checked iterations per size and half (0: no check)");
  app.add_option("-o,--op", cfg.op,
                 "Reduction op: sum|prod|max|min|avg|mulsum|all (clbo's sums reduce with sum)")
      ->capture_default_str();
  app.add_option("-d,--datatype", cfg.datatype,
                 "int8|uint8|int32|uint32|int64|uint64|half|float|double|bfloat16|f8e4m3|f8e5m2"
                 "|all (each collective runs at the types it supports)")
      ->capture_default_str();
  integer("-r,--root", cfg.root, "Root of rooted collectives (clbo has none)");
  integer("-z,--blocking", cfg.blocking,
          "0 async; 1 wait and barrier after each call; 2 wait after each call; 3 wait and "
          "barrier after each iteration, the barrier not timed");
  app.add_option("-T,--timeout", cfg.timeout_s,
                 "mpi: seconds a rank waits for its peers in one call before the job fails, "
                 "naming the rank (0: no limit)")
      ->capture_default_str();
  integer("-C,--report_cputime", cfg.report_cputime,
          "1: report the time to issue the calls (cputime) instead of their completion");
  integer("-S,--report_timestamps", cfg.report_timestamps, "1: a timestamp after each row");
  app.add_option("-J,--output_file", cfg.output_file,
                 "JSON result: nccl-tests' JSON (version 3: config, results, out_of_bounds, "
                 "average_bus_bandwidth) with clbo's schema clbo.bench.collectives/1 beside it "
                 "(the name must end in .json)");
  integer("-a,--average", cfg.average,
          "Time over ranks: 0 rank 0, 1 mean, 2 min, 3 max (the slowest rank)");
  cfg.fixed = clbo::bench::fixed_flags();
  for (auto& f : cfg.fixed)
    app.add_option(f.name, f.value, f.meaning + " (accepted only at " + f.fixed + ")");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "clbo: error: <command line>: " << e.what()
              << "\nRun with --help for more information." << std::endl;
    return 2;
  }
  cfg.argv.assign(argv, argv + argc);
  try {
    return clbo::bench::run_collective_bench(cfg);
  } catch (const clbo::InputError& e) {
    std::cerr << "clbo: error: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clbo: error: " << clbo::exception_text(e) << std::endl;
    return 1;
  }
}
