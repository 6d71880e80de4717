// `clbo reproduce`: the README's main job. It validates every input, then runs every
// simulation experiment, a smoke subset of convergence (--full: the whole set), the CPU
// kernel and collective benchmarks (on a GPU node also the CUDA and NCCL ones), and finally
// `clbo report` and `clbo plot` on what it produced. Every step is a child process of this
// same binary (SimGrid allows one engine per process; the benchmark binary links MPI/NCCL,
// which must not share a process with SimGrid), with its output in logs/.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "child_process.hpp"
#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"
#include "cli.hpp"
#include "cli_integer.hpp"

#ifndef CLBO_SOURCE_DIR
#define CLBO_SOURCE_DIR ""
#endif

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  bool full = false, quiet = false, dry_run = false;
  std::string root, out = ".";
  int jobs = 0;
};

// Benchmark sweep of the collective benchmarks: 8 B to 64 MiB, small enough to fit the budget.
const std::vector<std::string> kCollectiveSweep = {"-b", "8",  "-e", "64M", "-f",
                                                   "4",  "-n", "5",  "-w",  "2"};

// The convergence experiment run without --full, and left out of SUMMARY.md (not a result).
const char* const kSmoke = "smoke.json";

struct Step {
  std::string phase;  // steps of one phase run together; phases run in order
  bool parallel = false;
  std::string label;
  std::vector<std::vector<std::string>> commands;   // argv; "clbo" means this binary
  std::function<void(std::ostream& log)> internal;  // a step done in this process instead
  std::string hint;                                 // printed when the step fails
  // Filled while running.
  std::string log;
  double wall_s = 0, cpu_s = 0;
};

Step make_step(std::string phase, bool parallel, std::string label) {
  Step s;
  s.phase = std::move(phase);
  s.parallel = parallel;
  s.label = std::move(label);
  return s;
}

struct Reproduction {
  fs::path root, out;
  std::vector<Step> steps;
  std::vector<std::string> notes;  // said before the run and again in the summary
  int jobs = 1;
};

// ---- paths -----------------------------------------------------------------

fs::path resolve_root(const std::string& given) {
  if (!given.empty()) {
    if (!fs::is_directory(fs::path(given) / "experiments"))
      throw clbo::InputError("<command line>", "--root", given,
                             "has no experiments/ folder (give the clbo source tree)");
    return fs::canonical(given);
  }
  if (fs::is_directory("experiments")) return fs::canonical(".");
  const std::string src = CLBO_SOURCE_DIR;
  if (!src.empty() && fs::is_directory(fs::path(src) / "experiments")) return fs::canonical(src);
  throw clbo::InputError("<command line>", "--root", ".",
                         "no experiments/ folder here and none in the source tree '" + src +
                             "'; run from the clbo source tree or give --root");
}

// Children run in the root, so results record the experiment paths exactly as committed
// ("experiments/sim/x.json"); paths inside the root are passed relative to it.
std::string arg_path(const Reproduction& p, const fs::path& path) {
  const fs::path rel = path.lexically_relative(p.root);
  if (!rel.empty() && *rel.begin() != "..") return rel.string();
  return path.string();
}

// A path as the user should read it: relative to the current folder when inside it.
std::string shown(const fs::path& path) {
  const fs::path rel = path.lexically_relative(fs::current_path());
  if (!rel.empty() && *rel.begin() != "..") return rel.string();
  return path.string();
}

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_';
    if (keep)
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.substr(0, 80);
}

// ---- the steps ---------------------------------------------------------------

bool gpu_visible(const nlohmann::json& env) {
  if (env.contains("gpu") && !env["gpu"].is_null()) return true;
  return clbo::cli::gpu_visible();
}

