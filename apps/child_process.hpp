// Every child process the clbo binary starts, in one place. Subcommands hand work to other
// programs because SimGrid allows one engine per process and exports MPI symbols, so the MPI
// and NCCL binaries (clbo_bench_collectives, clbo_train_mpi) must not share its process:
//   start_child / wait_child / run_child  a child in its own process group (reproduce,
//       validate), so a failure or Ctrl-C stops it with everything it forked; output to a log;
//   run_attached  a child on this terminal (same stdio and process group: Ctrl-C reaches
//       both), for the benchmark binaries and the plot scripts;
//   exec_replacing  this process becomes the program, so under mpirun the rank process
//       stays the one mpirun started.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "clbo/core/error.hpp"

namespace clbo::cli {

// The absolute path of the running binary, so children run this same clbo after chdir.
inline std::string self_executable() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot resolve /proc/self/exe: " + ec.message());
  return self.string();
}

// A program built beside this binary (clbo_bench_collectives, clbo_train_mpi, bench_*).
inline std::filesystem::path sibling_binary(const std::string& name) {
  return std::filesystem::path(self_executable()).parent_path() / name;
}

// The exit code of a finished child: its status, or 128 + the signal that killed it, as a
// shell reports it. Waits through EINTR.
inline int wait_exit_code(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// What an exit code means, for messages: "exited with status 3", "was killed by SIGKILL".
inline std::string describe_exit(int code) {
  if (code > 128 && code < 128 + NSIG)
    return std::string("was killed by signal ") + ::strsignal(code - 128);
  return "exited with status " + std::to_string(code);
}

// Runs argv (argv[0] searched in PATH when it has no '/') on this terminal and waits;
// returns its exit code (see wait_exit_code). Throws naming `who` and the program when it
// cannot start.
inline int run_attached(const std::vector<std::string>& argv, const std::string& who) {
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  if (const int err = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ))
    throw Error(who + ": cannot start " + argv[0] + ": " + std::strerror(err));
  return wait_exit_code(pid);
}

// Replaces this process with argv[0] (a path); returns only by throwing.
[[noreturn]] inline void exec_replacing(const std::vector<std::string>& argv,
                                        const std::string& who) {
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(args[0], args.data());
  throw Error(who + ": cannot run " + argv[0] + ": " + std::strerror(errno));
}

// The program that runs this same binary in a child: the image this process was started
// from, even if a rebuild has replaced the file since.
inline constexpr const char* kSelfImage = "/proc/self/exe";

// Starts `program` (searched in PATH when it has no '/'; "" = argv[0]) with `argv` in `cwd`,
// stdin from /dev/null, stdout and stderr appended to `log` ("" = /dev/null, "-" = this
// process's stderr). Returns the
// pid, which is also the child's process-group id. Exec failures show up as exit status 127
// with a log line.
inline pid_t start_child(const std::string& program, const std::vector<std::string>& argv,
                         const std::string& cwd, const std::string& log) {
  const std::string exe = program.empty() ? argv.at(0) : program;
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string out = log.empty() ? "/dev/null" : log;
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    const int in = ::open("/dev/null", O_RDONLY);
    const int fd = log == "-" ? ::dup(2) : ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || fd < 0 || ::dup2(in, 0) < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0)
      ::_exit(127);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      const std::string msg = "clbo: cannot enter " + cwd + "\n";
      (void)!::write(2, msg.data(), msg.size());
      ::_exit(127);
    }
    ::execvp(exe.c_str(), args.data());
    const std::string msg = "clbo: cannot run " + exe + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
  return pid;
}

struct ChildExit {
  pid_t pid = 0;  // 0: none finished yet
  int code = 0;   // exit code, or 128 + signal
  double cpu_s = 0;
};

inline double cpu_seconds(const rusage& ru) {
  auto sec = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// One finished child, or pid 0 when none has finished (block = false). The rusage covers
// the child and every descendant it waited for (the simulator's per-platform processes).
inline ChildExit wait_child(bool block) {
  int status = 0;
  rusage ru{};
  pid_t pid;
  do {
    pid = ::wait4(-1, &status, block ? 0 : WNOHANG, &ru);
  } while (pid < 0 && errno == EINTR);
  ChildExit e;
  if (pid <= 0) return e;
  e.pid = pid;
  e.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  e.cpu_s = cpu_seconds(ru);
  return e;
}

// Runs one command to the end; returns its exit code.
inline int run_child(const std::vector<std::string>& argv, const std::string& cwd,
                     const std::string& log) {
  return wait_exit_code(start_child("", argv, cwd, log));
}

// Whether a GPU is visible to this machine's processes: nvidia-smi lists one (clbo itself
// links no CUDA, so it asks the driver's tool).
inline bool gpu_visible() {
  return run_child({"nvidia-smi", "-L"}, "", "") == 0;
}

// Stops a child and everything it started.
inline void stop_child_group(pid_t pid) {
  ::kill(-pid, SIGTERM);
}

}  // namespace clbo::cli
