// Errors that reach the user. Every input error names where it happened (a file or a
// config path), the field, and the offending value, so a user can fix it without reading code.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace clbo {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The longest field or value an error message quotes (a source path may be as long as a
// path can be); longer ones are cut, so a hostile input (a 100 MB string, a deeply nested
// value) never makes a message huge.
inline constexpr size_t kMaxEchoedChars = 512;
inline constexpr size_t kMaxEchoedPath = 4096;

// `text`, or its first max_chars bytes (cut at a UTF-8 boundary) and its total length.
std::string bounded_text(std::string_view text, size_t max_chars = kMaxEchoedChars);

// Bad user input: a config, a layout, an array file, a command-line value. The field and the
// value are bounded by kMaxEchoedChars, `where` by kMaxEchoedPath.
class InputError : public Error {
 public:
  InputError(std::string where, std::string field, std::string value, std::string why);
  const std::string& where() const { return where_; }
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }
  const std::string& why() const { return why_; }

 private:
  std::string where_, field_, value_, why_;
};

// An exception's message for users: "out of memory (...)" for std::bad_alloc, whose what()
// says only "std::bad_alloc", else what().
std::string exception_text(const std::exception& e);

// The candidate closest to `bad` by edit distance, or "" when nothing is reasonably close.
std::string nearest_name(const std::string& bad, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or "" — appended to unknown-name errors.
std::string did_you_mean(const std::string& bad, const std::vector<std::string>& candidates);

}  // namespace clbo
