// NumPy .npy files (format versions 1.0, 2.0 and 3.0 read; 1.0 written, or 2.0 when the
// header needs it). clbo reads and writes little-endian float32 in C order only; anything
// else is rejected with an error naming the file and the offending header field.
//
// Accepted on read: magic "\x93NUMPY", version 1.0 / 2.0 / 3.0, a header dict holding exactly
// the keys 'descr', 'fortran_order' and 'shape'; descr '<f4' (or '=f4', native order, which
// is little-endian on every platform clbo builds for); fortran_order False; shape a tuple of
// non-negative integers. The payload must hold exactly product(shape) floats: a shorter file
// is truncated, and bytes after the payload are rejected too (NumPy would ignore them, but a
// file longer than its header says almost always means a wrong shape, and replaying
// misaligned data silently is worse than a clear error).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "clbo/core/output_file.hpp"

namespace clbo {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // C order
  size_t size() const { return data.size(); }
};

// What a validated header says about the file it came from.
struct NpyHeader {
  int version = 1;  // major version: 1, 2 or 3
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes from the file's start to the first element
  size_t count() const;    // product of shape (1 for a 0-d array)
  size_t payload_bytes() const { return count() * sizeof(float); }
};

// Parses and validates the header at the start of `bytes` (at least the magic, the version,
// the length field and the dict). `where` names the source in errors. Does not look at the
// payload; see check_npy_payload.
NpyHeader parse_npy_header(std::string_view bytes, const std::string& where);

// Throws InputError unless a file of `file_size` bytes holds exactly the header's payload.
void check_npy_payload(const NpyHeader& h, uint64_t file_size, const std::string& where);

// Throws InputError naming `where` and the shape unless the array has `rank` dimensions.
// `what` describes the expected layout for the message, e.g. "[T, p, n]".
void require_npy_rank(const std::vector<int64_t>& shape, size_t rank, const std::string& where,
                      const std::string& what);

// "(2, 3)", "(5,)", "()": the shape as NumPy prints it, for headers and messages.
std::string npy_shape_string(const std::vector<int64_t>& shape);

// Throws InputError (file, field, value) for: bad magic, unsupported version, a dtype other
// than '<f4', fortran_order true, a malformed header, or a payload shorter than the shape.
NpyArray read_npy_f32(const std::string& path);

// Writes atomically (see results.hpp). data.size() must equal the product of shape.
void write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data);

// The header bytes (magic, version, length, dict, padding): NumPy's layout, padded with
// spaces and a final '\n' so the payload starts at a multiple of 64. `version` is the
// smallest acceptable: 1 is upgraded to 2 when the dict does not fit a 16-bit length.
std::string encode_npy_header_f32(const std::vector<int64_t>& shape, int version = 1);

// Encodes to bytes, for tests and for writers that stream.
std::string encode_npy_f32(const std::vector<int64_t>& shape, const float* data, int version = 1);

// A read-only memory map of a validated float32 .npy file, so huge inputs (replay's
// [T, p, n] gradients) are read on demand instead of copied into memory up front. When the
// payload is not 4-byte aligned in the file (possible only in hand-made headers) it falls
// back to reading the payload into memory, so data() is always a valid float pointer.
class NpyMappedF32 {
 public:
  explicit NpyMappedF32(const std::string& path);
  ~NpyMappedF32();
  NpyMappedF32(const NpyMappedF32&) = delete;
  NpyMappedF32& operator=(const NpyMappedF32&) = delete;

  const std::string& path() const { return path_; }
  const NpyHeader& header() const { return header_; }
  const std::vector<int64_t>& shape() const { return header_.shape; }
  size_t count() const { return header_.count(); }
  // count() floats in C order, valid while this object lives.
  const float* data() const { return data_; }

 private:
  std::string path_;
  NpyHeader header_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  std::vector<float> owned_;  // the unaligned fallback
  const float* data_ = nullptr;
};

// Streams a float32 .npy file of a known shape into a temporary beside `path` (an
// AtomicOutput, see output_file.hpp); commit() renames it into place. Destroying an
// uncommitted writer removes the temporary, so an error anywhere leaves neither a
// half-written file nor a stale temporary behind. write_at() is safe to call from several
// threads at once for disjoint ranges (it uses pwrite), so ranks can store their own slices
// without a gather.
class NpyStreamWriter {
 public:
  NpyStreamWriter(const std::string& path, const std::vector<int64_t>& shape);
  NpyStreamWriter(const NpyStreamWriter&) = delete;
  NpyStreamWriter& operator=(const NpyStreamWriter&) = delete;

  // Writes `count` floats at element offset `first` of the C-order payload.
  void write_at(size_t first, const float* data, size_t count);
  // Writes the next `count` floats after the previous append (single-threaded use).
  void append(const float* data, size_t count);
  // Closes the temporary and renames it over `path`. Elements never written read as zero
  // (the file is sized up front). Throws clbo::Error on failure (temporary removed).
  void commit();

  const std::string& path() const { return out_.path(); }
  size_t count() const { return count_; }

 private:
  AtomicOutput out_;
  size_t data_offset_ = 0, count_ = 0, next_ = 0;
};

}  // namespace clbo
