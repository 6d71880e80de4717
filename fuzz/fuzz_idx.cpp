// The IDX reader (gzip'd or plain, through zlib) on a memory file, as 1-d labels and as 3-d
// images. InputError is the expected rejection.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "clbo/core/error.hpp"
#include "clbo/train/fashion_mnist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ::memfd_create("fuzz_idx", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, data, size) == static_cast<ssize_t>(size)) {
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    for (int ndim : {1, 3}) {
      try {
        const clbo::train::IdxArray a = clbo::train::read_idx_u8(path, ndim);
        size_t total = 1;
        for (auto d : a.dims) total *= static_cast<size_t>(d);
        if (total != a.data.size()) __builtin_trap();
      } catch (const clbo::InputError&) {
      }
    }
  }
  ::close(fd);
  return 0;
}
