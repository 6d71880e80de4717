// The .npy header parser and payload check, on the bytes of a whole file, and the mapped
// reader on the same bytes through a memory file. InputError is the expected rejection.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "clbo/core/error.hpp"
#include "clbo/core/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const clbo::NpyHeader h = clbo::parse_npy_header(bytes, "fuzz.npy");
    clbo::check_npy_payload(h, size, "fuzz.npy");
    (void)clbo::npy_shape_string(h.shape);
    // An accepted header re-encodes to a header the parser accepts with the same shape.
    const std::string again = clbo::encode_npy_header_f32(h.shape, h.version);
    if (clbo::parse_npy_header(again, "again.npy").shape != h.shape) __builtin_trap();
  } catch (const clbo::InputError&) {
  }
  // The file reader: the same bytes as a file.
  const int fd = ::memfd_create("fuzz_npy", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, data, size) == static_cast<ssize_t>(size)) {
    try {
      clbo::NpyMappedF32 m("/proc/self/fd/" + std::to_string(fd));
      volatile float sink = m.count() ? m.data()[m.count() - 1] : 0.f;
      (void)sink;
    } catch (const clbo::InputError&) {
    }
  }
  ::close(fd);
  return 0;
}
