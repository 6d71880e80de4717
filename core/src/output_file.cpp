#include "clbo/core/output_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "clbo/core/error.hpp"
#include "clbo/core/input_file.hpp"

namespace clbo {

namespace fs = std::filesystem;

namespace {

constexpr const char* kWhere = "<command line>";
constexpr long kProcSuperMagic = 0x9fa0;
constexpr long kSysfsMagic = 0x62656572;

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string temp_name(const std::string& target) {
  return fmt::format("{}.tmp.{}", target, ::getpid());
}

// ---- signal cleanup ------------------------------------------------------------------
// A fixed table, so the handler touches no allocator and no lock: a slot is claimed with a
// compare-exchange, filled, then published; the handler unlinks published slots of this
// process (a forked child inherits the table but not the files).

constexpr int kSlots = 64;
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 published
  pid_t pid = 0;
  char path[PATH_MAX] = {};
};
Slot g_slots[kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ};
struct sigaction g_previous[64];

void on_signal(int sig, siginfo_t* info, void* context) {
  // A program that handles the signal itself goes on running and cleans up as it unwinds.
  const struct sigaction& prev = g_previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  // The signal ends the process: remove its temporaries, then take the default action as if
  // this handler had never run (the signal is blocked while it runs, so the raise is
  // delivered right after it returns).
  const pid_t self = ::getpid();
  for (Slot& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == 2 && s.pid == self) ::unlink(s.path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_handlers() {
  for (int sig : kSignals) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;  // nohup
    g_previous[sig] = current;
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

int register_temp(const std::string& path) {
  static std::once_flag once;
  std::call_once(once, install_handlers);
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    g_slots[i].pid = ::getpid();
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2, std::memory_order_release);
    return i;
  }
  return -1;  // table full: the destructor still removes the file on errors
}

void unregister_temp(int slot) {
  if (slot >= 0) g_slots[slot].state.store(0, std::memory_order_release);
}

// Removes `<target>.tmp.<pid>` files whose process is gone.
void sweep_stale_temps(const std::string& target) {
  const fs::path t(target);
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  const std::string prefix = t.filename().string() + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH) ::unlink((dir / name).c_str());
  }
  ::closedir(d);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
  return !ea && !eb && ca == cb;
}

}  // namespace

std::string output_target(const std::string& path, const std::string& option) {
  if (path.empty()) throw InputError(kWhere, option, "\"\"", "an output path cannot be empty");
  if (fs::path(path).filename().empty() || path.back() == '/')
    throw InputError(kWhere, option, path, "names a folder; give the path of a file");
  std::string current = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0) return current;  // absent: it will be created
    if (S_ISREG(st.st_mode)) return current;
    if (!S_ISLNK(st.st_mode))
      throw InputError(kWhere, option, path,
                       fmt::format("{} is {}; clbo writes regular files only and does not replace "
                                   "{}",
                                   current == path ? "the output" : current,
                                   file_kind_text(st.st_mode), file_kind_text(st.st_mode)));
    std::error_code ec;
    const fs::path link = fs::read_symlink(current, ec);
    if (ec)
      throw InputError(kWhere, option, path,
                       fmt::format("cannot read the link {}: {}", current, ec.message()));
    current =
        link.is_absolute() ? link.string() : (fs::path(current).parent_path() / link).string();
  }
  throw InputError(kWhere, option, path, "the symbolic links form a loop (or a chain over 40)");
}

