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
      "clbo bench collectives: sweep message sizes for a collective in the nccl-tests style "
      "(size, count, type, time_us, algbw, busbw, wire_bytes, #wrong; compressed and sparse "
      "ops add eq_busbw, the uncompressed-equivalent bus bandwidth) and write a JSON result. "
      "Run under mpirun for --backend mpi, and for one process per GPU with --backend nccl.",
      "clbo bench collectives"};
  app.add_option("-b,--minbytes", cfg.min_bytes, "Smallest size (bytes; K/M/G)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", cfg.max_bytes, "Largest size (bytes; K/M/G)")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", cfg.step_factor, "Size multiplier")
      ->transform(clbo::cli::decimal_integer<int64_t>())
      ->capture_default_str();
  app.add_option("-n,--iters", cfg.iters, "Timed iterations per size")
      ->transform(clbo::cli::decimal_integer<int64_t>())
      ->capture_default_str();
  app.add_option("-w,--warmup_iters", cfg.warmup, "Untimed iterations first")
      ->transform(clbo::cli::decimal_integer<int64_t>())
      ->capture_default_str();
  app.add_option("-c,--check", cfg.check, "Check one call's result (1) or not (0)")
      ->transform(clbo::cli::decimal_integer<int64_t>(0, 1))
      ->capture_default_str();
  app.add_option("--op", cfg.ops,
                 "allreduce|compressed|sparse|alltoall|allgather|pingpong (comma list)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--backend", cfg.backend, "local|mpi|nccl")->capture_default_str();
  app.add_option("-d,--dtype", cfg.dtype, "float|half|uint8")->capture_default_str();
  app.add_option("--algo", cfg.algo, "mpi only: allreduce native|ring, compressed gather|alltoall")
      ->capture_default_str();
  app.add_option("-t,--ranks", cfg.ranks, "local backend: ranks (threads)")
      ->transform(clbo::cli::decimal_integer<int64_t>())
      ->capture_default_str();
  app.add_option("-g,--ngpus", cfg.ngpus, "nccl without mpirun: GPUs driven by this process")
      ->transform(clbo::cli::decimal_integer<int64_t>())
      ->capture_default_str();
  app.add_option("--sparse-k", cfg.sparse_k, "sparse: fraction of elements kept")
      ->capture_default_str();
  app.add_option("--seed", cfg.seed, "Seed of the inputs and the sparse mask")
      ->transform(clbo::cli::decimal_integer<uint64_t>())
      ->capture_default_str();
  app.add_option("--timeout", cfg.timeout_s,
                 "mpi: seconds a rank waits for its peers in one call before the job fails, "
                 "naming the rank (a stopped or crashed peer never hangs the others)")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  app.add_option("-o,--out", cfg.out,
                 "JSON result (default results/bench/collectives-<backend>-<ops>-p<P>.json)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "clbo: error: <command line>: " << e.what()
              << "\nRun with --help for more information." << std::endl;
    return 2;
  }
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
