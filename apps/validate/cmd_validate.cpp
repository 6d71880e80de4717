// `clbo validate experiments/validation/X.json`: measures collectives and optimizer steps on
// emulated TCP clusters (emu/, Mininet, needs root) and sets the simulator's prediction for
// the same cluster beside each measurement; writes results/validation/X.json atomically
// and prints the table (docs/validation.md).
//
// Order: the whole grid is checked first (nothing is created for a bad one); then, in a
// work folder that is removed at the end, the kernel benchmark and the emulation
// (emu/clbo-emu run; in a grid with steps every cluster calibrates its compute on itself
// right before its steps), then the simulations. A failure or a signal at any point leaves no
// results file, and the emulation removes its namespaces, bridges and processes itself.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "child_process.hpp"
#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"
#include "clbo/validate/compare.hpp"
#include "clbo/validate/kernel_contention.hpp"
#include "clbo/validate/model.hpp"
#include "clbo/validate/plan.hpp"
#include "clbo/validate/repeatability.hpp"
#include "clbo/validate/spec.hpp"
#include "cli.hpp"

#ifndef CLBO_SOURCE_DIR
#define CLBO_SOURCE_DIR "."
#endif

namespace {

namespace fs = std::filesystem;
using clbo::cli::progress;

struct Args {
  std::string experiment, output, keep_work, resimulate;
  std::vector<std::string> repeatability;
  bool check = false, quiet = false;
};

constexpr const char* kPython = "/usr/bin/python3";  // where Debian's mininet module lives
constexpr const char* kKernelFilter =
    "--benchmark_filter=BM_(compress_fused|unpack_scale|server_step|compact|scatter|random_mask)/";

volatile std::sig_atomic_t g_signal = 0;
// The running children (several only while the streaming contention is measured).
constexpr size_t kMaxChildren = 256;
volatile pid_t g_children[kMaxChildren] = {};

// Signals reach the running children's process groups (they clean up and exit), then us.
void on_signal(int sig) {
  g_signal = sig;
  for (size_t i = 0; i < kMaxChildren; ++i)
    if (g_children[i] > 0) ::kill(-g_children[i], SIGTERM);
}

fs::path find_emu() {
  for (const fs::path& dir : {fs::current_path() / "emu", fs::path(CLBO_SOURCE_DIR) / "emu"})
    if (fs::is_regular_file(dir / "clbo-emu")) return dir / "clbo-emu";
  throw clbo::InputError("clbo validate", "emulation", "emu/clbo-emu",
                         "not found in ./emu nor in the source tree " +
                             std::string(CLBO_SOURCE_DIR) + "/emu; run from the repository");
}

// Runs every argv at once, each in its own process group with its own log, and waits for all
// of them; returns the first nonzero exit code, else 0, and sets *failed to that child's index.
int run_together(const std::vector<std::vector<std::string>>& argvs,
                 const std::vector<std::string>& logs, size_t* failed = nullptr) {
  if (argvs.size() > kMaxChildren)
    throw clbo::Error(fmt::format("{} processes at once: at most {}", argvs.size(), kMaxChildren));
  std::cout.flush();
  for (size_t i = 0; i < argvs.size(); ++i) {
    try {
      g_children[i] = clbo::cli::start_child("", argvs[i], "", logs[i].empty() ? "-" : logs[i]);
    } catch (...) {
      // Stop and reap the ones already started before the work folder goes away.
      for (size_t j = 0; j < i; ++j) {
        ::kill(-g_children[j], SIGTERM);
        clbo::cli::wait_exit_code(g_children[j]);
        g_children[j] = 0;
      }
      throw;
    }
    if (g_signal) ::kill(-g_children[i], SIGTERM);
  }
  int first = 0;
  for (size_t i = 0; i < argvs.size(); ++i) {
    const int code = clbo::cli::wait_exit_code(g_children[i]);
    g_children[i] = 0;
    if (first == 0 && code != 0) {
      first = code;
      if (failed) *failed = i;
    }
  }
  return first;
}

// Runs argv to the end in its own process group, its output going to `log` ("" = our
// stderr, for the emulation's progress lines); returns its exit code.
int run(const std::vector<std::string>& argv, const std::string& log) {
  return run_together({argv}, {log});
}

void stop_if_signalled() {
  if (g_signal)
    throw clbo::Error(
        fmt::format("stopped by signal {}; nothing was written", static_cast<int>(g_signal)));
}

std::string tail(const std::string& path, size_t max_chars = 1500) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > max_chars ? s.substr(s.size() - max_chars) : s;
}

