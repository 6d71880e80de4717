// `clbo bench collectives`: nccl-tests-style sweep of clbo's collectives on the local, mpi
// or nccl backend; runs the clbo_bench_collectives binary built beside clbo
// (bench/collectives/).
// `clbo bench kernels`: runs the Google Benchmark binaries built beside clbo
// (bench_kernels_cpu, bench_kernels_cuda), forwarding every Google Benchmark flag. A JSON
// result (-o DIR: DIR/kernels-cpu.json, kernels-cuda.json; or the user's own
// --benchmark_out=FILE) is Google Benchmark's JSON as the binary wrote it, which
// tools/compare.py reads as it is, with clbo's metadata added under context.clbo and the
// schema (clbo.bench.kernels/2, results/SCHEMA.md) at the top, written atomically.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/input_file.hpp"
#include "clbo/core/json_reader.hpp"
#include "clbo/core/output_file.hpp"
#include "clbo/core/results.hpp"
#include "cli.hpp"
#include "gbench_flags.hpp"
#include "gbench_json.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct KernelBenchOptions {
  bool cpu_only = false, cuda_only = false;
  std::string out_dir;  // one clbo.bench.kernels/2 JSON per binary when set
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

// Runs one binary with its JSON going to a scratch file, then writes `target` atomically,
// so the target never holds a half-written or metadata-less file. Returns the exit status.
int run_to_json(const fs::path& bin, const std::string& name, std::vector<std::string> args,
                const fs::path& target) {
  // An uncommitted AtomicOutput: its temporary is the scratch file, removed on every exit.
  clbo::AtomicOutput scratch(target.string() + ".raw", "--benchmark_out");
  const fs::path raw = scratch.temp();
  const std::vector<std::string> recorded = args;
  args.push_back("--benchmark_out=" + raw.string());
  args.push_back("--benchmark_out_format=json");
  const int rc = run_binary(bin, args);
  std::error_code ec;
  if (rc != 0 || !fs::exists(raw, ec) || fs::file_size(raw, ec) == 0) {
    fs::remove(raw, ec);
    std::cerr << "clbo bench kernels: " << name << " wrote no results (exit " << rc << "); "
              << target.string() << " not written" << std::endl;
    return rc;
  }
  nlohmann::json raw_json;
  try {
    raw_json = clbo::parse_json(clbo::bench::with_nonfinite_as_null(clbo::read_input_file(
                                    raw.string(), clbo::JsonReadOptions{}.max_bytes)),
                                raw.string());
  } catch (...) {
    fs::remove(raw, ec);
    throw;
  }
  fs::remove(raw, ec);
  clbo::write_json_atomic(
      target.string(), clbo::bench::with_clbo_context(std::move(raw_json), name, recorded,
                                                      clbo::environment_json(), target.string()));
  std::cout << "wrote " << target.string() << std::endl;
  return 0;
}

int run_kernel_benchmarks(const KernelBenchOptions& o) {
  std::vector<std::string> names;
  if (!o.cuda_only) names.push_back("bench_kernels_cpu");
  if (!o.cpu_only) names.push_back("bench_kernels_cuda");
  std::vector<std::pair<std::string, fs::path>> built;
  for (const auto& name : names) {
    const fs::path bin = clbo::cli::sibling_binary(name);
    if (fs::exists(bin)) {
      built.emplace_back(name, bin);
      continue;
    }
    std::cerr << "clbo bench kernels: " << bin.string() << " was not built (CLBO_BUILD_BENCH=ON"
              << (name == "bench_kernels_cuda" ? " and nvcc at configure time" : "") << ")"
              << std::endl;
  }
  if (built.empty())
    throw clbo::InputError("clbo bench kernels", "binaries", clbo::cli::sibling_binary("").string(),
                           "no kernel benchmark binary found beside clbo");
  // The user's --benchmark_out=FILE in JSON (Google Benchmark's default format) gets the same
  // treatment as -o; other formats go to Google Benchmark untouched.
  const auto user_out = clbo::bench::gbench_flag(o.extra, "benchmark_out");
  const bool user_json =
      user_out && !user_out->empty() &&
      clbo::bench::gbench_flag(o.extra, "benchmark_out_format").value_or("json") == "json";
  const bool listing = clbo::bench::gbench_bool_flag(o.extra, "benchmark_list_tests");
  // Without a GPU the CUDA binary would only say it skips; one file is then one binary's.
  if (user_json && !listing && !o.cuda_only && built.size() > 1 && !clbo::cli::gpu_visible()) {
    std::cerr << "clbo bench kernels: bench_kernels_cuda skipped: no GPU visible (nvidia-smi)"
              << std::endl;
    built.pop_back();
  }
  if (user_json && !o.out_dir.empty())
    throw clbo::InputError("clbo bench kernels", "--benchmark_out", *user_out,
                           "give either -o DIR or --benchmark_out=FILE, not both");
  if (user_json && !listing && built.size() > 1)
    throw clbo::InputError("clbo bench kernels", "--benchmark_out", *user_out,
                           "names one file but two binaries would run; add --cpu or --cuda, or "
                           "use -o DIR for one file per binary");
  std::vector<std::string> forwarded;
  for (const auto& a : o.extra)
    if (!(user_json &&
          (a.rfind("--benchmark_out=", 0) == 0 || a.rfind("--benchmark_out_format=", 0) == 0)))
      forwarded.push_back(a);
  if (user_json && !listing) clbo::check_output_path(*user_out, "--benchmark_out");
  if (!o.out_dir.empty() && !listing)
    for (const auto& [name, bin] : built)
      clbo::check_output_path((fs::path(o.out_dir) / result_file_name(name)).string(), "-o");
  int worst = 0;
  for (const auto& [name, bin] : built) {
    // Listing writes no results: Google Benchmark would leave an empty output file.
    if (listing || (o.out_dir.empty() && !user_json)) {
      worst = std::max(worst, run_binary(bin, listing ? forwarded : o.extra));
      continue;
    }
    const fs::path target =
        user_json ? fs::path(*user_out) : fs::path(o.out_dir) / result_file_name(name);
    worst = std::max(worst, run_to_json(bin, name, forwarded, target));
  }
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
          "Run the Google Benchmark kernel binaries (CPU and CUDA); every Google Benchmark "
          "flag goes to them (--benchmark_filter, --benchmark_min_time, --benchmark_out=FILE, "
          "--benchmark_list_tests, ...)");
      kern->add_flag("--cpu", kopt->cpu_only, "CPU kernels only");
      kern->add_flag("--cuda", kopt->cuda_only, "CUDA kernels only");
      kern->add_option("-o,--out", kopt->out_dir,
                       "Folder for one JSON file per binary (kernels-cpu.json, kernels-cuda.json: "
                       "Google Benchmark's JSON with clbo's metadata in its context)");
      kern->allow_extras();
      kern->prefix_command();  // everything it does not know passes on to the binaries
      kern->callback([action, kopt, kern] {
        kopt->extra = kern->remaining();
        *action = [kopt] { return run_kernel_benchmarks(*kopt); };
      });

      return [action] { return (*action)(); };
    });

}  // namespace