// Copies results this run does not regenerate (e.g. the full convergence set without
// --full) from the root's committed results into --out, so the report and figures have every
// input; each copied file keeps its own environment and provenance.
void carry_over(const fs::path& from, const fs::path& to, const std::vector<fs::path>& produced,
                std::ostream& log) {
  int copied = 0;
  for (const auto& e : fs::recursive_directory_iterator(from)) {
    if (!e.is_regular_file()) continue;
    const fs::path rel = e.path().lexically_relative(from);
    const fs::path target = to / rel;
    if (std::find(produced.begin(), produced.end(), target) != produced.end()) continue;
    if (fs::exists(target)) continue;
    fs::create_directories(target.parent_path());
    fs::copy_file(e.path(), target);
    log << "copied " << e.path().string() << " -> " << target.string() << "\n";
    ++copied;
  }
  log << copied << " committed results copied\n";
}

Reproduction make_reproduction(const Options& o) {
  Reproduction p;
  p.root = resolve_root(o.root);
  p.out = fs::weakly_canonical(fs::absolute(o.out));
  p.jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  const fs::path exp = p.root / "experiments", results = p.out / "results";

  // Inputs, found and parsed now: a broken file stops everything before any work.
  const std::vector<fs::path> sims = json_files(exp / "sim");
  std::vector<fs::path> papers;
  for (const auto& f : json_files(exp / "paper"))
    if (clbo::load_json_file(f.string()).contains("simulate")) papers.push_back(f);
  std::vector<fs::path> trains;
  for (const auto& f : json_files(exp / "convergence"))
    if (o.full || f.filename() == kSmoke) trains.push_back(f);
  if (trains.empty())
    throw clbo::InputError(exp.string(), "convergence", kSmoke,
                           "the smoke experiment is missing from experiments/convergence/");

  std::vector<fs::path> produced;  // result files this run writes
  auto result_of = [&](const fs::path& experiment, const std::string& kind) {
    const fs::path r = results / kind / experiment.filename();
    produced.push_back(r);
    return r;
  };

  // Phase validate: every config and every tool, before any work.
  {
    Step s = make_step("validate", false, "validate paper claim specs (clbo report --check-specs)");
    s.commands.push_back({"clbo", "report", "--check-specs", "--specs", "experiments/paper"});
    s.hint = "`clbo report` is part of clbo; if it is unknown, rebuild clbo from this tree";
    p.steps.push_back(s);
  }
  {
    Step s =
        make_step("validate", false,
                  fmt::format("validate {} simulation experiment{}", sims.size() + papers.size(),
                              sims.size() + papers.size() == 1 ? "" : "s"));
    // With the compute step's -o, so the check covers the output path it will write.
    for (const auto& [files, kind] :
         {std::pair{&sims, "sim"}, std::pair{&std::as_const(papers), "paper"}})
      for (const auto& f : *files)
        s.commands.push_back({"clbo", "simulate", "--check", arg_path(p, f), "-o",
                              arg_path(p, results / kind / f.filename())});
    s.hint = "`clbo simulate` needs the simulator (SimGrid: apt-get install libsimgrid-dev)";
    p.steps.push_back(s);
  }
  {
    Step s = make_step("validate", false,
                       fmt::format("validate {} convergence experiment{} and the data",
                                   trains.size(), trains.size() == 1 ? "" : "s"));
    for (const auto& f : trains)
      s.commands.push_back({"clbo", "train", "--check", arg_path(p, f), "-o",
                            arg_path(p, results / "convergence" / f.filename())});
    s.hint = "`clbo train` needs Eigen (libeigen3-dev) and the data (dataset-fashion-mnist)";
    p.steps.push_back(s);
  }
  {
    Step s = make_step("validate", false, "check clbo plot and matplotlib");
    s.commands.push_back({"clbo", "plot", "--help"});
    s.commands.push_back({"/usr/bin/python3", "-c", "import matplotlib"});
    s.hint =
        "the figures need `clbo plot` (built from this tree) and Debian's python3-matplotlib "
        "(apt-get install python3-matplotlib)";
    p.steps.push_back(s);
  }

  // Phase compute: independent experiments, in parallel up to --jobs; the longest first.
  struct Group {
    std::string tool, results_kind;
    const std::vector<fs::path>& files;
  };
  for (const Group& g : {Group{"train", "convergence", trains}, Group{"simulate", "paper", papers},
                         Group{"simulate", "sim", sims}})
    for (const auto& f : g.files) {
      Step s = make_step("compute", true, g.tool + " " + arg_path(p, f));
      s.commands.push_back(
          {"clbo", g.tool, arg_path(p, f), "-o", arg_path(p, result_of(f, g.results_kind))});
      p.steps.push_back(s);
    }
  if (o.full) {  // as experiments/convergence/run_all.sh: the summary of the full set
    Step s = make_step("summary", false, "summarise convergence (results/convergence/SUMMARY.md)");
    std::vector<std::string> cmd = {"clbo", "train", "--summary"};
    for (const auto& f : trains)
      if (f.filename() != kSmoke)
        cmd.push_back(arg_path(p, results / "convergence" / f.filename()));
    const fs::path summary = results / "convergence" / "SUMMARY.md";
    produced.push_back(summary);
    cmd.insert(cmd.end(), {"-o", arg_path(p, summary)});
    s.commands.push_back(cmd);
    p.steps.push_back(s);
  }

  // Phase bench: measurements run alone, one at a time, on a quiet machine.
  const fs::path bench = results / "bench";
  {
    Step s = make_step("bench", false, "bench kernels --cpu");
    s.commands.push_back({"clbo", "bench", "kernels", "--cpu", "-o", arg_path(p, bench)});
    s.hint = "the kernel benchmarks need CLBO_BUILD_BENCH=ON (libbenchmark-dev)";
    p.steps.push_back(s);
  }
  for (const std::string op : {"allreduce", "compressed"}) {
    const fs::path file = bench / ("collectives-local-" + op + ".json");
    produced.push_back(file);
    Step s = make_step("bench", false, "bench collectives --backend local --collective " + op);
    std::vector<std::string> cmd = {"clbo", "bench", "collectives",  "--backend", "local",
                                    "-t",   "4",     "--collective", op};
    cmd.insert(cmd.end(), kCollectiveSweep.begin(), kCollectiveSweep.end());
    cmd.insert(cmd.end(), {"-J", arg_path(p, file)});
    s.commands.push_back(cmd);
    p.steps.push_back(s);
  }

  // Phase gpu: only where a device is visible, and only what this build can run.
  const nlohmann::json env = clbo::environment_json();
  if (gpu_visible(env)) {
    const fs::path gpu = results / "gpu";
    const fs::path self_dir = fs::path(clbo::cli::self_executable()).parent_path();
    if (fs::exists(self_dir / "bench_kernels_cuda")) {
      Step s = make_step("gpu", false, "bench kernels --cuda");
      s.commands.push_back({"clbo", "bench", "kernels", "--cuda", "-o", arg_path(p, gpu)});
      p.steps.push_back(s);
    } else {
      p.notes.push_back(
          "a GPU is visible but this clbo was built without the CUDA kernel benchmarks "
          "(configure with nvcc): CUDA kernel benchmarks not run");
    }
    if (env.contains("nccl") && !env["nccl"].is_null()) {
      for (const std::string op : {"allreduce", "compressed"}) {
        const fs::path file = gpu / ("collectives-nccl-p1-" + op + ".json");
        produced.push_back(file);
        Step s = make_step("gpu", false,
                           "bench collectives --backend nccl --ngpus 1 --collective " + op);
        std::vector<std::string> cmd = {"clbo", "bench", "collectives", "--backend", "nccl",
                                        "-g",   "1",     "-t",          "1",         "--collective",
                                        op};
        cmd.insert(cmd.end(), kCollectiveSweep.begin(), kCollectiveSweep.end());
        cmd.insert(cmd.end(), {"-J", arg_path(p, file)});
        s.commands.push_back(cmd);
        p.steps.push_back(s);
      }
    } else {
      p.notes.push_back(
          "a GPU is visible but this clbo was built without NCCL: NCCL benchmark not run");
    }
  } else {
    p.notes.push_back("no GPU visible: CUDA and NCCL benchmarks not run (CPU results only)");
  }

  // Phase report: only from a complete set of results.
  const fs::path committed = p.root / "results";
  if (p.out != p.root && fs::is_directory(committed)) {
    Step s = make_step("report", false,
                       "copy committed results not rerun here (from " + shown(committed) + ")");
    s.internal = [committed, results, produced](std::ostream& log) {
      carry_over(committed, results, produced, log);
    };
    p.steps.push_back(s);
  }
  {
    Step s = make_step("report", false, "report (tables/paper.md, headline.md, summary.md)");
    s.commands.push_back({"clbo", "report", arg_path(p, results), "--specs", "experiments/paper",
                          "--out", arg_path(p, p.out / "tables")});
    p.steps.push_back(s);
  }
  {
    Step s = make_step("report", false, "plot (figures/*.png, *.svg)");
    s.commands.push_back({"clbo", "plot", "--results", arg_path(p, results), "--out",
                          arg_path(p, p.out / "figures")});
    p.steps.push_back(s);
  }
  return p;
}