void must_succeed(int rc, const std::string& what, const std::string& log) {
  stop_if_signalled();
  if (rc != 0)
    throw clbo::Error(fmt::format("{} failed (exit {}); its log ends with:\n{}", what, rc,
                                  log.empty() ? std::string("(see above)") : tail(log)));
}

std::vector<double> loadavg() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  in >> a >> b >> c;
  return {a, b, c};
}

// A work folder removed on every exit path unless the user keeps it.
class WorkDir {
 public:
  explicit WorkDir(const std::string& keep) : keep_(!keep.empty()) {
    if (keep_) {
      path_ = fs::absolute(keep);
      fs::create_directories(path_);
      return;
    }
    std::string tmpl = (fs::temp_directory_path() / "clbo-validate-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw clbo::Error("cannot create a work folder in /tmp");
    path_ = tmpl;
  }
  ~WorkDir() {
    std::error_code ec;
    if (!keep_) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  bool keep_;
  fs::path path_;
};

void write_json(const fs::path& p, const nlohmann::json& j) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << j.dump(1);
}

nlohmann::json read_json(const fs::path& p) {
  return clbo::load_json_file(p.string());
}

void print_check(const clbo::validate::ValidationSpec& s) {
  size_t cases = 0;
  for (const auto& c : s.clusters) {
    const size_t sizes = c.sizes.list().size();
    cases += sizes * s.ops.size();
    std::cout << fmt::format("  {}: {} ranks, {} ops x {} sizes{}\n", c.id, c.ranks(), s.ops.size(),
                             sizes, s.steps.enabled && c.steps ? ", optimizer steps" : "");
  }
  std::cout << fmt::format(
      "{}: ok ({} clusters, {} op cases{}; the hosts' TCP congestion control: {})\n", s.file,
      s.clusters.size(), cases,
      s.steps.enabled ? fmt::format(", steps of {} optimizers", s.steps.optimizers.size()) : "",
      s.tcp_congestion_control);
}

int simulate_all(const Args& a, const clbo::validate::ValidationSpec& spec, const fs::path& dir,
                 const std::string& out, const std::vector<double>& load_start,
                 std::chrono::steady_clock::time_point wall0);

// --repeatability: the grid's earlier results compared with each other; measures nothing.
int compare_runs(const Args& a, const clbo::validate::ValidationSpec& spec) {
  std::string out = a.output;
  if (out.empty()) {
    fs::path p = clbo::validate::default_results_path(a.experiment);
    out = (p.parent_path() / (p.stem().string() + "-repeatability.json")).string();
  }
  std::error_code ec;
  for (const std::string& f : a.repeatability)
    if (fs::exists(out, ec) && fs::equivalent(f, out, ec))
      throw clbo::InputError(a.experiment, "-o", out,
                             "is one of the --repeatability inputs; it would be overwritten");
  std::vector<clbo::validate::ValidationRun> runs;
  for (const std::string& f : a.repeatability) runs.push_back({f, read_json(f)});
  nlohmann::json r = clbo::validate::repeatability(spec.config, runs);
  r["experiment_file"] = a.experiment;
  r["environment"] = clbo::environment_json();
  clbo::write_json_atomic(out, r);
  std::cout << clbo::validate::repeatability_table(r) << "wrote " << out << std::endl;
  return 0;
}

int run_validate(const Args& a) {
  using namespace clbo::validate;
  const auto wall0 = std::chrono::steady_clock::now();
  const ValidationSpec spec = load_validation_spec(a.experiment);
  if (a.check) {
    print_check(spec);
    return 0;
  }
  if (!a.repeatability.empty()) return compare_runs(a, spec);
  const std::string out = a.output.empty() ? default_results_path(a.experiment) : a.output;
  if (!a.resimulate.empty()) {
    // The same measurements, simulated again (after a change to the model): the folder
    // must hold what this very grid measured (its description aside, which measures nothing).
    const fs::path dir = a.resimulate;
    const nlohmann::json kept = read_json(dir / "validation-spec.json");
    if (measured_grid(kept) != measured_grid(spec.config))
      throw clbo::InputError(a.experiment, "--resimulate", a.resimulate,
                             "that work folder measured a different grid");
    return simulate_all(a, spec, dir, out, read_json(dir / "load-start.json"), wall0);
  }
  const fs::path emu = find_emu();
  const std::string self = clbo::cli::self_executable();
  auto say = [&](const std::string& m) {
    if (!a.quiet) progress("validate: " + m);
  };

  // Nothing is created before the environment can emulate.
  if (run({kPython, emu.string(), "check"}, "") != 0)
    throw clbo::Error("the emulated cluster cannot run here (see the reason above)");

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_signal);
  const std::vector<double> load_start = loadavg();
  WorkDir work(a.keep_work);
  write_json(work.path() / "load-start.json", load_start);
  // One CPU count for the calibration's workers and the simulations' contention divisor, kept
  // in the folder so a resimulation elsewhere divides by the measuring machine's.
  const int cpus = clbo::validate::machine_cpus();
  write_json(work.path() / "machine.json",
             {{"cpus", cpus}, {"facts", clbo::validate::machine_facts()}});
  // The warm-round TCP probe is built beside clbo (emu/probes).
  const fs::path tcp_rounds = fs::path(self).parent_path() / "clbo-tcp-rounds";
  const Tools tools{self, work.path().string(),
                    fs::exists(tcp_rounds) ? tcp_rounds.string() : std::string()};
  say(fmt::format("{}: {} emulated clusters; work folder {}", spec.file, spec.clusters.size(),
                  work.path().string()));
  if (tools.tcp_rounds.empty())
    say(
        fmt::format("warning: {} is missing, so no cluster measures TCP's warm all-pairs rounds "
                    "and every all-pairs round keeps the long probe's efficiency",
                    tcp_rounds.string()));

