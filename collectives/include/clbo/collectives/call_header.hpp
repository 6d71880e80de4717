// The small header every rank of a hardware backend (MPI, NCCL) exchanges before a
// collective's payload, so mismatched sizes or configs fail every rank at once with one
// clear message instead of hanging or corrupting memory. Plain bytes: it is sent as is.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clbo {

struct CallHeader {
  char op[32] = {};    // e.g. "alltoall", "compressed_allreduce"
  uint64_t count = 0;  // elements (or bytes per rank for raw exchanges)
  uint64_t elem_bytes = 0;
  uint64_t config = 0;  // a hash of any further configuration (0 when none; see Settings)
  static CallHeader make(const std::string& op, uint64_t count, uint64_t elem_bytes,
                         uint64_t config = 0);
  std::string op_name() const;
};

// Compares every rank's header with rank 0's, in rank order, and throws clbo::Error
// "<backend>: ranks disagree on <op>: rank 0 has <field> = a, rank j has <field> = b" at the
// first difference. Every rank holds the same p headers, so every rank throws the same text.
void check_call_headers(const CallHeader* all, int p, const char* backend);

// The first rank whose header differs from rank 0's only in `config`, or -1. A backend that
// has the ranks' Settings then names the setting instead of two hashes.
int first_config_mismatch(const CallHeader* all, int p);

// The settings every rank of a run must share, by the name the user knows them by (an
// option, a config field), with their values as text. Their hash goes into
// CallHeader::config; when the hashes differ, the backend exchanges the encoded lists and
// the error names the setting that differs.
struct Settings {
  std::vector<std::pair<std::string, std::string>> items;

  void add(std::string name, std::string value) {
    items.emplace_back(std::move(name), std::move(value));
  }
  uint64_t hash() const;  // FNV-1a of the encoding
  // u32 count, then per item u32 length + name and u32 length + value (little-endian).
  std::string encode() const;
  // Throws clbo::Error naming `from` when the bytes are not an encoding (a peer's garbage).
  static Settings decode(std::string_view bytes, const std::string& from);
};

// "<backend>: ranks disagree on the settings of <op>: rank 0 has <name> = a, rank j has
// <name> = b" (or names the setting only one of them has).
std::string describe_settings_mismatch(const Settings& ref, const Settings& other, int rank,
                                       const std::string& op, const char* backend);

}  // namespace clbo
