#include "clbo/train/fashion_mnist.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "clbo/core/error.hpp"
#include "clbo/core/input_file.hpp"

namespace clbo::train {

namespace {

std::string install_hint() {
  return fmt::format(
      "install the Debian package {} (apt-get install {}) or point --data-dir / \"data_dir\" "
      "at a folder holding the four Fashion-MNIST IDX files",
      kFashionMnistPackage, kFashionMnistPackage);
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `bytes` into dst; returns how many arrived (fewer means truncated).
size_t read_fully(gzFile f, const std::string& path, void* dst, size_t bytes) {
  size_t got = 0;
  auto* out = static_cast<uint8_t*>(dst);
  while (got < bytes) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes - got, 1u << 30));
    const int r = gzread(f, out + got, chunk);
    if (r < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      throw InputError(path, "(file)", path,
                       fmt::format("corrupt gzip data ({}); {}", msg ? msg : "?", install_hint()));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

std::string find_idx_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  for (const std::string& candidate : {name + ".gz", name}) {
    const fs::path p = fs::path(dir) / candidate;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

IdxArray read_idx_u8(const std::string& path, int expected_ndim) {
  int fd = -1;
  try {
    fd = open_input_file(path);
  } catch (const InputError& e) {
    throw InputError(path, "(file)", path, e.why() + "; " + install_hint());
  }
  GzFile f(gzdopen(fd, "rb"));  // owns fd from here on
  if (!f) {
    ::close(fd);
    throw InputError(path, "(file)", path, "cannot open; " + install_hint());
  }

  uint8_t magic[4];
  if (read_fully(f.get(), path, magic, 4) != 4)
    throw InputError(path, "magic", "(truncated)",
                     "file ends inside the IDX header; " + install_hint());
  if (magic[0] != 0 || magic[1] != 0)
    throw InputError(
        path, "magic",
        fmt::format("0x{:02x}{:02x}{:02x}{:02x}", magic[0], magic[1], magic[2], magic[3]),
        "not an IDX file (first two bytes must be zero); " + install_hint());
  if (magic[2] != 0x08)
    throw InputError(path, "type", fmt::format("0x{:02x}", magic[2]),
                     "expected 0x08 (unsigned byte)");
  if (magic[3] != expected_ndim)
    throw InputError(path, "ndim", std::to_string(magic[3]),
                     fmt::format("expected {} dimensions", expected_ndim));

  IdxArray a;
  size_t total = 1;
  for (int d = 0; d < expected_ndim; ++d) {
    uint8_t be[4];
    if (read_fully(f.get(), path, be, 4) != 4)
      throw InputError(path, fmt::format("dims[{}]", d), "(truncated)",
                       "file ends inside the IDX header; " + install_hint());
    const uint32_t v = (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) | (uint32_t{be[2]} << 8) |
                       uint32_t{be[3]};
    if (v == 0 || v > (1u << 28))
      throw InputError(path, fmt::format("dims[{}]", d), std::to_string(v),
                       "implausible dimension");
    a.dims.push_back(v);
    total *= v;
  }
  if (total > (size_t{1} << 32))
    throw InputError(path, "dims", std::to_string(total), "payload too large");
  // Grown as the data arrives, so a header claiming gigabytes costs only what the file holds.
  size_t got = 0;
  constexpr size_t kChunk = size_t{1} << 24;
  while (got < total) {
    const size_t want = std::min(kChunk, total - got);
    a.data.resize(got + want);
    const size_t r = read_fully(f.get(), path, a.data.data() + got, want);
    got += r;
    if (r < want) break;
  }
  a.data.resize(got);
  if (got != total)
    throw InputError(path, "payload", fmt::format("{} of {} bytes", got, total),
                     "truncated file; " + install_hint());
  uint8_t extra;
  if (read_fully(f.get(), path, &extra, 1) != 0)
    throw InputError(path, "payload", fmt::format("more than {} bytes", total),
                     "trailing bytes after the payload the header declares; " + install_hint());
  return a;
}

namespace {

ImageSet load_split(const std::string& dir, const std::string& prefix, size_t expected_n) {
  const std::string images_name = prefix + "-images-idx3-ubyte";
  const std::string labels_name = prefix + "-labels-idx1-ubyte";
  std::string images_path = find_idx_file(dir, images_name);
  std::string labels_path = find_idx_file(dir, labels_name);
  if (images_path.empty())
    throw InputError((std::filesystem::path(dir) / (images_name + ".gz")).string(), "(file)", dir,
                     "missing; " + install_hint());
  if (labels_path.empty())
    throw InputError((std::filesystem::path(dir) / (labels_name + ".gz")).string(), "(file)", dir,
                     "missing; " + install_hint());
  IdxArray images = read_idx_u8(images_path, 3);
  IdxArray labels = read_idx_u8(labels_path, 1);
  if (images.dims[1] != 28 || images.dims[2] != 28)
    throw InputError(images_path, "dims", fmt::format("{}x{}", images.dims[1], images.dims[2]),
                     "Fashion-MNIST images are 28x28; " + install_hint());
  if (images.dims[0] != labels.dims[0])
    throw InputError(labels_path, "dims[0]", std::to_string(labels.dims[0]),
                     fmt::format("{} holds {} images but this file {} labels; {}", images_path,
                                 images.dims[0], labels.dims[0], install_hint()));
  if (expected_n != 0 && static_cast<size_t>(images.dims[0]) != expected_n)
    throw InputError(images_path, "dims[0]", std::to_string(images.dims[0]),
                     fmt::format("expected {} examples; {}", expected_n, install_hint()));
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9)
      throw InputError(labels_path, fmt::format("label[{}]", i), std::to_string(labels.data[i]),
                       "labels must be 0..9; " + install_hint());
  ImageSet s;
  s.n = images.dims[0];
  s.rows = images.dims[1];
  s.cols = images.dims[2];
  s.pixels.resize(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i) s.pixels[i] = images.data[i] / 255.0f;
  s.labels = std::move(labels.data);
  return s;
}

}  // namespace

FashionMnist load_fashion_mnist(const std::string& dir_in, bool require_full_sizes) {
  const std::string dir = dir_in.empty() ? kFashionMnistDefaultDir : dir_in;
  FashionMnist d;
  d.train = load_split(dir, "train", require_full_sizes ? 60000 : 0);
  d.test = load_split(dir, "t10k", require_full_sizes ? 10000 : 0);
  // Standardize with the training set's statistics, summed in double in a fixed order.
  double sum = 0, sumsq = 0;
  for (float v : d.train.pixels) {
    sum += v;
    sumsq += double(v) * v;
  }
  const double count = static_cast<double>(d.train.pixels.size());
  const double mean = sum / count;
  const double var = std::max(sumsq / count - mean * mean, 1e-12);
  d.pixel_mean = static_cast<float>(mean);
  d.pixel_std = static_cast<float>(std::sqrt(var));
  for (ImageSet* s : {&d.train, &d.test})
    for (float& v : s->pixels) v = d.standardize(v);
  return d;
}

}  // namespace clbo::train
