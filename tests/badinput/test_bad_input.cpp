// Hostile and careless input, one case per class of failure (docs/bad-input.md): no crash, no
// silent wrong number, everything checked before work starts, nothing lost, clear messages.
// Each case runs the real `clbo` binary and asserts the exit status, that stderr names the
// field (or option) and the value, and that no file in the case's folder was created or
// changed — except where writing is the point (a symlink written through, a warning case).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "clbo/collectives/local.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/npy.hpp"
#include "clbo/core/output_file.hpp"
#include "clbo/optim/checkpoint.hpp"
#include "clbo/optim/optimizer.hpp"
#include "cli_harness.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif
#else
constexpr bool kUnderAsan = false;
#endif

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

class BadInput : public clbo::test::CliTest {
 protected:
  // Every file under the case's folder with its content (links as "-> target").
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (auto it = fs::recursive_directory_iterator(dir_); it != fs::recursive_directory_iterator();
         ++it) {
      const std::string rel = fs::relative(it->path(), dir_).string();
      if (rel == ".stdout" || rel == ".stderr") continue;
      std::error_code ec;
      if (fs::is_symlink(it->symlink_status()))
        files[rel] = "-> " + fs::read_symlink(it->path(), ec).string();
      else if (fs::is_regular_file(it->symlink_status()))
        files[rel] = clbo::test::slurp(it->path());
      else
        files[rel] = "(special)";
    }
    return files;
  }

  // Runs clbo and checks the failure contract: the exit code, every part on stderr, and an
  // unchanged folder.
  clbo::test::CliResult expect_rejected(const std::vector<std::string>& args, int exit_code,
                                        const std::vector<std::string>& parts) {
    const auto before = snapshot();
    auto r = run(args);
    EXPECT_EQ(r.exit_code, exit_code) << r.err;
    for (const auto& s : parts)
      EXPECT_TRUE(contains(r.err, s)) << "missing '" << s << "' in\n" << r.err;
    EXPECT_TRUE(contains(r.err, "error")) << r.err;
    EXPECT_EQ(snapshot(), before) << "files were created or changed:\n" << r.err;
    return r;
  }

  // Runs a shell command line (for ulimit and traps), with CLBO as the binary.
  clbo::test::CliResult shell(const std::string& script) const {
    const std::string out = path(".stdout"), err = path(".stderr");
    const std::string cmd = "CLBO=" + clbo::test::shell_quote(CLBO_BIN) + "; " + script + " >" +
                            clbo::test::shell_quote(out) + " 2>" + clbo::test::shell_quote(err);
    const int status = std::system(("/bin/sh -c " + clbo::test::shell_quote(cmd)).c_str());
    clbo::test::CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = clbo::test::slurp(out);
    r.err = clbo::test::slurp(err);
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  // A valid replay: Adam on T steps of p ranks over n parameters; `grad` fills the gradients.
  void write_replay(size_t T, size_t p, size_t n, float grad = 0.25f,
                    const json& optimizer = {{"type", "Adam"}, {"params", {{"lr", 0.01}}}}) {
    write_npy("theta0.npy", {int64_t(n)}, std::vector<float>(n, 1.0f));
    write_npy("grads.npy", {int64_t(T), int64_t(p), int64_t(n)},
              std::vector<float>(T * p * n, grad));
    write_json("opt.json", optimizer);
  }
  std::vector<std::string> replay(const std::string& out = "") const {
    return {"replay",
            "--optimizer",
            path("opt.json"),
            "--params0",
            path("theta0.npy"),
            "--grads",
            path("grads.npy"),
            "--out",
            out.empty() ? path("out.npy") : out};
  }

  // A small valid simulation experiment (validated only, or simulated on one node).
  json experiment() const {
    return {{"simulate",
             {{"workload", "bert-large-seq128"},
              {"clusters", {"paper-ib-v100"}},
              {"gpus", {4}},
              {"micro_batch", 16},
              {"batch_size", 64},
              {"total_steps", 100},
              {"optimizers", {{{"label", "Adam"}, {"optimizer", {{"type", "Adam"}}}}}}}}};
  }
};

void require_sim() {
#ifndef CLBO_HAVE_SIM
  GTEST_SKIP() << "clbo was built without the simulator (SimGrid)";
#endif
}

