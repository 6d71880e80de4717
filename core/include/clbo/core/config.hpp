// Validated reading of JSON config objects. Every accessor checks type and range and
// throws InputError naming the file, the dotted field path and the value as the file wrote
// it; finish() rejects fields nobody read, suggesting the nearest known name, so typos never
// pass silently. Documents are read with json_reader.hpp (duplicate keys and runaway nesting
// are rejected there, before any accessor runs).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "clbo/core/json_reader.hpp"
#include "clbo/core/names.hpp"

namespace clbo {

// The integer `v` holds, in [min_value, max_value]: an integer literal, or a number with an
// integral value such as 1e6. Anything else (a fraction, a string, a value out of range) is
// an InputError(where, field, the value as written, why) stating the range. No value is ever
// wrapped or truncated into range.
int64_t json_int64(const nlohmann::json& v, const std::string& where, const std::string& field,
                   int64_t min_value, int64_t max_value);
uint64_t json_uint64(const nlohmann::json& v, const std::string& where, const std::string& field,
                     uint64_t min_value, uint64_t max_value);

class ConfigReader {
 public:
  // `file` names the source (a path, or "<command line>"); `prefix` is the dotted path of obj.
  ConfigReader(const nlohmann::json& obj, std::string file, std::string prefix = "");

  bool has(const std::string& key) const { return obj_.contains(key); }
  double number(const std::string& key, double def);
  // Range-checked number; the bounds are inclusive or exclusive as flagged.
  double number_in(const std::string& key, double def, double lo, bool lo_incl, double hi,
                   bool hi_incl);
  // A number the kernels use in fp32: besides being finite, it must stay finite when rounded
  // to float (|x| <= 3.4e38) and, unless 0, must not round to zero or a subnormal
  // (|x| >= 1.18e-38), which would change its meaning silently.
  double fp32_number(const std::string& key, double def);
  // An integer of type T in [min_value, max_value] (see json_int64). T is stated at the call,
  // e.g. integer<int>("gpus_per_node", 0, 1, 1024), so the range always fits the field.
  template <class T = int64_t>
  T integer(const std::string& key, std::type_identity_t<T> def, std::type_identity_t<T> min_value,
            std::type_identity_t<T> max_value) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
    if constexpr (std::is_signed_v<T>)
      return static_cast<T>(signed_integer(key, def, min_value, max_value));
    else
      return static_cast<T>(unsigned_integer(key, def, min_value, max_value));
  }
  // A non-empty array of integers, each in [min_value, max_value]; `def` when absent.
  template <class T = int64_t>
  std::vector<T> integers(const std::string& key, std::vector<T> def,
                          std::type_identity_t<T> min_value, std::type_identity_t<T> max_value) {
    const nlohmann::json& a = array(key, false);
    if (a.empty()) return def;
    std::vector<T> out;
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string f = field(key) + "[" + std::to_string(i) + "]";
      if constexpr (std::is_signed_v<T>)
        out.push_back(static_cast<T>(json_int64(a[i], file_, f, min_value, max_value)));
      else
        out.push_back(static_cast<T>(json_uint64(a[i], file_, f, min_value, max_value)));
    }
    return out;
  }
  bool boolean(const std::string& key, bool def);
  // A string; `def` when absent or null.
  std::string string(const std::string& key, const std::string& def);
  std::string choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& allowed);
  // An enum value spelled as in its NameTable; `def` when absent. `allowed`, when given,
  // narrows the values a config may name (the others are internal).
  template <class E, size_t N>
  E choice(const std::string& key, E def, const NameTable<E, N>& table,
           std::initializer_list<E> allowed = {}) {
    const auto names = allowed_names(table, allowed);
    return *table.find(choice(key, table.name(def), names));
  }
  // The same for a field without a default: absent or null is an error listing the choices.
  template <class E, size_t N>
  E required_choice(const std::string& key, const NameTable<E, N>& table,
                    std::initializer_list<E> allowed = {}) {
    const auto names = allowed_names(table, allowed);
    if (!get(key)) fail_required_choice(key, names);
    return *table.find(choice(key, names.front(), names));
  }
  // A non-empty array (its elements unchecked). Absent: an error when required, else an empty
  // array.
  const nlohmann::json& array(const std::string& key, bool required);
  // A nested object. Absent or null: an error when required, else an empty object.
  const nlohmann::json& object(const std::string& key, bool required);
  // A two-element array of numbers in [0, 1) that stay below 1 in fp32, as Adam's betas.
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
  template <class E, size_t N>
  static std::vector<std::string> allowed_names(const NameTable<E, N>& table,
                                                std::initializer_list<E> allowed) {
    if (allowed.size() == 0) return table.names();
    std::vector<std::string> names;
    for (const E v : allowed) names.emplace_back(table.name(v));
    return names;
  }
  [[noreturn]] void fail_required_choice(const std::string& key,
                                         const std::vector<std::string>& names) const;
  const nlohmann::json* get(const std::string& key);
  int64_t signed_integer(const std::string& key, int64_t def, int64_t min_value, int64_t max_value);
  uint64_t unsigned_integer(const std::string& key, uint64_t def, uint64_t min_value,
                            uint64_t max_value);
  const nlohmann::json& obj_;
  std::string file_, prefix_;
  std::set<std::string> read_;
};

}  // namespace clbo
