// NumPy .npy files (format versions 1.0, 2.0 and 3.0 read; 1.0 written, or 2.0 when the
// header needs it). clbo reads and writes little-endian float32 in C order only; anything
// else is rejected with an error naming the file and the offending header field.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace clbo {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  // C order
  size_t size() const { return data.size(); }
};

// Throws InputError (file, field, value) for: bad magic, unsupported version, a dtype other
// than '<f4', fortran_order true, a malformed header, or a payload shorter than the shape.
NpyArray read_npy_f32(const std::string& path);

// Writes atomically (see results.hpp). data.size() must equal the product of shape.
void write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data);

// Encodes to bytes, for tests and for writers that stream.
std::string encode_npy_f32(const std::vector<int64_t>& shape, const float* data, int version = 1);

}  // namespace clbo