void check_output_path(const std::string& path, const std::string& option,
                       const std::vector<NamedPath>& inputs) {
  const std::string target = output_target(path, option);
  for (const NamedPath& in : inputs)
    if (!in.path.empty() && same_file(target, in.path))
      throw InputError(kWhere, option, path,
                       fmt::format("is also the input {} ({}); writing it would replace that "
                                   "input: choose another output path",
                                   in.option, in.path));

  const fs::path t(target);
  const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
  // The nearest folder that exists; the ones below it will be created.
  fs::path existing = dir;
  std::vector<std::string> missing;
  for (;;) {  // ends at the latest at "." or "/", which exist
    struct stat st {};
    if (::stat(existing.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        throw InputError(kWhere, option, path,
                         fmt::format("{} is {}, but the output needs a folder there",
                                     existing.string(), file_kind_text(st.st_mode)));
      break;
    }
    // ENOTDIR: a file above, found further up; ENAMETOOLONG: the name check below says so.
    if (errno != ENOENT && errno != ENOTDIR && errno != ENAMETOOLONG)
      throw InputError(
          kWhere, option, path,
          fmt::format("cannot reach the folder {}: {}", existing.string(), errno_text(errno)));
    missing.push_back(existing.filename().string());
    existing = existing.has_parent_path() ? existing.parent_path() : fs::path(".");
  }
  struct statfs sfs {};
  if (::statfs(existing.c_str(), &sfs) == 0 && (static_cast<long>(sfs.f_type) == kProcSuperMagic ||
                                                static_cast<long>(sfs.f_type) == kSysfsMagic))
    throw InputError(
        kWhere, option, path,
        fmt::format("{} is on {}, a kernel interface that holds no files to write",
                    existing.string(),
                    static_cast<long>(sfs.f_type) == kProcSuperMagic ? "/proc" : "/sys"));

  const std::string temp = temp_name(target);
  long name_max = ::pathconf(existing.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = NAME_MAX;
  for (const std::string& part : missing)
    if (static_cast<long>(part.size()) > name_max)
      throw InputError(
          kWhere, option, path,
          fmt::format("the folder name '{}' is {} bytes; names here may have at most {}",
                      bounded_text(part, 60), part.size(), name_max));
  const std::string temp_base = fs::path(temp).filename().string();
  if (static_cast<long>(temp_base.size()) > name_max)
    throw InputError(
        kWhere, option, path,
        fmt::format("the file name is {} bytes; with the temporary suffix '{}' that "
                    "clbo writes first it is {}, over the {} bytes a name may have "
                    "here",
                    t.filename().string().size(), temp_base.substr(t.filename().string().size()),
                    temp_base.size(), name_max));
  if (temp.size() >= PATH_MAX)
    throw InputError(
        kWhere, option, path,
        fmt::format("the path is too long ({} bytes with the temporary suffix; at most "
                    "{})",
                    temp.size(), PATH_MAX - 1));

  if (!missing.empty()) {
    if (::access(existing.c_str(), W_OK | X_OK) != 0)
      throw InputError(
          kWhere, option, path,
          fmt::format("cannot create folders in {}: {}", existing.string(), errno_text(errno)));
    return;
  }
  // The folder exists: create and remove the temporary, exactly as the real write will.
  ::unlink(temp.c_str());  // our own pid's leftover, if any
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0)
    throw InputError(kWhere, option, path,
                     fmt::format("cannot create files in {}: {}", dir.string(), errno_text(errno)));
  ::close(fd);
  ::unlink(temp.c_str());
}

// ---- AtomicOutput --------------------------------------------------------------------

AtomicOutput::AtomicOutput(const std::string& path, const std::string& option)
    : path_(path), target_(output_target(path, option)) {
  const fs::path t(target_);
  if (t.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(t.parent_path(), ec);
    if (ec)
      throw Error(fmt::format("{}: cannot create the folder {}: {}", path_,
                              t.parent_path().string(), ec.message()));
  }
  sweep_stale_temps(target_);
  temp_ = temp_name(target_);
  ::unlink(temp_.c_str());  // a leftover of an earlier process with our pid
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd_ < 0) {
    const int err = errno;
    throw Error(
        fmt::format("{}: cannot create the temporary {}: {}", path_, temp_, errno_text(err)));
  }
  slot_ = register_temp(temp_);
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) discard();
}

void AtomicOutput::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  unregister_temp(slot_);
  slot_ = -1;
}

void AtomicOutput::fail(const std::string& what, int err) {
  discard();
  throw Error(fmt::format("{}: {} the temporary {} failed: {}; {} was not written", path_, what,
                          temp_, errno_text(err), path_));
}

void AtomicOutput::write_at(uint64_t offset, const void* data, size_t bytes) {
  if (committed_ || fd_ < 0) throw Error(fmt::format("{}: the output is closed", path_));
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t w = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    p += w;
    bytes -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

void AtomicOutput::write(std::string_view bytes) {
  write_at(append_at_, bytes.data(), bytes.size());
  append_at_ += bytes.size();
}

void AtomicOutput::resize(uint64_t bytes) {
  if (committed_ || fd_ < 0) throw Error(fmt::format("{}: the output is closed", path_));
  if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) fail("sizing", errno);
}

void AtomicOutput::commit() {
  if (committed_) return;
  if (fd_ < 0) throw Error(fmt::format("{}: the output is closed", path_));
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    ::fchmod(fd_, st.st_mode & 07777);  // replacing a file keeps its permissions
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail("closing", errno);
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    discard();
    throw Error(fmt::format("{}: cannot rename the temporary {} to {}: {}; {} was not written",
                            path_, temp_, target_, errno_text(err), path_));
  }
  committed_ = true;
  unregister_temp(slot_);
  slot_ = -1;
}

void write_file_atomic(const std::string& path, std::string_view data) {
  AtomicOutput out(path);
  out.write(data);
  out.commit();
}

}  // namespace clbo
