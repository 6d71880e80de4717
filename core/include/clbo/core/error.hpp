// Errors that reach the user. Every input error names where it happened (a file or a
// config path), the field, and the offending value, so a user can fix it without reading code.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace clbo {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input: a config, a layout, an array file, a command-line value.
class InputError : public Error {
 public:
  InputError(std::string where, std::string field, std::string value, std::string why);
  const std::string& where() const { return where_; }
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }

 private:
  std::string where_, field_, value_;
};

// The candidate closest to `bad` by edit distance, or "" when nothing is reasonably close.
std::string nearest_name(const std::string& bad, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or "" — appended to unknown-name errors.
std::string did_you_mean(const std::string& bad, const std::vector<std::string>& candidates);

}  // namespace clbo
