// Writing output files so that nothing that existed before is lost or half-replaced, and
// checking output paths before any work starts.
//
// Every file clbo writes goes through AtomicOutput: the data lands in `<target>.tmp.<pid>`
// beside the target and is renamed over it on commit(), so a reader sees the old file or the
// new one, never a mixture. Around that:
//   - a symbolic link is written through: the file at the end of the link chain is replaced
//     atomically and the link stays a link;
//   - a target that exists and is not a regular file (a directory, a FIFO, a device, a
//     socket) is refused, never replaced;
//   - the temporary is removed when the writer is destroyed uncommitted (an error), and by a
//     signal handler on SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE and SIGXFSZ (which then
//     goes on to the signal's previous handler or default action);
//   - temporaries left by a process that died without cleaning up (SIGKILL, power loss) are
//     removed when the same target is written again: `<target>.tmp.<pid>` whose pid no longer
//     runs.
// check_output_path is the preflight every engine runs on its outputs before reading data
// or computing anything, so a run never fails at its end for a reason known at its start.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clbo {

// Where writing `path` lands: `path`, or for a symbolic link the file at the end of its chain.
// Throws InputError("<command line>", option, path, why) when that exists and is not a
// regular file, or the chain is a loop.
std::string output_target(const std::string& path, const std::string& option);

// An input file of a command, by the option that named it.
struct NamedPath {
  std::string option, path;
};

// Throws InputError("<command line>", option, path, why) unless `path` can be written: the
// target kind (see output_target); its folder exists or can be created (no file stands where
// a folder is needed); the folder is writable and not on /proc or /sys; the temporary's name
// fits the file system's name length limit; and the output is none of `inputs` (the same
// file, through any link or path spelling). Creates nothing that outlives the call (when the
// folder exists, it creates and removes an empty temporary: the only test as strict as the
// real write).
void check_output_path(const std::string& path, const std::string& option,
                       const std::vector<NamedPath>& inputs = {});

// One atomically written file. Errors are clbo::Error naming the path and the OS reason.
class AtomicOutput {
 public:
  // Resolves the target (output_target), creates missing folders, removes stale temporaries
  // of dead processes, and creates a fresh temporary, registered for signal cleanup.
  explicit AtomicOutput(const std::string& path, const std::string& option = "output");
  ~AtomicOutput();  // removes the temporary unless committed
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  // Appends to the temporary.
  void write(std::string_view bytes);
  // Writes at a byte offset; safe from several threads at once for disjoint ranges (pwrite).
  void write_at(uint64_t offset, const void* data, size_t bytes);
  // Sets the temporary's size (new bytes read as zero).
  void resize(uint64_t bytes);
  // Closes the temporary and renames it over the target (keeping an existing target's
  // permission bits). Throws on failure, after removing the temporary.
  void commit();

  const std::string& path() const { return path_; }      // as given
  const std::string& target() const { return target_; }  // where the data lands
  const std::string& temp() const { return temp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  void discard() noexcept;

  std::string path_, target_, temp_;
  int fd_ = -1;
  int slot_ = -1;  // signal-cleanup registration
  uint64_t append_at_ = 0;
  bool committed_ = false;
};

// Writes `data` to `path` through AtomicOutput.
void write_file_atomic(const std::string& path, std::string_view data);

}  // namespace clbo