void require_train() {
#ifndef CLBO_HAVE_TRAIN
  GTEST_SKIP() << "clbo was built without the convergence engine (Eigen)";
#endif
}

// ---- 1. no crash -------------------------------------------------------------------------

TEST_F(BadInput, NoCrash_DeepNestingInEveryJsonReader) {
  write_replay(2, 1, 4);
  write_raw("deep.json", std::string(100000, '['));
  const std::vector<std::string> parts = {"deep.json", "nest deeper than 64 levels"};
  auto a = replay();
  a[2] = path("deep.json");  // --optimizer
  expect_rejected(a, 2, parts);
  auto b = replay();
  b.insert(b.end(), {"--layout", path("deep.json")});
  expect_rejected(b, 2, parts);
  fs::create_directories(dir_ / "results");
  fs::copy_file(path("deep.json"), dir_ / "results" / "deep.json");
  expect_rejected({"report", path("results"), "--specs",
                   std::string(CLBO_SOURCE_DIR) + "/experiments/paper", "--out", path("reports")},
                  2, {"results/deep.json", "nest deeper than 64 levels"});
#ifdef CLBO_HAVE_SIM
  expect_rejected({"simulate", path("deep.json"), "-o", path("r.json")}, 2, parts);
#endif
#ifdef CLBO_HAVE_TRAIN
  expect_rejected({"train", path("deep.json"), "-o", path("r.json")}, 2, parts);
#endif
}

TEST_F(BadInput, NoCrash_EchoedValuesAreBounded) {
  write_replay(2, 1, 4);
  const std::string huge(1 << 20, 'x');
  write_json("opt.json", {{"type", huge}, {"params", {{"lr", 0.01}}}});
  const auto r =
      expect_rejected(replay(), 2, {"opt.json", "field 'type'", "xxxxxxxx...", "bytes in all"});
  EXPECT_LT(r.err.size(), 4096u) << "the message quotes the whole value";
}

TEST_F(BadInput, NoCrash_OutOfMemoryIsAClearError) {
  if (kUnderAsan) GTEST_SKIP() << "ASan reserves far more address space than ulimit -v allows";
  // 40 million numbers: a JSON array of a few hundred MB in memory, refused by the limit.
  {
    std::ofstream f(path("big.json"));
    f << "{\"type\": \"Adam\", \"params\": {\"lr\": 0.01}, \"pad\": [0";
    std::string block;
    for (int i = 0; i < 100000; ++i) block += ",0";
    for (int i = 0; i < 400; ++i) f << block;
    f << "]}";
  }
  write_replay(2, 1, 4);
  const auto before = snapshot();
  const auto r =
      shell("ulimit -v 400000; \"$CLBO\" replay --optimizer " + path("big.json") + " --params0 " +
            path("theta0.npy") + " --grads " + path("grads.npy") + " --out " + path("out.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "out of memory")) << r.err;
  EXPECT_EQ(snapshot(), before);
}

// ---- 2. no silent wrong number -----------------------------------------------------------

TEST_F(BadInput, SilentWrong_IntegersAreReadAsWritten) {
  require_sim();
  json e = experiment();
  e["simulate"]["gpus"] = {4294967300};  // wrapped to 4 by a 32-bit read
  write_json("e.json", e);
  expect_rejected({"simulate", "--check", path("e.json"), "-o", path("r.json")}, 2,
                  {"e.json", "simulate.gpus[0]", "4294967300", "must be in [0, 1048576]"});
  e = experiment();
  e["simulate"]["micro_batch"] = 2147483648;
  write_json("e.json", e);
  expect_rejected({"simulate", "--check", path("e.json"), "-o", path("r.json")}, 2,
                  {"simulate.micro_batch", "2147483648"});
  expect_rejected({"demo", "--seed", "-1", "--out", path("demo.json")}, 2, {"--seed", "-1"});
}

TEST_F(BadInput, SilentWrong_Fp32OverflowAndUnderflowRejected) {
  write_replay(2, 1, 4);
  write_json("opt.json", {{"type", "Adam"}, {"params", {{"lr", 1e39}}}});
  expect_rejected(replay(), 2, {"opt.json", "params.lr", "1e+39", "overflows fp32"});
  write_json("opt.json", {{"type", "Adam"}, {"params", {{"eps", 1e-50}}}});
  expect_rejected(replay(), 2, {"params.eps", "1e-50", "smallest normal fp32"});
  write_json("opt.json", {{"type", "Adam"}, {"params", {{"betas", {0.9, 0.99999999999}}}}});
  expect_rejected(replay(), 2, {"params.betas", "0.99999999999", "rounds to 1"});
}

TEST_F(BadInput, SilentWrong_RuntimeOverflowNamesStepAndTensor) {
  // Two ranks' finite gradients of 3e38 sum to infinity in fp32.
  write_replay(3, 2, 4, 3e38f);
  expect_rejected(
      replay(), 1,
      {"step 1", "tensor 'flat'", "allreduced mean gradient is non-finite", "overflowed"});
  // With "skip", the optimizer skips those steps instead.
  write_json("opt.json", {{"type", "Adam"}, {"params", {{"lr", 0.01}, {"nonfinite", "skip"}}}});
  const auto r = run(replay());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "skipped steps on rank 0: 3")) << r.err;
}