  // 1. The compression kernels' rates, measured alone, now.
  say("measuring the CPU compression kernels (clbo bench kernels --cpu)");
  const fs::path kdir = work.path() / "kernels";
  const std::string klog = (work.path() / "kernels.log").string();
  must_succeed(run({self, "bench", "kernels", "--cpu", "-o", kdir.string(), kKernelFilter,
                    fmt::format("--benchmark_repetitions={}", kKernelBenchRepetitions),
                    fmt::format("--benchmark_min_time={}", kKernelBenchMinTime_s)},
                   klog),
               "clbo bench kernels", klog);

  // 1b. The streaming kernels' contention: p copies of one streaming kernel at once, for each
  // rank count of the grid, beside one copy alone (kernel_contention.hpp).
  const fs::path kfile = kdir / "kernels-cpu.json";
  const nlohmann::json kbench = read_json(kfile);
  const std::string probe = streaming_probe_name(kbench, kfile.string());
  const int64_t iterations = contention_iterations(kbench, probe, kfile.string());
  auto copies_at_once = [&](int p) {
    std::vector<std::vector<std::string>> argvs;
    std::vector<std::string> logs;
    std::vector<fs::path> dirs;
    // The copies build their buffers, then start timing together (bench/start_barrier.hpp).
    const fs::path barrier = kdir / fmt::format("contention-p{}-barrier", p);
    fs::create_directories(barrier);
    for (int i = 0; i < p; ++i) {
      dirs.push_back(kdir / fmt::format("contention-p{}-{}", p, i));
      logs.push_back(dirs.back().string() + ".log");
      argvs.push_back({self, "bench", "kernels", "--cpu", "-o", dirs.back().string(),
                       "--no_reference", "--benchmark_filter=" + streaming_probe_filter(probe),
                       fmt::format("--iterations={}", iterations),
                       fmt::format("--benchmark_repetitions={}", kContentionRepetitions),
                       fmt::format("--start_barrier={},{}", barrier.string(), p)});
    }
    size_t failed = 0;
    const int rc = run_together(argvs, logs, &failed);
    must_succeed(rc, fmt::format("copy {} of {} of {} at once", failed, p, probe), logs[failed]);
    std::vector<nlohmann::json> out;
    for (const fs::path& d : dirs) out.push_back(read_json(d / "kernels-cpu.json"));
    return out;
  };
  // Rank counts whose copies would not fit in memory are left out: their clusters' kernels
  // then slow by the compute contention (their streaming_contention says so).
  const double copy_bytes = streaming_probe_bytes(kbench, probe, kfile.string());
  const double memory = available_memory();
  std::vector<int> counts;
  for (int p : contention_rank_counts(spec)) {
    if (memory > 0 && p * copy_bytes > 0.8 * memory)
      say(
          fmt::format("streaming contention not measured for {} ranks: {} copies need {:.1f} GB, "
                      "{:.1f} GB are available",
                      p, p, p * copy_bytes / 1e9, memory / 1e9));
    else
      counts.push_back(p);
  }
  say(fmt::format("measuring the streaming kernels' contention ({} alone, then {} copies at once)",
                  probe, fmt::join(counts, ", ")));
  const nlohmann::json alone = copies_at_once(1).front();
  std::map<int, std::vector<nlohmann::json>> at_once;
  for (int p : counts) at_once[p] = copies_at_once(p);
  const fs::path cfile = kdir / "streaming-contention.json";
  const nlohmann::json crec = streaming_contention_record(probe, alone, at_once, cfile.string());
  write_json(cfile, crec);
  for (int p : counts) {
    const double f = streaming_contention(crec, p, cfile.string());
    if (streaming_factor(f, cpu_contention(p, cpus)).floored)
      say(
          fmt::format("warning: {} copies at once measured a streaming contention of {:.2f}, below "
                      "the {:.2f} that sharing {} cores implies (far below: the copies did not "
                      "all run at once; a few percent: timing noise where the memory's limit is "
                      "near the cores'); the simulations use {:.2f}",
                      p, f, cpu_contention(p, cpus), cpus, cpu_contention(p, cpus)));
  }

