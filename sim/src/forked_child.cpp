// simulate_programs: one SimGrid engine per process, so every platform is simulated in a
// forked child that runs simulate_programs_here (actors.cpp) and sends its results back as
// JSON over a pipe. The parent restates the child's failures — an InputError, a SimGrid
// exception, an abort or a signal — as clbo errors naming the cluster, the GPU count and
// the tail of SimGrid's own message.
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>

#include "clbo/core/error.hpp"
#include "clbo/sim/execution.hpp"

namespace clbo::sim {

namespace {

// Writes all of `data` to fd, retrying on short writes.
void write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t w = ::write(fd, data.data() + off, data.size() - off);
    if (w <= 0) {
      if (errno == EINTR) continue;
      return;
    }
    off += static_cast<size_t>(w);
  }
}

}  // namespace

std::vector<ProgramResult> simulate_programs(const ClusterSpec& cluster, int p,
                                             const std::vector<Program>& programs,
                                             const SessionOptions& options) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0)
    throw Error(std::string("simulator: cannot create a pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("simulator: cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::dup2(err_pipe[1], STDERR_FILENO);  // SimGrid's own messages, for the error report
    ::dup2(err_pipe[1], STDOUT_FILENO);
    nlohmann::json reply;
    try {
      nlohmann::json results = nlohmann::json::array();
      for (const ProgramResult& r : simulate_programs_here(cluster, p, programs, options))
        results.push_back(r.to_json());
      reply = {{"ok", true}, {"results", results}};
    } catch (const InputError& e) {
      // InputError's message is "<where>: field '<field>' = <value>: <why>".
      const std::string msg = e.what();
      const std::string prefix = e.where() + ": field '" + e.field() + "' = " + e.value() + ": ";
      reply = {{"ok", false},
               {"input", true},
               {"where", e.where()},
               {"field", e.field()},
               {"value", e.value()},
               {"why", msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : msg}};
    } catch (const std::exception& e) {
      reply = {{"ok", false}, {"input", false}, {"message", e.what()}};
    }
    write_all(out_pipe[1], reply.dump());
    ::close(out_pipe[1]);
    std::fflush(nullptr);
    ::_exit(0);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  // Read stderr on the side so a chatty child never blocks on a full pipe.
  std::string reply_text, err_text;
  {
    std::string chunk;
    fd_set fds;
    bool out_open = true, err_open = true;
    char buf[65536];
    while (out_open || err_open) {
      FD_ZERO(&fds);
      if (out_open) FD_SET(out_pipe[0], &fds);
      if (err_open) FD_SET(err_pipe[0], &fds);
      if (::select(std::max(out_pipe[0], err_pipe[0]) + 1, &fds, nullptr, nullptr, nullptr) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (auto [fd, open, dst] : {std::tuple{out_pipe[0], &out_open, &reply_text},
                                   std::tuple{err_pipe[0], &err_open, &err_text}}) {
        if (!*open || !FD_ISSET(fd, &fds)) continue;
        const ssize_t r = ::read(fd, buf, sizeof buf);
        if (r <= 0) {
          if (r < 0 && errno == EINTR) continue;
          *open = false;
        } else {
          dst->append(buf, static_cast<size_t>(r));
        }
      }
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  const std::string where = cluster.is_xml() ? cluster.xml_file : cluster.file;
  auto tail = [&] {
    const size_t keep = 4000;
    return err_text.size() > keep ? err_text.substr(err_text.size() - keep) : err_text;
  };
  nlohmann::json reply;
  try {
    reply = nlohmann::json::parse(reply_text);
  } catch (const nlohmann::json::exception&) {
    const std::string how = WIFSIGNALED(status)
                                ? std::string("was killed by signal ") + strsignal(WTERMSIG(status))
                                : "exited with status " + std::to_string(WEXITSTATUS(status));
    throw Error("simulator: SimGrid " + how + " while simulating cluster '" + cluster.name + "' (" +
                where + ") with " + std::to_string(p) + " GPUs" +
                (err_text.empty() ? "" : "; SimGrid said:\n" + tail()));
  }
  if (!reply.value("ok", false)) {
    if (reply.value("input", false))
      throw InputError(reply["where"], reply["field"], reply["value"], reply["why"]);
    throw Error("simulator: cluster '" + cluster.name + "' (" + where + "), " + std::to_string(p) +
                " GPUs: " + reply["message"].get<std::string>() +
                (err_text.empty() ? "" : "; SimGrid said:\n" + tail()));
  }
  std::vector<ProgramResult> out;
  for (const auto& r : reply["results"]) {
    out.push_back(ProgramResult::from_json(r));
    out.back().process_peak_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  }
  return out;
}

}  // namespace clbo::sim
