// What one rank receives from its peers before a collective: p CallHeaders (plain bytes),
// and the encoded Settings list exchanged when only the configuration hash differs. The
// checks must turn any bytes into a clbo::Error or agreement, never read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "clbo/collectives/call_header.hpp"
#include "clbo/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t p = 1 + data[0] % 8;
  const size_t header_bytes = p * sizeof(clbo::CallHeader);
  if (size - 1 < header_bytes) return 0;
  std::vector<clbo::CallHeader> all(p);
  std::memcpy(all.data(), data + 1, header_bytes);
  try {
    clbo::check_call_headers(all.data(), static_cast<int>(p), "fuzz");
  } catch (const clbo::Error&) {
  }
  const int differs = clbo::first_config_mismatch(all.data(), static_cast<int>(p));
  // The rest: one byte choosing where to split, then two encoded settings lists.
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1 + header_bytes,
                              size - 1 - header_bytes);
  if (rest.empty()) return 0;
  const std::string_view lists = rest.substr(1);
  const size_t cut = static_cast<unsigned char>(rest[0]) * lists.size() / 256;
  try {
    const clbo::Settings a = clbo::Settings::decode(lists.substr(0, cut), "rank 0");
    const clbo::Settings b = clbo::Settings::decode(lists.substr(cut), "rank 1");
    if (clbo::Settings::decode(a.encode(), "again").encode() != a.encode()) __builtin_trap();
    (void)a.hash();
    (void)clbo::describe_settings_mismatch(a, b, differs < 0 ? 1 : differs, all[0].op_name(),
                                           "fuzz");
  } catch (const clbo::Error&) {
  }
  return 0;
}
