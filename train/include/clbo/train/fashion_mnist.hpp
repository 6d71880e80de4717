// Fashion-MNIST from the Debian package `dataset-fashion-mnist`: the four gzip'd IDX files
// (60k training and 10k test images, 28x28 uint8, labels 0..9), parsed and validated here.
// Any missing, truncated, corrupt or mismatched file is an InputError that names the file
// and tells the user which package to install.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace clbo::train {

// Where the Debian package puts the files.
inline constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// Raw IDX contents: dims as stored (big-endian in the file), payload as bytes.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

// Reads an IDX file of unsigned bytes (type code 0x08), gzip'd or plain (zlib reads both).
// `expected_ndim` is checked against the header. Throws InputError naming `path` for a
// missing file, a bad magic, a wrong type or rank, a truncated payload or trailing bytes.
IdxArray read_idx_u8(const std::string& path, int expected_ndim);

// Images as float rows (n x rows*cols), standardized with the training set's mean and std so
// the test set sees the same transform; labels as bytes.
struct ImageSet {
  size_t n = 0, rows = 0, cols = 0;
  std::vector<float> pixels;  // n * rows * cols
  std::vector<uint8_t> labels;
  size_t features() const { return rows * cols; }
};

struct FashionMnist {
  ImageSet train, test;
  float pixel_mean = 0.f, pixel_std = 1.f;  // of the raw training pixels scaled to [0, 1]
  // The one standardization of a pixel scaled to [0, 1] (raw / 255.0f): the loader applies it
  // to every image, and standardize(0.0f), a black pixel, fills the shifted images' edges.
  float standardize(float scaled) const { return (scaled - pixel_mean) / pixel_std; }
};

// The first existing of `<dir>/<name>.gz` and `<dir>/<name>`; "" if neither exists.
std::string find_idx_file(const std::string& dir, const std::string& name);

// Loads and validates the four files from `dir` (an empty dir means the package's folder).
// Checks image and label counts agree, 28x28 images, labels < 10, and 60000/10000 examples
// unless `require_full_sizes` is false (tests use small files).
FashionMnist load_fashion_mnist(const std::string& dir, bool require_full_sizes = true);

}  // namespace clbo::train