  // 2. The emulation: every cluster's probes and MPI jobs. Grids with steps calibrate each
  // cluster's compute right before its steps: its p ranks at once and one rank alone, on its
  // host 0 (docs/validation.md, "CPU contention").
  for (const ClusterConfig& c : spec.clusters) {
    fs::create_directories(cluster_dir(tools, c));
    if (spec.steps.enabled && c.steps)
      write_json(steps_experiment_path(tools, c), steps_experiment(spec, c));
    if (spec.steps.enabled) {
      write_json(calibration_experiment_path(tools, c), calibration_experiment(spec, c.ranks()));
      write_json(calibration_experiment_path(tools, c, true), calibration_alone_experiment(spec));
    }
  }
  const fs::path plan = work.path() / "plan.json";
  write_json(plan, emu_plan(spec, tools));
  say("running the emulation (" + emu.string() + " run)");
  const int rc = run({kPython, emu.string(), "run", plan.string()}, "");
  stop_if_signalled();
  if (rc != 0)
    throw clbo::Error(
        fmt::format("the emulation failed (exit {}; its message is above); "
                    "nothing was written",
                    rc));
  write_json(work.path() / "validation-spec.json", spec.config);
  // The measuring run's wall time so far (everything but the simulations, about a second),
  // kept for a resimulation, whose own timing.wall_s is only its simulations'.
  write_json(work.path() / "timing.json",
             {{"measured_wall_s",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count()}});
  return simulate_all(a, spec, work.path(), out, load_start, wall0);
}

