#include "clbo/collectives/call_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "clbo/core/error.hpp"

namespace clbo {

CallHeader CallHeader::make(const std::string& op, uint64_t count, uint64_t elem_bytes,
                            uint64_t config) {
  CallHeader h;
  std::memcpy(h.op, op.data(), std::min(op.size(), sizeof(h.op) - 1));
  h.count = count;
  h.elem_bytes = elem_bytes;
  h.config = config;
  return h;
}

std::string CallHeader::op_name() const {
  return std::string(op, strnlen(op, sizeof(op)));
}

void check_call_headers(const CallHeader* all, int p, const char* backend) {
  const CallHeader& ref = all[0];
  for (int j = 1; j < p; ++j) {
    const CallHeader& h = all[j];
    std::string field, a, b;
    if (h.op_name() != ref.op_name())
      field = "operation", a = fmt::format("'{}'", ref.op_name()),
      b = fmt::format("'{}'", h.op_name());
    else if (h.count != ref.count)
      field = "count", a = std::to_string(ref.count), b = std::to_string(h.count);
    else if (h.elem_bytes != ref.elem_bytes)
      field = "element bytes", a = std::to_string(ref.elem_bytes), b = std::to_string(h.elem_bytes);
    else if (h.config != ref.config)
      field = "configuration", a = fmt::format("{:#x}", ref.config),
      b = fmt::format("{:#x}", h.config);
    else
      continue;
    throw Error(fmt::format("{}: ranks disagree on {}: rank 0 has {} = {}, rank {} has {} = {}",
                            backend, ref.op_name(), field, a, j, field, b));
  }
}

int first_config_mismatch(const CallHeader* all, int p) {
  const CallHeader& ref = all[0];
  for (int j = 1; j < p; ++j) {
    const CallHeader& h = all[j];
    if (h.op_name() != ref.op_name() || h.count != ref.count || h.elem_bytes != ref.elem_bytes)
      return -1;  // check_call_headers names these itself
    if (h.config != ref.config) return j;
  }
  return -1;
}

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

uint64_t Settings::hash() const {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : encode()) h = (h ^ ch) * 1099511628211ull;
  return h;
}

std::string Settings::encode() const {
  std::string out;
  put_u32(out, static_cast<uint32_t>(items.size()));
  for (const auto& [name, value] : items) {
    put_u32(out, static_cast<uint32_t>(name.size()));
    out += name;
    put_u32(out, static_cast<uint32_t>(value.size()));
    out += value;
  }
  return out;
}

Settings Settings::decode(std::string_view bytes, const std::string& from) {
  size_t pos = 0;
  const auto fail = [&](const char* why) {
    return Error(
        fmt::format("the settings sent by {} are malformed at byte {}: {}", from, pos, why));
  };
  const auto u32 = [&]() {
    if (bytes.size() - pos < 4) throw fail("truncated");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[pos + i])) << (8 * i);
    pos += 4;
    return v;
  };
  const auto text = [&]() {
    const uint32_t len = u32();
    if (bytes.size() - pos < len) throw fail("a length exceeds the message");
    std::string s(bytes.substr(pos, len));
    pos += len;
    return s;
  };
  Settings out;
  const uint32_t n = u32();
  if (n > bytes.size() / 8) throw fail("more items than the message can hold");
  for (uint32_t i = 0; i < n; ++i) {
    std::string name = text();
    std::string value = text();
    out.add(std::move(name), std::move(value));
  }
  if (pos != bytes.size()) throw fail("bytes after the last item");
  return out;
}

std::string describe_settings_mismatch(const Settings& ref, const Settings& other, int rank,
                                       const std::string& op, const char* backend) {
  const auto find = [](const Settings& s, const std::string& name) -> const std::string* {
    for (const auto& [n, v] : s.items)
      if (n == name) return &v;
    return nullptr;
  };
  const auto shown = [](const std::string* v) {
    return v ? bounded_text(*v) : std::string("(not set)");
  };
  for (const auto& [name, value] : ref.items) {
    const std::string* theirs = find(other, name);
    if (!theirs || *theirs != value)
      return fmt::format(
          "{}: ranks disagree on the settings of {}: rank 0 has {} = {}, rank {} "
          "has {} = {}; every rank must be started with the same settings",
          backend, op, bounded_text(name), bounded_text(value), rank, bounded_text(name),
          shown(theirs));
  }
  for (const auto& [name, value] : other.items)
    if (!find(ref, name))
      return fmt::format(
          "{}: ranks disagree on the settings of {}: rank {} has {} = {}, rank 0 "
          "has no such setting",
          backend, op, rank, bounded_text(name), bounded_text(value));
  return fmt::format(
      "{}: ranks disagree on the settings of {} (rank 0 and rank {}), though "
      "every named setting matches",
      backend, op, rank);
}

}  // namespace clbo