// ---- running it ----------------------------------------------------------------

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) {
  g_interrupted = 1;
}

std::string tail_of(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    out += "    " + all[i] + "\n";
  return out;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a.find_first_of(" \"'") == std::string::npos ? a : "'" + a + "'";
  }
  return s;
}

class Runner {
 public:
  Runner(Reproduction& job, bool quiet) : job_(job), quiet_(quiet), tty_(::isatty(STDERR_FILENO)) {
    self_ = clbo::cli::self_executable();
    logs_ = job.out / "logs";
    fs::create_directories(logs_);
    for (const auto& e : fs::directory_iterator(logs_))  // only this run's logs remain
      if (e.path().extension() == ".log") fs::remove(e.path());
    journal_.open(logs_ / "reproduce.log");
    start_ = Clock::now();
  }

  // Runs every step; returns the index of the failed step or -1.
  int run() {
    size_t i = 0;
    while (i < job_.steps.size()) {
      size_t j = i;
      while (j < job_.steps.size() && job_.steps[j].phase == job_.steps[i].phase) ++j;
      const int failed = run_phase(i, j);
      if (failed >= 0) return failed;
      i = j;
    }
    return -1;
  }

  double elapsed() const { return seconds_since(start_); }
  double cpu_total() const {
    double c = 0;
    for (const auto& s : job_.steps) c += s.cpu_s;
    return c;
  }
  void say(const std::string& line) {
    clear_status();
    std::cerr << line << std::endl;
    journal_ << line << std::endl;
  }

