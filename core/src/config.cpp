#include "clbo/core/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cfloat>
#include <cmath>

#include "clbo/core/error.hpp"

namespace clbo {

namespace {

using Wide = __int128;

// The integer `v` holds, widened so every JSON integer and every integral double below 2^64
// fits; false when it holds no integer. `huge` is set for integral doubles of 2^64 or more.
bool integer_of(const nlohmann::json& v, Wide& out, bool& huge) {
  huge = false;
  if (v.is_number_unsigned()) {
    out = static_cast<Wide>(v.get<uint64_t>());
    return true;
  }
  if (v.is_number_integer()) {
    out = static_cast<Wide>(v.get<int64_t>());
    return true;
  }
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::floor(d) != d) return false;
  if (std::fabs(d) >= 18446744073709551616.0) {
    huge = true;
    out = d < 0 ? -(Wide{1} << 64) : (Wide{1} << 64);
    return true;
  }
  out = static_cast<Wide>(d);
  return true;
}

Wide checked_integer(const nlohmann::json& v, const std::string& where, const std::string& field,
                     Wide lo, Wide hi, const std::string& range) {
  Wide i = 0;
  bool huge = false;
  if (!integer_of(v, i, huge))
    throw InputError(where, field, json_excerpt(v), "expected an integer in " + range);
  if (huge || i < lo || i > hi)
    throw InputError(where, field, json_excerpt(v), "must be in " + range);
  return i;
}

}  // namespace

int64_t json_int64(const nlohmann::json& v, const std::string& where, const std::string& field,
                   int64_t min_value, int64_t max_value) {
  return static_cast<int64_t>(checked_integer(v, where, field, min_value, max_value,
                                              fmt::format("[{}, {}]", min_value, max_value)));
}

uint64_t json_uint64(const nlohmann::json& v, const std::string& where, const std::string& field,
                     uint64_t min_value, uint64_t max_value) {
  return static_cast<uint64_t>(checked_integer(v, where, field, min_value, max_value,
                                               fmt::format("[{}, {}]", min_value, max_value)));
}

ConfigReader::ConfigReader(const nlohmann::json& obj, std::string file, std::string prefix)
    : obj_(obj), file_(std::move(file)), prefix_(std::move(prefix)) {
  if (!obj_.is_object())
    throw InputError(file_, prefix_.empty() ? "(root)" : prefix_, json_excerpt(obj_),
                     "expected a JSON object");
}

void ConfigReader::fail(const std::string& key, const std::string& why) const {
  const auto it = obj_.find(key);
  throw InputError(file_, field(key), it == obj_.end() ? "missing" : json_excerpt(*it), why);
}

const nlohmann::json* ConfigReader::get(const std::string& key) {
  read_.insert(key);
  const auto it = obj_.find(key);
  return it == obj_.end() || it->is_null() ? nullptr : &*it;
}

double ConfigReader::number(const std::string& key, double def) {
  const auto* v = get(key);
  if (!v) return def;
  if (!v->is_number()) fail(key, "expected a number");
  const double d = v->get<double>();
  if (!std::isfinite(d)) fail(key, "must be finite");
  return d;
}

double ConfigReader::number_in(const std::string& key, double def, double lo, bool lo_incl,
                               double hi, bool hi_incl) {
  const double d = number(key, def);
  const bool ok_lo = lo_incl ? d >= lo : d > lo;
  const bool ok_hi = hi_incl ? d <= hi : d < hi;
  if (!ok_lo || !ok_hi)
    fail(key,
         fmt::format("must be in {}{}, {}{}", lo_incl ? "[" : "(", lo, hi, hi_incl ? "]" : ")"));
  return d;
}

