#include "clbo/core/npy.hpp"

#include "clbo/core/results.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>

#include "clbo/core/error.hpp"
#include "clbo/core/input_file.hpp"

namespace clbo {

static_assert(std::endian::native == std::endian::little,
              "clbo's .npy I/O maps float32 payloads directly and needs a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlign = 64;  // NumPy pads headers so the payload starts at a multiple of 64
constexpr size_t kGrowthDigits = 21;  // NumPy's GROWTH_AXIS_MAX_DIGITS
constexpr uint64_t kMaxDim = uint64_t{1} << 62;

// Bytes as a readable literal for error messages: printable ASCII kept, the rest \xNN.
std::string printable(std::string_view s, size_t max_len = 120) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_len; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > max_len) out += "...";
  return "'" + out + "'";
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Splits the header's Python dict literal into key -> raw value text. Values are kept raw
// (a quoted string, a name, a bracketed group) and interpreted per key, so each error can
// quote exactly what the file says.
class DictSplitter {
 public:
  DictSplitter(std::string_view text, const std::string& where) : s_(text), where_(where) {}

  std::map<std::string, std::string_view> split() {
    std::map<std::string, std::string_view> out;
    skip_ws();
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      const std::string key = unquote(read_string());
      skip_ws();
      expect(':');
      skip_ws();
      const std::string_view value = read_value();
      if (!out.emplace(key, value).second) malformed(fmt::format("key '{}' appears twice", key));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') malformed("expected ',' or '}' after a value");
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) malformed("unexpected text after the closing '}'");
    return out;
  }

  [[noreturn]] void malformed(const std::string& why) const {
    throw InputError(where_, "header", printable(trim(s_)),
                     fmt::format("malformed header dict at byte {}: {}", pos_, why));
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) malformed(fmt::format("expected '{}'", c));
    ++pos_;
  }
  // A quoted string including its quotes.
  std::string_view read_string() {
    const char q = peek();
    if (q != '\'' && q != '"') malformed("expected a quoted key");
    const size_t start = pos_++;
    while (pos_ < s_.size() && s_[pos_] != q) pos_ += s_[pos_] == '\\' ? 2 : 1;
    if (pos_ >= s_.size()) malformed("unterminated string");
    ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // One Python literal: a quoted string, a bracketed group, or a bare name or number.
  std::string_view read_value() {
    const size_t start = pos_;
    const char first = peek();
    if (first == '\'' || first == '"') return read_string();
    if (first == '(' || first == '[' || first == '{') {
      int depth = 0;
      while (pos_ < s_.size()) {
        const char c = s_[pos_];
        if (c == '\'' || c == '"') {
          read_string();
          continue;
        }
        ++pos_;
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && --depth == 0) break;
      }
      if (depth != 0) malformed("unterminated bracket");
      return s_.substr(start, pos_ - start);
    }
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
            s_[pos_] == '.' || s_[pos_] == '-' || s_[pos_] == '+'))
      ++pos_;
    if (pos_ == start) malformed("missing value");
    return s_.substr(start, pos_ - start);
  }
  static std::string unquote(std::string_view quoted) {
    return std::string(quoted.substr(1, quoted.size() - 2));
  }

  std::string_view s_;
  const std::string& where_;
  size_t pos_ = 0;
};

void check_descr(std::string_view raw, const std::string& where) {
  const std::string value(raw);
  if (raw.size() < 2 || (raw.front() != '\'' && raw.front() != '"') || raw.back() != raw.front())
    throw InputError(where, "descr", value,
                     "expected a dtype string; structured dtypes are not supported, clbo reads "
                     "float32 ('<f4') only");
  const std::string_view d = raw.substr(1, raw.size() - 2);
  if (d == "<f4" || d == "=f4") return;
  const std::string why =
      d == ">f4" ? "big-endian float32 is not supported; save arr.astype('<f4')"
                 : "clbo reads little-endian float32 ('<f4') only; save arr.astype(np.float32)";
  throw InputError(where, "descr", value, why);
}

void check_fortran_order(std::string_view raw, const std::string& where) {
  if (raw == "False") return;
  if (raw == "True")
    throw InputError(where, "fortran_order", "True",
                     "Fortran-ordered arrays are not supported; save np.ascontiguousarray(arr)");
  throw InputError(where, "fortran_order", std::string(raw), "expected True or False");
}

