// Validated reading of JSON config objects. Every accessor checks type and range and
// throws InputError naming the file, the dotted field path and the value; finish() rejects
// fields nobody read, suggesting the nearest known name, so typos never pass silently.
#pragma once
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace clbo {

nlohmann::json load_json_file(const std::string& path);

class ConfigReader {
 public:
  // `file` names the source (a path, or "<command line>"); `prefix` is the dotted path of obj.
  ConfigReader(const nlohmann::json& obj, std::string file, std::string prefix = "");

  bool has(const std::string& key) const { return obj_.contains(key); }
  double number(const std::string& key, double def);
  // Range-checked number; the bounds are inclusive or exclusive as flagged.
  double number_in(const std::string& key, double def, double lo, bool lo_incl, double hi,
                   bool hi_incl);
  int64_t integer(const std::string& key, int64_t def, int64_t min_value);
  bool boolean(const std::string& key, bool def);
  std::string choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& allowed);
  // A two-element array of numbers in [0, 1), as Adam's betas.
  std::pair<double, double> betas(const std::string& key, std::pair<double, double> def);
  // Marks a key as known without reading it (accepted for DeepSpeed compatibility).
  void ignore(const std::string& key) { read_.insert(key); }
  // Throws on the first key that no accessor read.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& why) const;
  std::string field(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json* get(const std::string& key);
  const nlohmann::json& obj_;
  std::string file_, prefix_;
  std::set<std::string> read_;
};

}  // namespace clbo
