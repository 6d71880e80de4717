// The little-endian binary encoding of optimizer state (docs/optimizers.md, "Checkpoints").
// Every value is written at a fixed width in little-endian byte order, whatever the host;
// float buffers are a u64 element count followed by the raw IEEE bits, so a reload restores
// every bit. The reader checks each length against what remains and names the file, the
// field and the value in its InputErrors, so a truncated or mismatched state never loads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clbo::state_io {

class Writer {
 public:
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f32(float v);
  void f64(double v);
  void boolean(bool v) { u32(v ? 1 : 0); }
  void str(std::string_view s);
  void raw(std::string_view bytes) { out_.append(bytes); }
  void floats(const std::vector<float>& v);
  void doubles(const std::vector<double>& v);
  const std::string& data() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  // `where` names the source (a file) in errors; `prefix` is prepended to field names.
  Reader(std::string_view data, std::string where, std::string prefix = "");
  uint32_t u32(const std::string& field);
  uint64_t u64(const std::string& field);
  int64_t i64(const std::string& field) { return static_cast<int64_t>(u64(field)); }
  float f32(const std::string& field);
  double f64(const std::string& field);
  bool boolean(const std::string& field);
  std::string str(const std::string& field);
  std::string_view raw(const std::string& field, size_t bytes);
  // A float buffer; `expected` is the required element count (SIZE_MAX: any).
  std::vector<float> floats(const std::string& field, size_t expected = SIZE_MAX);
  std::vector<double> doubles(const std::string& field, size_t expected = SIZE_MAX);
  // Throws unless the whole input was consumed.
  void expect_end() const;
  // Throws InputError(where, prefix+field, value, why).
  [[noreturn]] void fail(const std::string& field, const std::string& value,
                         const std::string& why) const;
  // Checks a header value read from the stream against the value this object needs.
  void expect_equal(const std::string& field, uint64_t got, uint64_t want) const;
  size_t remaining() const { return data_.size() - pos_; }
  const std::string& where() const { return where_; }

 private:
  std::string_view take(const std::string& field, size_t bytes);
  std::string_view data_;
  size_t pos_ = 0;
  std::string where_, prefix_;
};

}  // namespace clbo::state_io