 private:
  struct Running {
    size_t step, command;
    pid_t pid;
    Clock::time_point started;
  };

  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  std::string number(size_t i) const {
    const int w = static_cast<int>(std::to_string(job_.steps.size()).size());
    return fmt::format("[{:>{}}/{}]", i + 1, w, job_.steps.size());
  }

  void start(size_t index, size_t command) {
    Step& s = job_.steps[index];
    std::vector<std::string> argv = s.commands[command];
    std::string program;
    if (argv[0] == "clbo") {  // this binary: argv[0] names it for the child's own messages
      program = clbo::cli::kSelfImage;
      argv[0] = self_;
    }
    std::ofstream(s.log, std::ios::app)
        << "$ (cd " << job_.root.string() << " && " << command_line(s.commands[command]) << ")\n";
    running_.push_back({index, command,
                        clbo::cli::start_child(program, argv, job_.root.string(), s.log),
                        Clock::now()});
  }

  void begin_step(size_t index) {
    Step& s = job_.steps[index];
    const std::string name = s.label.substr(0, s.label.find(" ("));  // no parenthetical
    s.log = (logs_ / fmt::format("{:02}-{}.log", index + 1, slug(name))).string();
    step_start_[index] = Clock::now();
    if (s.internal) {
      std::ofstream log(s.log);
      s.internal(log);
      finish_step(index);
      return;
    }
    start(index, 0);
  }

  void finish_step(size_t index) {
    Step& s = job_.steps[index];
    s.wall_s = seconds_since(step_start_[index]);
    if (!quiet_)
      say(fmt::format("{} {:<62} {:>7.1f} s  (cpu {:6.1f} s)  total {:6.1f} s", number(index),
                      s.label, s.wall_s, s.cpu_s, elapsed()));
  }

