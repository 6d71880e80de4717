#include "state_io.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "clbo/core/error.hpp"

namespace clbo::state_io {

namespace {

template <class U>
void put_le(std::string& out, U v) {
  for (size_t i = 0; i < sizeof(U); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

template <class U>
U get_le(std::string_view b) {
  U v = 0;
  for (size_t i = 0; i < sizeof(U); ++i)
    v |= static_cast<U>(static_cast<unsigned char>(b[i])) << (8 * i);
  return v;
}

// Bulk copy of 4- or 8-byte words in little-endian order: a memcpy on little-endian hosts,
// a per-word encode elsewhere.
template <class T, class U>
void put_array(std::string& out, const std::vector<T>& v) {
  if constexpr (std::endian::native == std::endian::little) {
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  } else {
    for (const T x : v) put_le<U>(out, std::bit_cast<U>(x));
  }
}

template <class T, class U>
std::vector<T> get_array(std::string_view b, size_t count) {
  std::vector<T> v(count);
  if constexpr (std::endian::native == std::endian::little) {
    if (count > 0) std::memcpy(v.data(), b.data(), count * sizeof(T));
  } else {
    for (size_t i = 0; i < count; ++i) v[i] = std::bit_cast<T>(get_le<U>(b.substr(i * sizeof(T))));
  }
  return v;
}

}  // namespace

void Writer::u32(uint32_t v) {
  put_le(out_, v);
}
void Writer::u64(uint64_t v) {
  put_le(out_, v);
}
void Writer::f32(float v) {
  put_le(out_, std::bit_cast<uint32_t>(v));
}
void Writer::f64(double v) {
  put_le(out_, std::bit_cast<uint64_t>(v));
}

void Writer::str(std::string_view s) {
  u64(s.size());
  out_.append(s);
}

void Writer::floats(const std::vector<float>& v) {
  u64(v.size());
  put_array<float, uint32_t>(out_, v);
}

void Writer::doubles(const std::vector<double>& v) {
  u64(v.size());
  put_array<double, uint64_t>(out_, v);
}

Reader::Reader(std::string_view data, std::string where, std::string prefix)
    : data_(data), where_(std::move(where)), prefix_(std::move(prefix)) {}

void Reader::fail(const std::string& field, const std::string& value,
                  const std::string& why) const {
  throw InputError(where_, prefix_ + field, value, why);
}

std::string_view Reader::take(const std::string& field, size_t bytes) {
  if (bytes > remaining())
    fail(field, "(truncated)",
         fmt::format("the state is truncated: {} bytes needed at offset {}, {} left", bytes, pos_,
                     remaining()));
  const std::string_view b = data_.substr(pos_, bytes);
  pos_ += bytes;
  return b;
}

uint32_t Reader::u32(const std::string& field) {
  return get_le<uint32_t>(take(field, 4));
}
uint64_t Reader::u64(const std::string& field) {
  return get_le<uint64_t>(take(field, 8));
}
float Reader::f32(const std::string& field) {
  return std::bit_cast<float>(u32(field));
}
double Reader::f64(const std::string& field) {
  return std::bit_cast<double>(u64(field));
}

bool Reader::boolean(const std::string& field) {
  const uint32_t v = u32(field);
  if (v > 1) fail(field, std::to_string(v), "expected a boolean (0 or 1)");
  return v == 1;
}

std::string Reader::str(const std::string& field) {
  const uint64_t len = u64(field);
  if (len > remaining()) fail(field, std::to_string(len), "string length exceeds the state size");
  return std::string(take(field, len));
}

std::string_view Reader::raw(const std::string& field, size_t bytes) {
  return take(field, bytes);
}

std::vector<float> Reader::floats(const std::string& field, size_t expected) {
  const uint64_t count = u64(field);
  if (expected != SIZE_MAX && count != expected)
    fail(field, std::to_string(count),
         fmt::format("expected {} elements (the optimizer was built for another size)", expected));
  if (count > remaining() / 4) fail(field, std::to_string(count), "the state is truncated");
  return get_array<float, uint32_t>(take(field, count * 4), count);
}

std::vector<double> Reader::doubles(const std::string& field, size_t expected) {
  const uint64_t count = u64(field);
  if (expected != SIZE_MAX && count != expected)
    fail(field, std::to_string(count), fmt::format("expected {} values", expected));
  if (count > remaining() / 8) fail(field, std::to_string(count), "the state is truncated");
  return get_array<double, uint64_t>(take(field, count * 8), count);
}

void Reader::expect_end() const {
  if (remaining() != 0)
    fail("(end)", fmt::format("{} extra bytes", remaining()),
         "unexpected data after the end of the state");
}

void Reader::expect_equal(const std::string& field, uint64_t got, uint64_t want) const {
  if (got != want)
    fail(field, std::to_string(got),
         fmt::format("this optimizer has {}; a state loads only into an optimizer built with the "
                     "same type, layout, world size and rank",
                     want));
}

}  // namespace clbo::state_io
