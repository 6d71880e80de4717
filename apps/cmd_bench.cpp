// `clbo bench collectives`: nccl-tests-style sweep of clbo's collectives on the local, mpi
// or nccl backend; runs the clbo_bench_collectives binary built beside clbo
// (bench/collectives/).
// `clbo bench kernels`: runs the Google Benchmark binaries built beside clbo
// (bench_kernels_cpu, bench_kernels_cuda), forwarding the arguments it does not know; with
// -o DIR it writes DIR/kernels-cpu.json (kernels-cuda.json), Google Benchmark's JSON inside a
// clbo.bench.kernels/1 envelope (results/SCHEMA.md).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"
#include "cli.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct KernelBenchOptions {
  bool cpu_only = false, cuda_only = false;
  std::string out_dir;  // one clbo.bench.kernels/1 JSON per binary when set
  std::vector<std::string> extra;
};

int run_binary(const fs::path& bin, const std::vector<std::string>& args) {
  std::vector<std::string> argv{bin.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  clbo::cli::progress("running " + bin.string());
  return clbo::cli::run_attached(argv, "clbo bench kernels");
}

// Replaces this process with the collective benchmark, so under mpirun the rank process
// stays the one mpirun started.
int exec_collectives(const std::vector<std::string>& args) {
  const fs::path bin = clbo::cli::sibling_binary("clbo_bench_collectives");
  if (!fs::exists(bin))
    throw clbo::Error("clbo bench collectives: " + bin.string() +
                      " was not built (configure with CLBO_BUILD_BENCH=ON)");
  std::vector<std::string> argv{bin.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  clbo::cli::exec_replacing(argv, "clbo bench collectives");
}

// bench_kernels_cpu -> kernels-cpu.json: the name results/bench/ and report/plots/ use.
std::string result_file_name(std::string binary) {
  if (binary.rfind("bench_", 0) == 0) binary.erase(0, 6);
  std::replace(binary.begin(), binary.end(), '_', '-');
  return binary + ".json";
}

int run_kernel_benchmarks(const KernelBenchOptions& o) {
  std::vector<std::string> names;
  if (!o.cuda_only) names.push_back("bench_kernels_cpu");
  if (!o.cpu_only) names.push_back("bench_kernels_cuda");
  int worst = 0;
  bool any = false;
  for (const auto& name : names) {
    const fs::path bin = clbo::cli::sibling_binary(name);
    if (!fs::exists(bin)) {
      std::cerr << "clbo bench kernels: " << bin.string() << " was not built (CLBO_BUILD_BENCH=ON"
                << (name == "bench_kernels_cuda" ? " and nvcc at configure time" : "") << ")"
                << std::endl;
      continue;
    }
    any = true;
    if (o.out_dir.empty()) {
      worst = std::max(worst, run_binary(bin, o.extra));
      continue;
    }
    // Google Benchmark writes its raw JSON to a temporary; clbo then writes the enveloped
    // result atomically, so DIR never holds a half-written or envelope-less file.
    const fs::path target = fs::path(o.out_dir) / result_file_name(name);
    // An uncommitted AtomicOutput: its temporary is the scratch file, removed on every exit.
    clbo::AtomicOutput scratch(target.string() + ".raw", "-o");
    const fs::path raw = scratch.temp();
    std::vector<std::string> args = o.extra;
    args.push_back("--benchmark_out=" + raw.string());
    args.push_back("--benchmark_out_format=json");
    const int rc = run_binary(bin, args);
    worst = std::max(worst, rc);
    std::error_code ec;
    if (rc != 0 || !fs::exists(raw, ec)) {
      fs::remove(raw, ec);
      std::cerr << "clbo bench kernels: " << name << " failed (exit " << rc << "); "
                << target.string() << " not written" << std::endl;
      continue;
    }
    nlohmann::json raw_json;
    try {
      raw_json = clbo::load_json_file(raw.string());
    } catch (...) {
      fs::remove(raw, ec);
      throw;
    }
    fs::remove(raw, ec);
    const nlohmann::json result = {{"schema", "clbo.bench.kernels/1"},
                                   {"environment", clbo::environment_json()},
                                   {"config", {{"binary", name}, {"args", o.extra}}},
                                   {"measured", true},
                                   {"benchmark", raw_json}};
    clbo::write_json_atomic(target.string(), result);
    std::cout << "wrote " << target.string() << std::endl;
  }
  if (!any)
    throw clbo::InputError("clbo bench kernels", "binaries", clbo::cli::sibling_binary("").string(),
                           "no kernel benchmark binary found beside clbo");
  return worst;
}

clbo::cli::Registrar reg(
    "bench", "Microbenchmarks: `collectives` (nccl-tests style) and `kernels` (Google Benchmark)",
    [](CLI::App& sub) {
      sub.require_subcommand(1);
      auto action = std::make_shared<std::function<int()>>();

      // The sweep lives in its own binary: it links MPI and NCCL, which must not share a
      // process with the simulator's SimGrid (SimGrid exports its own MPI_* symbols).
      CLI::App* coll = sub.add_subcommand(
          "collectives",
          "nccl-tests-style sweep of a collective on the local, mpi or nccl backend (runs "
          "clbo_bench_collectives; see its --help). Run under mpirun for --backend mpi");
      coll->set_help_flag();  // --help goes to the benchmark binary
      coll->prefix_command();
      coll->callback([action, coll] {
        const auto args = coll->remaining();
        *action = [args] { return exec_collectives(args); };
      });

      auto kopt = std::make_shared<KernelBenchOptions>();
      CLI::App* kern = sub.add_subcommand(
          "kernels",
          "Run the Google Benchmark kernel binaries (CPU and CUDA); other arguments go to "
          "them, e.g. --benchmark_filter=Compress");
      kern->add_flag("--cpu", kopt->cpu_only, "CPU kernels only");
      kern->add_flag("--cuda", kopt->cuda_only, "CUDA kernels only");
      kern->add_option("-o,--out", kopt->out_dir,
                       "Folder for one JSON file per binary (schema clbo.bench.kernels/1)");
      kern->allow_extras();
      kern->prefix_command();  // everything it does not know passes on to the binaries
      kern->callback([action, kopt, kern] {
        kopt->extra = kern->remaining();
        *action = [kopt] { return run_kernel_benchmarks(*kopt); };
      });

      return [action] { return (*action)(); };
    });

}  // namespace