  void clear_status() {
    if (tty_ && status_shown_) std::cerr << "\r\033[K";
    status_shown_ = false;
  }

  void show_status() {
    if (quiet_ || running_.empty()) return;
    std::string names;
    for (const auto& r : running_)
      names += fmt::format("{}{} ({:.0f} s)", names.empty() ? "" : ", ", job_.steps[r.step].label,
                           seconds_since(step_start_[r.step]));
    const std::string line = fmt::format("  running: {}  total {:.0f} s", names, elapsed());
    if (tty_) {
      clear_status();
      std::cerr << line.substr(0, 160) << std::flush;
      status_shown_ = true;
    } else if (seconds_since(last_heartbeat_) > 30) {
      say(line);
      last_heartbeat_ = Clock::now();
    }
  }

  void stop_all() {
    for (const auto& r : running_) clbo::cli::stop_child_group(r.pid);
    while (!running_.empty()) {
      const auto e = clbo::cli::wait_child(true);
      if (e.pid == 0) break;
      std::erase_if(running_, [&](const Running& r) { return r.pid == e.pid; });
    }
  }

  int run_phase(size_t first, size_t last) {
    const size_t limit = job_.steps[first].parallel ? static_cast<size_t>(job_.jobs) : 1;
    size_t next = first;
    last_heartbeat_ = Clock::now();
    while (next < last || !running_.empty()) {
      while (running_.size() < limit && next < last) begin_step(next++);
      if (g_interrupted) {
        stop_all();
        say("clbo reproduce: interrupted; stopped the running steps");
        return static_cast<int>(next > first ? next - 1 : first);
      }
      const auto e = clbo::cli::wait_child(false);
      if (e.pid == 0) {
        show_status();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      auto it = std::find_if(running_.begin(), running_.end(),
                             [&](const Running& r) { return r.pid == e.pid; });
      if (it == running_.end()) continue;  // not ours (cannot happen: we start them all)
      const Running r = *it;
      running_.erase(it);
      Step& s = job_.steps[r.step];
      s.cpu_s += e.cpu_s;
      if (e.code != 0) {
        s.wall_s = seconds_since(step_start_[r.step]);
        stop_all();
        report_failure(r.step, r.command, e.code);
        return static_cast<int>(r.step);
      }
      if (r.command + 1 < s.commands.size())
        start(r.step, r.command + 1);
      else
        finish_step(r.step);
    }
    return -1;
  }

  void report_failure(size_t index, size_t command, int code) {
    const Step& s = job_.steps[index];
    say(fmt::format("{} {} FAILED (exit {}) after {:.1f} s", number(index), s.label, code,
                    s.wall_s));
    say("  command: " + command_line(s.commands[command]) + "  (in " + job_.root.string() + ")");
    say("  last lines of " + shown(s.log) + ":");
    std::string tail = tail_of(s.log, 20);
    if (!tail.empty()) tail.pop_back();
    say(tail);
    // Exit 2 is clbo's own input error, which already says what to fix; any other failure
    // may be a missing tool or package, which the hint names.
    if (!s.hint.empty() && code != 2) say("  hint: " + s.hint);
  }

  Reproduction& job_;
  bool quiet_, tty_, status_shown_ = false;
  std::string self_;
  fs::path logs_;
  std::ofstream journal_;
  Clock::time_point start_, last_heartbeat_;
  std::map<size_t, Clock::time_point> step_start_;
  std::vector<Running> running_;
};

void print_steps(const Reproduction& p) {
  std::cout << "root (inputs): " << p.root.string()
            << "\nout (results, tables, figures, logs): " << p.out.string() << "\njobs: " << p.jobs
            << "\n";
  for (const auto& n : p.notes) std::cout << "note: " << n << "\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    std::cout << fmt::format("{:>2}. [{}{}] {}\n", i + 1, s.phase, s.parallel ? ", parallel" : "",
                             s.label);
    for (const auto& c : s.commands) std::cout << "      " << command_line(c) << "\n";
  }
}