std::vector<int64_t> parse_shape(std::string_view raw, const std::string& where) {
  const std::string value(raw);
  const auto bad = [&](const std::string& why) -> InputError {
    return InputError(where, "shape", value, why);
  };
  if (raw.size() < 2 || raw.front() != '(' || raw.back() != ')')
    throw bad("expected a tuple of non-negative integers, e.g. (3, 4) or (5,)");
  std::string_view inner = trim(raw.substr(1, raw.size() - 2));
  std::vector<int64_t> shape;
  bool trailing_comma = false;
  while (!inner.empty()) {
    const size_t comma = inner.find(',');
    std::string_view tok = trim(inner.substr(0, comma));
    trailing_comma = comma != std::string_view::npos;
    inner = comma == std::string_view::npos ? std::string_view() : trim(inner.substr(comma + 1));
    // Python 2 era files wrote long integers with an 'L' suffix.
    if (!tok.empty() && (tok.back() == 'L' || tok.back() == 'l')) tok.remove_suffix(1);
    if (tok.empty()) throw bad("empty dimension");
    uint64_t dim = 0;
    for (char c : tok) {
      if (c == '-') throw bad("dimensions must be non-negative");
      if (c < '0' || c > '9') throw bad("dimensions must be integers");
      dim = dim * 10 + static_cast<uint64_t>(c - '0');
      if (dim > kMaxDim) throw bad("dimension too large");
    }
    shape.push_back(static_cast<int64_t>(dim));
  }
  // "(5)" is an int in Python, not a tuple: NumPy rejects it, and so do we.
  if (shape.size() == 1 && !trailing_comma)
    throw bad("a 1-d shape needs a trailing comma, e.g. (5,)");
  // The payload size in bytes must be representable.
  uint64_t total = sizeof(float);
  for (int64_t d : shape) {
    if (d != 0 && total > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
      throw bad("the array is too large to address");
    total *= static_cast<uint64_t>(d);
  }
  return shape;
}

uint32_t read_le(std::string_view bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

size_t NpyHeader::count() const {
  size_t c = 1;
  for (int64_t d : shape) c *= static_cast<size_t>(d);
  return c;
}

std::string npy_shape_string(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

NpyHeader parse_npy_header(std::string_view bytes, const std::string& where) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic)
    throw InputError(where, "magic", printable(bytes.substr(0, kMagic.size())),
                     "not a .npy file (expected the magic string '\\x93NUMPY')");
  if (bytes.size() < 8)
    throw InputError(where, "version", "missing", "file ends inside the .npy preamble");
  NpyHeader h;
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if (!(major >= 1 && major <= 3) || minor != 0)
    throw InputError(where, "version", fmt::format("{}.{}", major, minor),
                     "unsupported .npy format version (1.0, 2.0 and 3.0 are read)");
  h.version = major;
  const size_t len_width = major == 1 ? 2 : 4;
  const size_t prefix = 8 + len_width;
  if (bytes.size() < prefix)
    throw InputError(where, "header_len", "missing", "file ends inside the .npy preamble");
  const size_t header_len = read_le(bytes, 8, len_width);
  h.data_offset = prefix + header_len;
  if (bytes.size() < h.data_offset)
    throw InputError(where, "header_len", std::to_string(header_len),
                     fmt::format("the header needs {} bytes but the file has only {}",
                                 h.data_offset, bytes.size()));
  const auto dict = DictSplitter(bytes.substr(prefix, header_len), where).split();
  std::vector<std::string> known = {"descr", "fortran_order", "shape"};
  for (const auto& [key, value] : dict)
    if (key != "descr" && key != "fortran_order" && key != "shape")
      throw InputError(where, key, std::string(value),
                       "unknown header key" + did_you_mean(key, known));
  for (const auto& key : known)
    if (!dict.count(key)) throw InputError(where, key, "missing", "required header key");
  check_descr(dict.at("descr"), where);
  check_fortran_order(dict.at("fortran_order"), where);
  h.shape = parse_shape(dict.at("shape"), where);
  return h;
}

void check_npy_payload(const NpyHeader& h, uint64_t file_size, const std::string& where) {
  const uint64_t have = file_size - h.data_offset;
  const uint64_t need = h.payload_bytes();
  if (have < need)
    throw InputError(where, "payload", fmt::format("{} bytes", have),
                     fmt::format("file is truncated: shape {} of float32 needs {} bytes",
                                 npy_shape_string(h.shape), need));
  if (have > need)
    throw InputError(where, "payload", fmt::format("{} bytes", have),
                     fmt::format("{} bytes follow the {} bytes that shape {} describes; the "
                                 "header's shape does not match the data",
                                 have - need, need, npy_shape_string(h.shape)));
}

void require_npy_rank(const std::vector<int64_t>& shape, size_t rank, const std::string& where,
                      const std::string& what) {
  if (shape.size() != rank)
    throw InputError(where, "shape", npy_shape_string(shape),
                     fmt::format("expected a {}-d array {}, got {} dimension{}", rank, what,
                                 shape.size(), shape.size() == 1 ? "" : "s"));
}

std::string encode_npy_header_f32(const std::vector<int64_t>& shape, int version) {
  if (version < 1 || version > 3)
    throw Error(fmt::format("encode_npy_header_f32: unsupported version {}", version));
  const std::string dict = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}",
                                       npy_shape_string(shape));
  // NumPy's writer (checked against 1.24) reserves room to grow the first axis in place: the
  // padding holds at least 21 − digits(shape[0]) spaces. Matching it keeps our headers
  // byte-identical.
  const size_t growth =
      shape.empty() ? 0 : kGrowthDigits - std::min(kGrowthDigits, std::to_string(shape[0]).size());
  auto padded_len = [&](size_t prefix) {
    return (prefix + dict.size() + growth + 1 + kAlign - 1) / kAlign * kAlign - prefix;
  };
  if (version == 1 && padded_len(10) > 0xffff) version = 2;
  const size_t prefix = version == 1 ? 10 : 12;
  const size_t header_len = padded_len(prefix);
  std::string out(kMagic);
  out += static_cast<char>(version);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