double ConfigReader::fp32_number(const std::string& key, double def) {
  const double d = number(key, def);
  if (std::fabs(d) > FLT_MAX)
    fail(key, fmt::format("overflows fp32, in which it is used (the largest float is {:g})",
                          static_cast<double>(FLT_MAX)));
  if (d != 0 && std::fabs(d) < FLT_MIN)
    fail(key, fmt::format("is below the smallest normal fp32 value {:g}, so the fp32 arithmetic "
                          "that uses it would flush it towards zero",
                          static_cast<double>(FLT_MIN)));
  return d;
}

int64_t ConfigReader::signed_integer(const std::string& key, int64_t def, int64_t min_value,
                                     int64_t max_value) {
  const auto* v = get(key);
  return v ? json_int64(*v, file_, field(key), min_value, max_value) : def;
}

uint64_t ConfigReader::unsigned_integer(const std::string& key, uint64_t def, uint64_t min_value,
                                        uint64_t max_value) {
  const auto* v = get(key);
  return v ? json_uint64(*v, file_, field(key), min_value, max_value) : def;
}

bool ConfigReader::boolean(const std::string& key, bool def) {
  const auto* v = get(key);
  if (!v) return def;
  if (!v->is_boolean()) fail(key, "expected true or false");
  return v->get<bool>();
}

std::string ConfigReader::string(const std::string& key, const std::string& def) {
  const auto* v = get(key);
  if (!v) return def;
  if (!v->is_string()) fail(key, "expected a string");
  return v->get<std::string>();
}

std::string ConfigReader::choice(const std::string& key, const std::string& def,
                                 const std::vector<std::string>& allowed) {
  if (!get(key)) return def;  // the default is the caller's, and may be "" for "required"
  const std::string s = string(key, def);
  for (const auto& a : allowed)
    if (a == s) return s;
  fail(key, fmt::format("must be one of {}{}", fmt::join(allowed, ", "), did_you_mean(s, allowed)));
}

void ConfigReader::fail_required_choice(const std::string& key,
                                        const std::vector<std::string>& names) const {
  fail(key, fmt::format("required: one of {}", fmt::join(names, ", ")));
}

const nlohmann::json& ConfigReader::array(const std::string& key, bool required) {
  static const nlohmann::json empty = nlohmann::json::array();
  const auto* v = get(key);
  if (!v) {
    if (required) fail(key, "required: a non-empty array");
    return empty;
  }
  if (!v->is_array() || v->empty()) fail(key, "expected a non-empty array");
  return *v;
}

const nlohmann::json& ConfigReader::object(const std::string& key, bool required) {
  static const nlohmann::json empty = nlohmann::json::object();
  const auto* v = get(key);
  if (!v) {
    if (required) fail(key, "required: an object");
    return empty;
  }
  if (!v->is_object()) fail(key, "expected an object");
  return *v;
}

std::pair<double, double> ConfigReader::betas(const std::string& key,
                                              std::pair<double, double> def) {
  const auto* v = get(key);
  if (!v) return def;
  if (!v->is_array() || v->size() != 2 || !(*v)[0].is_number() || !(*v)[1].is_number())
    fail(key, "expected [beta1, beta2]");
  const double b1 = (*v)[0].get<double>(), b2 = (*v)[1].get<double>();
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) fail(key, "each beta must be in [0, 1)");
  // The optimizers round β to fp32 once; a β that rounds to 1 would freeze its moment.
  for (const double b : {b1, b2})
    if (static_cast<float>(b) >= 1.0f || (b != 0 && static_cast<float>(b) < FLT_MIN))
      fail(key, fmt::format("beta {} rounds to {:g} in fp32, in which it is used; the largest "
                            "fp32 value below 1 is {:.9g}",
                            b, static_cast<double>(static_cast<float>(b)),
                            static_cast<double>(std::nextafter(1.0f, 0.0f))));
  return {b1, b2};
}

void ConfigReader::finish() const {
  std::vector<std::string> known(read_.begin(), read_.end());
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (!read_.count(it.key())) fail(it.key(), "unknown parameter" + did_you_mean(it.key(), known));
}

}  // namespace clbo
