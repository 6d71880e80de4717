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

}  // namespace clbo