std::string encode_npy_f32(const std::vector<int64_t>& shape, const float* data, int version) {
  std::string out = encode_npy_header_f32(shape, version);
  NpyHeader h;
  h.shape = shape;
  const size_t bytes = h.payload_bytes();
  if (bytes) out.append(reinterpret_cast<const char*>(data), bytes);
  return out;
}

// ---- reading ---------------------------------------------------------------------------

NpyMappedF32::NpyMappedF32(const std::string& path) : path_(path) {
  uint64_t size = 0;
  const int fd = open_input_file(path, &size);
  map_bytes_ = static_cast<size_t>(size);
  if (map_bytes_ > 0) {
    map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      const std::string why = errno_text();
      ::close(fd);
      throw InputError(path, "(file)", path, "cannot map: " + why);
    }
    // Replay walks the file front to back; let the kernel read ahead.
    ::madvise(map_, map_bytes_, MADV_SEQUENTIAL);
  }
  ::close(fd);  // the mapping keeps the file alive
  try {
    const std::string_view bytes(static_cast<const char*>(map_), map_bytes_);
    header_ = parse_npy_header(bytes, path);
    check_npy_payload(header_, map_bytes_, path);
    const char* payload = bytes.data() + header_.data_offset;
    if (reinterpret_cast<uintptr_t>(payload) % alignof(float) == 0) {
      data_ = reinterpret_cast<const float*>(payload);
    } else {
      owned_.resize(header_.count());
      std::memcpy(owned_.data(), payload, header_.payload_bytes());
      data_ = owned_.data();
    }
  } catch (...) {
    if (map_) ::munmap(map_, map_bytes_);
    map_ = nullptr;
    throw;
  }
}

NpyMappedF32::~NpyMappedF32() {
  if (map_) ::munmap(map_, map_bytes_);
}

NpyArray read_npy_f32(const std::string& path) {
  NpyMappedF32 in(path);
  NpyArray a;
  a.shape = in.shape();
  a.data.assign(in.data(), in.data() + in.count());
  return a;
}

// ---- writing ---------------------------------------------------------------------------

NpyStreamWriter::NpyStreamWriter(const std::string& path, const std::vector<int64_t>& shape)
    : out_(path) {
  const std::string header = encode_npy_header_f32(shape);
  NpyHeader h;
  h.shape = shape;
  count_ = h.count();
  data_offset_ = header.size();
  out_.write(header);
  // Sized up front so ranks can fill disjoint slices in any order.
  out_.resize(data_offset_ + count_ * sizeof(float));
}

void NpyStreamWriter::write_at(size_t first, const float* data, size_t count) {
  if (first > count_ || count > count_ - first)
    throw Error(fmt::format("{}: write of {} elements at {} exceeds the array's {}", path(), count,
                            first, count_));
  out_.write_at(data_offset_ + first * sizeof(float), data, count * sizeof(float));
}

void NpyStreamWriter::append(const float* data, size_t count) {
  write_at(next_, data, count);
  next_ += count;
}

void NpyStreamWriter::commit() {
  out_.commit();
}

void write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  NpyStreamWriter w(path, shape);
  w.append(data, w.count());
  w.commit();
}

}  // namespace clbo