// Reads the measurements of a work folder and writes the results file.
int simulate_all(const Args& a, const clbo::validate::ValidationSpec& spec, const fs::path& dir,
                 const std::string& out, const std::vector<double>& load_start,
                 std::chrono::steady_clock::time_point wall0) {
  using namespace clbo::validate;
  auto say = [&](const std::string& m) {
    if (!a.quiet) progress("validate: " + m);
  };
  // Only the jobs' output paths are read here: no probe runs, so no clbo-tcp-rounds.
  const Tools tools{clbo::cli::self_executable(), dir.string(), ""};
  const fs::path kfile = dir / "kernels" / "kernels-cpu.json";
  const nlohmann::json kbench = read_json(kfile);
  // The streaming kernels' contention by rank count (a folder kept before it was measured has
  // none: those kernels then slow by the compute contention, as the model did then).
  const fs::path cfile = dir / "kernels" / "streaming-contention.json";
  const nlohmann::json streaming_record =
      fs::exists(cfile) ? read_json(cfile) : nlohmann::json(nullptr);
  // A folder kept before each cluster had its own calibration holds one, run on the local
  // backend before the emulation: every cluster's steps use it.
  const fs::path shared_cal = dir / "calibration.json";
  std::unique_ptr<Calibration> shared_calibration;
  if (spec.steps.enabled && fs::exists(shared_cal)) {
    shared_calibration = std::make_unique<Calibration>(
        read_calibration(read_json(shared_cal), shared_cal.string(),
                         "one worker per CPU at once, on the local backend, once before the "
                         "emulation (a work folder kept before each cluster had its own)"));
    // Its workers were threads of one process, talking through memory: not the cluster's
    // ranks over loopback, so their communication is no floor for the cluster's.
    shared_calibration->comm_floor_s = nullptr;
  }
  const nlohmann::json measured = read_json(dir / "measured.json");

  // 3. The simulations, cluster by cluster, at the CPU count the measurements ran on (a
  // folder kept before machine.json existed: this machine's).
  const fs::path mfile = dir / "machine.json";
  int cpus = machine_cpus();
  // The measuring machine's kernel and idle driver; null for a folder kept before 2026-12-06.
  nlohmann::json facts = nullptr;
  if (fs::exists(mfile)) {
    const nlohmann::json m = read_json(mfile);
    if (m.is_object() && m.contains("facts")) facts = m["facts"];
    if (!m.is_object() || !m.contains("cpus") || !m["cpus"].is_number_integer() ||
        m["cpus"].get<int64_t>() < 1 || m["cpus"].get<int64_t>() > 4096)
      throw clbo::InputError(mfile.string(), "cpus",
                             m.is_object() ? m.value("cpus", nlohmann::json()).dump() : m.dump(),
                             "expected the measuring machine's CPU count, 1..4096");
    cpus = m["cpus"].get<int>();
  }
  std::vector<nlohmann::json> cases;
  nlohmann::json clusters = nlohmann::json::array();
  for (size_t i = 0; i < spec.clusters.size(); ++i) {
    const ClusterConfig& c = spec.clusters[i];
    stop_if_signalled();
    say(fmt::format("simulating cluster {}/{} ({})", i + 1, spec.clusters.size(), c.id));
    const nlohmann::json& record = measured["clusters"][i];
    ClusterMeasurements m;
    m.config = &c;
    m.record = record;
    m.jobs = bench_jobs(spec, c, tools);
    for (const BenchJob& b : m.jobs) m.bench.push_back(read_json(b.out));
    // Every launch's result; a folder kept before there were several launches has one.
    auto launches = [&](bool same_host) {
      std::vector<nlohmann::json> out;
      for (int i = 0; i < clbo::validate::kPingpongLaunches; ++i) {
        const std::string f = pingpong_out(tools, c, same_host, i);
        if (i == 0 || fs::exists(f)) out.push_back(read_json(f));
      }
      return out;
    };
    const std::vector<nlohmann::json> pp_net = launches(false);
    const std::vector<nlohmann::json> pp_host =
        c.ranks_per_host > 1 ? launches(true) : std::vector<nlohmann::json>();
    auto rows_of = [](const std::vector<nlohmann::json>& v) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& b : v) out.push_back(b["rows"]);
      return out;
    };
    // The cluster's own calibration: its p ranks' compute at once, and one rank alone (a folder
    // kept before these existed holds one shared calibration instead).
    std::unique_ptr<Calibration> own_calibration, alone_calibration;
    // (A folder kept before every cluster was calibrated has none for a cluster without steps.)
    if (spec.steps.enabled && !shared_calibration &&
        (c.steps || fs::exists(calibration_out(tools, c)))) {
      own_calibration = std::make_unique<Calibration>(read_calibration(
          read_json(calibration_out(tools, c)), calibration_out(tools, c),
          "the cluster's ranks at once on its host 0 (clbo train --backend mpi), just before "
          "its steps job"));
      if (fs::exists(calibration_out(tools, c, true)))
        alone_calibration = std::make_unique<Calibration>(
            read_calibration(read_json(calibration_out(tools, c, true)),
                             calibration_out(tools, c, true), "one rank alone on host 0"));
    }
    if (spec.steps.enabled && c.steps) m.steps = read_json(steps_out(tools, c));
    const Calibration* calibration =
        own_calibration ? own_calibration.get() : shared_calibration.get();
    const Links links = read_links(record, pp_net, pp_host, c.id);
    for (const std::string& note : links.notes) say("warning: " + note);
    // p ranks on C cores: compute is slowed by what the calibration measured where it ran on
    // these p ranks (their gradient against one rank's alone), else by p/C.
    const double contention = cpu_contention(c.ranks(), cpus);
    const bool measured_contention = own_calibration && alone_calibration &&
                                     own_calibration->ranks == c.ranks() &&
                                     alone_calibration->gradient_s > 0;
    const double compute_contention =
        measured_contention ? own_calibration->gradient_s / alone_calibration->gradient_s
                            : contention;
    const double calibration_factor =
        calibration ? contention / cpu_contention(calibration->ranks, cpus) : 1.0;
    const double measured_streaming =
        streaming_record.is_null()
            ? 0
            : streaming_contention(streaming_record, c.ranks(), cfile.string());
    const StreamingFactor floored = streaming_factor(measured_streaming, contention);
    const double streaming = measured_streaming > 0 ? floored.factor : compute_contention;
    const clbo::sim::KernelModel km =
        kernel_model(kbench, kfile.string(), compute_contention, streaming, c.ranks());
    // MPI's software latency: measured on all the cluster's ranks at once, else (a folder kept
    // before, a two-rank ping-pong) stretched by p/C.
    const nlohmann::json preset =
        cluster_preset(c, links, contention / cpu_contention(links.mpi_probe_ranks, cpus));
    const clbo::sim::ClusterSpec cs = clbo::sim::parse_cluster(preset, "emu-" + c.id);
    const clbo::validate::AllPairs all_pairs = all_pairs_model(cs, c, links);
    auto mine = compare_cluster(spec, m, cs, km, calibration_factor, all_pairs, calibration);
    for (auto& k : mine) {
      k["load_average_1min"] = record["loadavg_after"][0];
      cases.push_back(std::move(k));
    }
    nlohmann::json rec = record;
    for (auto& [id, job] : rec["jobs"].items()) job.erase("log");  // the work folder goes away
    clusters.push_back(
        {{"id", c.id},
         {"config", c.to_json()},
         {"emulation", rec},
         {"links", links.to_json()},
         {"mpi_pingpong",
          {{"launches", pp_net.size()},
           {"between_hosts", rows_of(pp_net)},
           {"same_host", pp_host.empty() ? nlohmann::json() : rows_of(pp_host)}}},
         {"preset", preset},
         {"cpu_contention", contention},
         {"compute_contention",
          {{"factor", compute_contention},
           {"source", measured_contention
                          ? "measured: the calibration's gradient on the cluster's ranks at "
                            "once over one rank's alone"
                          : "modelled: cpu_contention (p/C)"}}},
         {"streaming_contention",
          {{"factor", streaming},
           {"measured_factor",
            measured_streaming > 0 ? nlohmann::json(measured_streaming) : nlohmann::json()},
           {"source", measured_streaming <= 0
                          ? "the compute contention (not measured for this rank count)"
                      : floored.floored
                          ? "the cores' time-sharing p/C: the measured factor (" +
                                streaming_record.value("benchmark", "?") +
                                ", the median of p copies at once over one copy alone) is below "
                                "it (far below: the copies did not all run at once; a few "
                                "percent: timing noise)"
                          : "measured: " + streaming_record.value("benchmark", "?") +
                                ", the median of p copies at once over one copy alone "
                                "(kernels/streaming-contention.json of the work folder)"}}},
         {"all_pairs_efficiency", all_pairs.efficiency},
         {"all_pairs_efficiency_by_bytes", all_pairs.to_json()},
         {"kernel_model", km.to_json()},
         {"calibration", own_calibration ? own_calibration->to_json() : nlohmann::json(nullptr)},
         {"calibration_alone",
          alone_calibration ? alone_calibration->to_json() : nlohmann::json(nullptr)}});
  }
  const nlohmann::json summary = summarize(cases);
  nlohmann::json result = {
      {"schema", "clbo.validate/1"},
      {"experiment_file", spec.file},
      {"config", spec.config},
      {"environment", clbo::environment_json()},
      {"machine",
       {{"cpus", cpus},
        {"facts", facts},
        {"load_average_start", load_start},
        {"load_average_end", loadavg()},
        {"note", "the emulated hosts share these CPUs; see each cluster's load averages"},
        {"streaming_contention", streaming_record}}},
      {"inputs",
       {{"kernel_bench", kbench},
        {"calibration", shared_calibration
                            ? shared_calibration->to_json()
                            : nlohmann::json("per cluster: clusters[].calibration")}}},
      {"clusters", clusters},
      {"cases", cases},
      {"summary", summary},
      {"provenance",
       {{"measured_s",
         "measured on the emulated cluster (clbo bench collectives / clbo train "
         "--backend mpi under mpirun across the emulated hosts)"},
        {"simulated_s",
         "simulated (clbo's SimGrid simulator, Backend mpi_host) on the "
         "cluster's generated preset"},
        {"clusters[].links", "measured by the run's probes"},
        {"inputs", "measured in the same run"}}},
      {"timing",
       {{"wall_s",
         std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count()}}}};
  if (!a.resimulate.empty()) {
    // Nothing was measured now: say which run measured, and that the timing is this one's.
    result["resimulated"] = {
        {"work_folder", a.resimulate},
        {"note",
         "measured by the earlier run that kept this work folder (--keep-work); simulated "
         "again from it by --resimulate. timing.wall_s and machine.load_average_end are the "
         "resimulation's, machine.load_average_start the measuring run's, and "
         "measured_wall_s the measuring run's time up to its simulations (null for a folder "
         "kept before 2026-12-06)"}};
    const fs::path tfile = fs::path(a.resimulate) / "timing.json";
    result["resimulated"]["measured_wall_s"] =
        fs::exists(tfile) ? read_json(tfile).value("measured_wall_s", nlohmann::json())
                          : nlohmann::json();
    result["provenance"]["inputs"] =
        "measured by the run that kept the work folder (see resimulated)";
  }
  clbo::write_json_atomic(out, result);
  std::cout << cases_table(cases, summary);
  if (const auto& st = summary["steal"]; st["cases_over"].get<int64_t>() > 0)
    std::cerr << fmt::format(
        "[clbo] validate: warning: {} cases were measured while the hypervisor took over "
        "{:.0f}% of the CPUs (steal, up to {:.0f}%; clusters {}): they measured a slower "
        "machine than the one their probes and kernel rates describe. Rerun on a quiet "
        "machine to compare the model with these clusters (summary.steal).\n",
        st["cases_over"].get<int64_t>(), 100 * st["threshold"].get<double>(),
        100 * st["max_share"].get<double>(),
        fmt::join(st["clusters_over"].get<std::vector<std::string>>(), ", "));
  if (const auto& probes = summary["steal"]["probe_clusters_over"]; !probes.empty())
    std::cerr << fmt::format(
        "[clbo] validate: warning: the link probes of clusters {} ran while the hypervisor "
        "took over {:.0f}% of the CPUs: their presets' rates are slower than the links, and "
        "every case of theirs was simulated on them (summary.steal.probe_clusters_over).\n",
        fmt::join(probes.get<std::vector<std::string>>(), ", "),
        100 * summary["steal"]["threshold"].get<double>());
  if (const auto& net = summary["network_cpu"]; !net["cpu_bound_clusters"].empty())
    std::cerr << fmt::format(
        "[clbo] validate: warning: the links of clusters {} were bound by this machine's CPUs "
        "(idle under {:.0f}% while every host streamed at its rate): their errors test the "
        "packet processing the simulator does not model more than the network model "
        "(summary.network_cpu; docs/validation.md, \"Which clusters\").\n",
        fmt::join(net["cpu_bound_clusters"].get<std::vector<std::string>>(), ", "),
        100 * net["idle_threshold"].get<double>());
  std::cout << "wrote " << out << std::endl;
  return 0;
}

