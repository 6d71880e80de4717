// Opening input files the same way everywhere. Only regular files are read: a directory, a
// FIFO (which would block the open), a device or a socket is refused up front, and every
// failure is an InputError naming the path and the OS reason (strerror), e.g.
//   x.json: field '(file)' = x.json: cannot read: Input/output error
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace clbo {

// What a path is, for messages: "a directory", "a FIFO (named pipe)", "a character device"...
std::string file_kind_text(uint32_t st_mode);

// Opens `path` read-only without ever blocking, checks it is a regular file, and returns the
// descriptor (close-on-exec; the caller closes it). `size` receives the file's size.
int open_input_file(const std::string& path, uint64_t* size = nullptr);

// The whole file; a file larger than max_bytes is refused before it is read (files under
// /proc report size 0: they are read to their end, under the same bound).
std::string read_input_file(const std::string& path, size_t max_bytes);

}  // namespace clbo