void print_summary(const Reproduction& p, const Runner& r) {
  const fs::path tables = p.out / "tables", headline = tables / "headline.md";
  std::cout << "\n== Headline claims: paper vs clbo (" << shown(headline) << ") ==\n\n";
  if (fs::exists(headline)) {
    std::ifstream in(headline);
    std::cout << in.rdbuf();
  } else {
    std::cout << "(clbo report wrote no " << shown(headline) << ")\n";
  }
  const std::vector<std::pair<std::string, std::string>> places = {
      {shown(p.out / "results") + "/", "results as JSON (schema: results/SCHEMA.md)"},
      {shown(tables) + "/", "paper.md: every claim, paper vs clbo; headline.md; summary.md"},
      {shown(p.out / "figures") + "/", "figures (PNG and SVG)"},
      {shown(p.out / "logs") + "/", "one log per step, and reproduce.log"}};
  size_t width = 0;
  for (const auto& [path, what] : places) width = std::max(width, path.size());
  std::cout << "\n== Where everything is ==\n";
  for (const auto& [path, what] : places)
    std::cout << fmt::format("  {:<{}}  {}\n", path, width, what);
  for (const auto& n : p.notes) std::cout << "  note: " << n << "\n";
  std::cout << fmt::format("took {:.0f} s wall, {:.0f} s CPU in {} steps (--jobs {})\n",
                           r.elapsed(), r.cpu_total(), p.steps.size(), p.jobs);
}

int run_reproduce(const Options& o) {
  if (o.jobs < 0 || o.jobs > 256)
    throw clbo::InputError("<command line>", "--jobs", std::to_string(o.jobs),
                           "must be in 1..256 (0: one per core)");
  Reproduction job = make_reproduction(o);
  if (o.dry_run) {
    print_steps(job);
    return 0;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_signal);
  Runner runner(job, o.quiet);
  if (!o.quiet) {
    runner.say(fmt::format("clbo reproduce: {} steps, inputs from {}, outputs to {} (--jobs {})",
                           job.steps.size(), shown(job.root), shown(job.out), job.jobs));
    for (const auto& n : job.notes) runner.say("  note: " + n);
  }
  const int failed = runner.run();
  if (failed >= 0) {
    const Step& f = job.steps[static_cast<size_t>(failed)];
    std::cerr << "clbo reproduce: stopped at step " << failed + 1 << " of " << job.steps.size()
              << " (" << f.label << "); the steps after it did not run. Results written before it "
              << "stay under " << shown(job.out / "results")
              << (f.phase == "report" ? "."
                                      : "; no report or figures were made from a partial set.")
              << "\n";
    return g_interrupted ? 130 : 1;
  }
  print_summary(job, runner);
  return 0;
}

clbo::cli::Registrar reg(
    "reproduce",
    "The main job: validate every input, run every simulation experiment, a convergence smoke "
    "run (--full: the whole set), the CPU (and on a GPU node the CUDA/NCCL) benchmarks, then "
    "write tables/ and figures/ (see docs/reproduce.md)",
    [](CLI::App& sub) {
      auto o = std::make_shared<Options>();
      sub.add_flag("--full", o->full,
                   "run every convergence experiment (about 40 min on an idle 2-core machine, "
                   "docs/convergence.md \"Time\") and regenerate results/convergence/SUMMARY.md");
      sub.add_option("--root", o->root,
                     "tree whose experiments/ (and report/plots/ scripts) are read (default: the "
                     "current folder if it has experiments/, else the source tree)");
      sub.add_option("-o,--out", o->out,
                     "folder that receives results/, tables/, figures/ and logs/")
          ->capture_default_str();
      sub.add_option("-j,--jobs", o->jobs,
                     "independent experiments run at once (default 0: one per core); results "
                     "do not depend on it")
          ->transform(clbo::cli::decimal_integer<int>());
      sub.add_flag("-q,--quiet", o->quiet, "no progress lines (failures and the summary only)");
      sub.add_flag("--dry-run", o->dry_run, "print the steps and their commands; run nothing");
      return [o] { return run_reproduce(*o); };
    });

}  // namespace