clbo::cli::Registrar reg(
    "validate",
    "Measure collectives and optimizer steps on emulated TCP clusters (Mininet, needs root) "
    "and set the simulator's prediction beside each (see docs/validation.md)",
    [](CLI::App& sub) {
      auto a = std::make_shared<Args>();
      sub.add_option("experiment", a->experiment, "validation grid (experiments/validation/X.json)")
          ->required();
      sub.add_option("-o,--out", a->output, "results file (default: results/validation/X.json)");
      sub.add_flag("--check", a->check,
                   "only check the grid (fields, what this machine can host) and list its "
                   "clusters; create nothing");
      sub.add_flag("-q,--quiet", a->quiet, "no progress lines (the emulation's stay)");
      sub.add_option("--keep-work", a->keep_work,
                     "keep the work folder (logs, raw results) at this path instead of a "
                     "temporary one that is removed");
      sub.add_option("--resimulate", a->resimulate,
                     "measure nothing: simulate again the measurements a --keep-work folder "
                     "holds for this same grid (after a change to the model)");
      sub.add_option("--repeatability", a->repeatability,
                     "measure nothing: compare two or more results of this same grid (e.g. "
                     "--resimulate'd runs of it) case by case, and score each run against the "
                     "other runs' median; writes results/validation/X-repeatability.json "
                     "unless -o says where. Give the grid first: clbo validate X.json "
                     "--repeatability A.json B.json ...")
          ->excludes("--resimulate")
          ->excludes("--keep-work")
          ->excludes("--check");
      return [a] { return run_validate(*a); };
    });

}  // namespace
