#include "clbo/core/input_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "clbo/core/error.hpp"

namespace clbo {

std::string file_kind_text(uint32_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

int open_input_file(const std::string& path, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw InputError(path, "(file)", path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(path, "(file)", path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path, "(file)", path,
                     fmt::format("is {}, not a regular file", file_kind_text(st.st_mode)));
  }
  // Regular files never block; plain reads from here on.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

std::string read_input_file(const std::string& path, size_t max_bytes) {
  uint64_t size = 0;
  const int fd = open_input_file(path, &size);
  const auto too_large = [&](uint64_t bytes) {
    ::close(fd);
    return InputError(
        path, "(file)", path,
        fmt::format("is {} bytes or more; clbo reads at most {} bytes from it", bytes, max_bytes));
  };
  if (size > max_bytes) throw too_large(size);
  std::string data;
  data.resize(static_cast<size_t>(size));
  size_t got = 0;
  for (;;) {
    if (got == data.size()) {
      if (data.size() >= max_bytes) {
        // The file grew, or reports no size (procfs): one more byte tells.
        char probe;
        const ssize_t r = ::read(fd, &probe, 1);
        if (r == 0) break;
        if (r > 0) throw too_large(max_bytes + 1);
      }
      data.resize(std::min(max_bytes, std::max<size_t>(4096, data.size() * 2)));
    }
    const ssize_t r = ::read(fd, data.data() + got, data.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw InputError(path, "(file)", path, std::string("cannot read: ") + std::strerror(err));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  data.resize(got);
  return data;
}

}  // namespace clbo