TEST_F(BadInput, SilentWrong_DuplicateKeysNameBothOccurrences) {
  write_replay(2, 1, 4);
  write_raw("opt.json",
            "{\"type\": \"OneBitAdam\",\n \"params\": {\"lr\": 0.01,\n  \"freeze_step\": 10,\n"
            "  \"freeze_step\": 0}}\n");
  expect_rejected(replay(), 2,
                  {"opt.json", "params.freeze_step", "appears twice",
                   "first at line 3, column 3 (= 10)", "again at line 4, column 3"});
}

TEST_F(BadInput, SilentWrong_PhaseBeyondTheRunIsWarned) {
  write_replay(3, 2, 4, 0.25f,
               {{"type", "OneBitAdam"}, {"params", {{"lr", 0.01}, {"freeze_step", 100}}}});
  const auto r = run(replay());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      contains(r.err, "warning: OneBitAdam: freeze_step = 100 covers the whole run of 3 steps"))
      << r.err;
#ifdef CLBO_HAVE_SIM
  json e = experiment();
  e["simulate"]["optimizers"].push_back(
      {{"label", "1-bit Adam"},
       {"baseline", "Adam"},
       {"optimizer", {{"type", "OneBitAdam"}, {"params", {{"freeze_step", 1000}}}}}});
  write_json("e.json", e);
  const auto s = run({"simulate", path("e.json"), "-o", path("r.json"), "-q"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(contains(s.err, "warning: optimizer '1-bit Adam': OneBitAdam: freeze_step = 1000"))
      << s.err;
  const json result = json::parse(clbo::test::slurp(path("r.json")));
  ASSERT_TRUE(result.contains("warnings")) << result.dump().substr(0, 400);
  EXPECT_TRUE(contains(result["warnings"][0].get<std::string>(), "freeze_step = 1000"));
#endif
}

// ---- 3. checked before work starts -------------------------------------------------------

TEST_F(BadInput, CheckedFirst_OutputPathsBeforeAnyWork) {
  write_replay(2, 1, 4);
  expect_rejected(replay("/proc/clbo-out.npy"), 2, {"--out", "/proc/clbo-out.npy", "/proc"});
  write_raw("afile", "x");
  expect_rejected(
      replay(path("afile/sub/out.npy")), 2,
      {"--out", "afile/sub/out.npy", "is a regular file, but the output needs a folder"});
  const std::string long_name = path(std::string(250, 'n') + ".npy");
  expect_rejected(replay(long_name), 2, {"--out", "temporary suffix", "255"});
#ifdef CLBO_HAVE_TRAIN
  // Before the experiment is trained (or even its data loaded).
  const std::string smoke = std::string(CLBO_SOURCE_DIR) + "/experiments/convergence/smoke.json";
  expect_rejected({"train", smoke, "-o", "/proc/x.json", "--data-dir", path("no-data")}, 2,
                  {"--out", "/proc/x.json"});
#endif
#ifdef CLBO_HAVE_SIM
  write_json("e.json", experiment());
  expect_rejected({"simulate", path("e.json"), "-o", path("afile/r.json")}, 2,
                  {"--out", "afile/r.json", "needs a folder"});
#endif
}

TEST_F(BadInput, CheckedFirst_OutputEqualToAnInput) {
  write_replay(2, 1, 4);
  expect_rejected(replay(path("grads.npy")), 2, {"--out", "is also the input --grads"});
  fs::create_symlink(path("theta0.npy"), path("alias.npy"));
  expect_rejected(replay(path("alias.npy")), 2, {"--out", "is also the input --params0"});
#ifdef CLBO_HAVE_SIM
  write_json("e.json", experiment());
  expect_rejected({"simulate", path("e.json"), "-o", path("e.json")}, 2,
                  {"--out", "is also the input EXPERIMENT"});
#endif
}

TEST_F(BadInput, CheckedFirst_CheckRejectsWhatTheRunWould) {
  require_sim();
  write_raw("platform.xml", "<?xml version='1.0'?><platform version='4.1'></platform>");
  json e = experiment();
  e["simulate"]["clusters"] = {{{"name", "xml"},
                                {"gpu", "V100-SXM2"},
                                {"gpus_per_node", 1},
                                {"xml", path("platform.xml")},
                                {"hosts", {"h0", "h1", "h2", "h3"}},
                                {"fabric", {{"type", "tcp"}, {"achievable_fraction", 1}}},
                                {"nic", {{"rate_Gbps", 10}}}}};
  e["simulate"]["backend"] = "mpi";
  write_json("e.json", e);
  expect_rejected({"simulate", "--check", path("e.json"), "-o", path("r.json")}, 2,
                  {"simulate.backend", "\"mpi\"", "host staging needs a built cluster"});
  write_json("e.json", experiment());
  expect_rejected({"simulate", "--check", path("e.json"), "-o", "/proc/r.json"}, 2,
                  {"--out", "/proc/r.json"});
}

TEST_F(BadInput, CheckedFirst_SizesHaveUpperBounds) {
  require_sim();
  json e = experiment();
  e["simulate"]["total_steps"] = 1e15;
  write_json("e.json", e);
  expect_rejected({"simulate", "--check", path("e.json"), "-o", path("r.json")}, 2,
                  {"simulate.total_steps", json(1e15).dump(), "[1, 100000000]"});
  e = experiment();
  e["simulate"]["clusters"] = {{{"name", "huge"},
                                {"gpu", "V100-SXM2"},
                                {"gpus_per_node", 8},
                                {"nodes", 1000000000},
                                {"intra", {{"type", "nvlink"}, {"bandwidth_GBps", 100}}},
                                {"fabric", {{"type", "infiniband"}, {"generation", "EDR"}}}}};
  write_json("e.json", e);
  expect_rejected({"simulate", "--check", path("e.json"), "-o", path("r.json")}, 2,
                  {"nodes", "1000000000", "must be in [0, 1048576]"});
}

// ---- 4. nothing lost ---------------------------------------------------------------------

TEST_F(BadInput, NothingLost_NonRegularOutputsAreRefused) {
  write_replay(2, 1, 4);
  ASSERT_EQ(::mkfifo(path("fifo.npy").c_str(), 0644), 0);
  expect_rejected(replay(path("fifo.npy")), 2, {"--out", "fifo.npy", "FIFO"});
  struct stat st {};
  ASSERT_EQ(::lstat(path("fifo.npy").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  fs::create_directory(path("dir.npy"));
  expect_rejected(replay(path("dir.npy")), 2, {"--out", "dir.npy", "directory"});
  expect_rejected(replay("/dev/null"), 2, {"--out", "/dev/null", "character device"});
}

TEST_F(BadInput, NothingLost_SymlinkOutputsAreWrittenThrough) {
  write_replay(2, 1, 4);
  fs::create_directory(path("real"));
  write_raw("real/target.npy", "old contents");
  fs::create_symlink(path("real/target.npy"), path("link.npy"));
  const auto r = run(replay(path("link.npy")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(path("link.npy")));
  EXPECT_EQ(fs::read_symlink(path("link.npy")), path("real/target.npy"));
  EXPECT_EQ(clbo::read_npy_f32(path("real/target.npy")).shape, (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(listing(),
            (std::vector<std::string>{"grads.npy", "link.npy", "opt.json", "real", "theta0.npy"}));
  size_t in_real = 0;
  for (const auto& e : fs::directory_iterator(path("real"))) (void)e, ++in_real;
  EXPECT_EQ(in_real, 1u) << "a temporary was left beside the target";
}

TEST_F(BadInput, NothingLost_StaleTemporariesOfDeadProcessesAreSwept) {
  write_replay(2, 1, 4);
  // A pid that has certainly ended: a child that exited and was reaped.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = path("out.npy.tmp." + std::to_string(dead));
  write_raw(fs::path(stale).filename().string(), std::string(1000, 'z'));
  const auto r = run(replay());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(stale)) << "the SIGKILL leftover stays";
  EXPECT_TRUE(fs::exists(path("out.npy")));
}

TEST_F(BadInput, NothingLost_SignalsRemoveTemporaries) {
  // A process killed by SIGTERM while it writes: its temporary is gone, the target untouched.
  write_raw("target.bin", "before");
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::signal(sig, SIG_DFL);  // a background ctest may have inherited SIG_IGN
      clbo::AtomicOutput out(path("target.bin"));
      out.write(std::string(1 << 20, 'x'));
      ::raise(sig);
      ::_exit(0);  // not reached: the default action ends the process
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
    EXPECT_FALSE(fs::exists(path("target.bin.tmp." + std::to_string(pid))));
    EXPECT_EQ(clbo::test::slurp(path("target.bin")), "before");
  }
}

TEST_F(BadInput, NothingLost_SimulatorChildDiesWithItsParent) {
  require_sim();
  // A long simulation: the parent forks the SimGrid child, then is killed.
  const std::string experiment =
      std::string(CLBO_SOURCE_DIR) + "/experiments/sim/fabrics-optimizers.json";
  const pid_t parent = ::fork();
  if (parent == 0) {
    ::execl(CLBO_BIN, CLBO_BIN, "simulate", experiment.c_str(), "-o", path("r.json").c_str(), "-q",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // The first process whose parent is `parent` (field 4 of /proc/<pid>/stat).
  const auto children = [parent] {
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(e.path() / "stat");
      const std::string stat((std::istreambuf_iterator<char>(in)), {});
      const size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 2));
      std::string state;
      long ppid = 0;
      rest >> state >> ppid;
      if (ppid == parent) return e.path().filename().string();
    }
    return std::string();
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::string kids;
  while ((kids = children()).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (kids.empty()) ::kill(parent, SIGKILL);
  ASSERT_FALSE(kids.empty()) << "the simulator never forked its child";
  const pid_t child = static_cast<pid_t>(std::stol(kids));
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < gone_by) {
    // A dead child that nobody reaps is a zombie; gone or zombie both mean it stopped.
    std::ifstream in(fs::path("/proc") / std::to_string(child) / "stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), {});
    gone = stat.empty() || contains(stat, ") Z ");
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "the SimGrid child " << child << " outlived its parent";
  EXPECT_FALSE(fs::exists(path("r.json")));
}

TEST_F(BadInput, NothingLost_CheckpointChecksumDetectsAFlippedByte) {
  const clbo::ParamLayout layout = clbo::ParamLayout::from_sizes({6, 2});
  const json block = {{"type", "OneBitAdam"}, {"params", {{"lr", 0.01}, {"freeze_step", 1}}}};
  std::vector<std::unique_ptr<clbo::Optimizer>> opts;
  for (int r = 0; r < 2; ++r) opts.push_back(clbo::make_optimizer(block, "b", layout, 2, r));
  clbo::run_local(2, [&](clbo::Communicator& comm) {
    std::vector<float> p(8, 1.0f), g(8, 0.5f);
    for (int s = 0; s < 3; ++s)
      opts[static_cast<size_t>(comm.rank())]->step(comm, p.data(), g.data());
  });
  clbo::save_checkpoint(path("c.ckpt"), {opts[0].get(), opts[1].get()});
  std::string bytes = clbo::test::slurp(path("c.ckpt"));
  bytes[bytes.size() / 2] ^= 0x10;  // one bit, inside a moment buffer
  write_raw("c.ckpt", bytes);
  const auto before = snapshot();
  try {
    clbo::load_checkpoint(path("c.ckpt"), {opts[0].get(), opts[1].get()});
    FAIL() << "a corrupt checkpoint loaded";
  } catch (const clbo::InputError& e) {
    EXPECT_EQ(e.field(), "crc32");
    EXPECT_TRUE(contains(e.what(), "c.ckpt")) << e.what();
    EXPECT_TRUE(contains(e.what(), "corrupt")) << e.what();
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_F(BadInput, NothingLost_AFailedRunStillWritesThePartialDocument) {
  require_train();
#ifdef CLBO_HAVE_TRAIN
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is missing (apt-get install dataset-fashion-mnist)";
  // The first run diverges (lr 1e30), the second never starts: exit 3 and a partial document.
  write_json("e.json", json::parse(R"({
    "model": "mlp_small", "batch_size": 64, "workers": 2, "steps": 30, "eval_every": 10,
    "runs": [{"label": "diverges", "optimizer": {"type": "Adam", "params": {"lr": 1e30}}},
             {"label": "after", "optimizer": {"type": "Adam"}}]})"));
  const auto r = run({"train", path("e.json"), "-o", path("r.json"), "-q"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "partial results written to " + path("r.json"))) << r.err;
  const json doc = json::parse(clbo::test::slurp(path("r.json")));
  EXPECT_EQ(doc["status"], "partial");
  EXPECT_EQ(doc["runs"].size(), 1u);
  // Under continue_after_nan the diverged run is a result: exit 0, a complete document, and a
  // warning naming the divergence rather than an error.
  json kept = json::parse(clbo::test::slurp(path("e.json")));
  kept["continue_after_nan"] = true;
  write_json("e.json", kept);
  const auto k = run({"train", path("e.json"), "-o", path("r.json"), "-q"});
  EXPECT_EQ(k.exit_code, 0) << k.err;
  EXPECT_TRUE(contains(k.err, "clbo: warning: a run diverged and is kept as a result")) << k.err;
  EXPECT_FALSE(contains(k.err, "clbo: error")) << k.err;
  EXPECT_EQ(json::parse(clbo::test::slurp(path("r.json")))["status"], "complete");
#endif
}

// ---- 5. clear messages -------------------------------------------------------------------

TEST_F(BadInput, Messages_UnreadableInputsNameTheOsReason) {
  write_replay(2, 1, 4);
  auto a = replay();
  fs::create_directory(path("adir"));
  a[2] = path("adir");
  expect_rejected(a, 2, {"adir", "is a directory, not a regular file"});
  ASSERT_EQ(::mkfifo(path("fifo.json").c_str(), 0644), 0);
  a[2] = path("fifo.json");  // must not block waiting for a writer
  expect_rejected(a, 2, {"fifo.json", "is a FIFO (named pipe), not a regular file"});
  a[2] = "/proc/self/mem";
  expect_rejected(a, 2, {"/proc/self/mem", "cannot read: Input/output error"});
  a[2] = path("absent.json");
  expect_rejected(a, 2, {"absent.json", "cannot open: No such file or directory"});
}

TEST_F(BadInput, Messages_AFullDiskIsNamed) {
  // The file size limit stands in for a full disk: the write fails with EFBIG, not a crash.
  write_replay(4, 2, 4096);
  const auto before = snapshot();
  const auto r = shell("trap '' XFSZ; ulimit -f 64; \"$CLBO\" replay --optimizer " +
                       path("opt.json") + " --params0 " + path("theta0.npy") + " --grads " +
                       path("grads.npy") + " --out " + path("out.npy"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "out.npy")) << r.err;
  EXPECT_TRUE(contains(r.err, "File too large")) << r.err;
  EXPECT_EQ(snapshot(), before);
}

TEST_F(BadInput, Messages_AMissingKernelBenchNamesTheExperimentAndField) {
  require_sim();
  json e = experiment();
  e["simulate"]["kernel_bench"] = path("missing-kernels.json");
  write_json("e.json", e);
  expect_rejected({"simulate", "--check", path("e.json"), "-o", path("r.json")}, 2,
                  {"e.json", "simulate.kernel_bench", "missing-kernels.json",
                   "cannot open: No such file or directory"});
}

TEST_F(BadInput, Messages_AMistypedSubcommandGetsASuggestion) {
  expect_rejected({"trian", "x.json"}, 2, {"subcommand", "trian", "did you mean 'train'?"});
#ifdef CLBO_HAVE_SIM
  expect_rejected({"simualte"}, 2, {"simualte", "did you mean 'simulate'?"});
#endif
}

TEST_F(BadInput, Messages_AFailingPlotInterpreterIsNamed) {
  fs::create_directory(path("results"));
  const auto before = snapshot();
  const auto r =
      run({"plot", "--python", "/bin/false", "--results", path("results"), "--out", path("plots")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "--python /bin/false exited with status 1")) << r.err;
  EXPECT_EQ(snapshot(), before);
}

}  // namespace
