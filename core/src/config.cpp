#include "clbo/core/config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "clbo/core/error.hpp"

namespace clbo {

nlohmann::json load_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "(file)", path, "cannot open file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, "(file)", path, fmt::format("invalid JSON: {}", e.what()));
  }
}

ConfigReader::ConfigReader(const nlohmann::json& obj, std::string file, std::string prefix)
    : obj_(obj), file_(std::move(file)), prefix_(std::move(prefix)) {
  if (!obj_.is_object())
    throw InputError(file_, prefix_.empty() ? "(root)" : prefix_, obj_.dump(),
                     "expected a JSON object");
}

void ConfigReader::fail(const std::string& key, const std::string& why) const {
  const auto it = obj_.find(key);
  throw InputError(file_, field(key), it == obj_.end() ? "missing" : it->dump(), why);
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

int64_t ConfigReader::integer(const std::string& key, int64_t def, int64_t min_value) {
  const auto* v = get(key);
  if (!v) return def;
  int64_t i = 0;
  if (v->is_number_integer()) {
    i = v->get<int64_t>();
  } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
             std::abs(v->get<double>()) < 9e15) {
    i = static_cast<int64_t>(v->get<double>());
  } else {
    fail(key, "expected an integer");
  }
  if (i < min_value) fail(key, fmt::format("must be >= {}", min_value));
  return i;
}

bool ConfigReader::boolean(const std::string& key, bool def) {
  const auto* v = get(key);
  if (!v) return def;
  if (!v->is_boolean()) fail(key, "expected true or false");
  return v->get<bool>();
}

std::string ConfigReader::choice(const std::string& key, const std::string& def,
                                 const std::vector<std::string>& allowed) {
  const auto* v = get(key);
  if (!v) return def;
  if (!v->is_string()) fail(key, "expected a string");
  const auto s = v->get<std::string>();
  for (const auto& a : allowed)
    if (a == s) return s;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail(key, fmt::format("must be one of {}{}", list, did_you_mean(s, allowed)));
}

std::pair<double, double> ConfigReader::betas(const std::string& key,
                                              std::pair<double, double> def) {
  const auto* v = get(key);
  if (!v) return def;
  if (!v->is_array() || v->size() != 2 || !(*v)[0].is_number() || !(*v)[1].is_number())
    fail(key, "expected [beta1, beta2]");
  const double b1 = (*v)[0].get<double>(), b2 = (*v)[1].get<double>();
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) fail(key, "each beta must be in [0, 1)");
  return {b1, b2};
}

void ConfigReader::finish() const {
  std::vector<std::string> known(read_.begin(), read_.end());
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (!read_.count(it.key())) fail(it.key(), "unknown parameter" + did_you_mean(it.key(), known));
}

}  // namespace clbo
