#include "clbo/optim/checkpoint.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <sstream>

#include "clbo/core/error.hpp"
#include "clbo/core/input_file.hpp"
#include "clbo/core/output_file.hpp"
#include "state_io.hpp"

namespace clbo {

namespace {

constexpr char kMagic[9] = "CLBOCKPT";
// Version 2 ends with the CRC-32 of every byte before it; version 1 (no checksum) still loads.
constexpr uint32_t kVersion = 2;
constexpr size_t kCrcBytes = 4;

uint32_t crc32_of(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t off = 0; off < bytes.size();) {
    const size_t chunk = std::min<size_t>(bytes.size() - off, size_t{1} << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + off), static_cast<uInt>(chunk));
    off += chunk;
  }
  return static_cast<uint32_t>(crc);
}

std::string state_of(const Optimizer& o) {
  std::ostringstream out(std::ios::binary);
  o.save_state(out);
  return std::move(out).str();
}

}  // namespace

void save_checkpoint(const std::string& path, const std::vector<const Optimizer*>& ranks) {
  if (ranks.empty()) throw Error("save_checkpoint: no ranks given for " + path);
  state_io::Writer w;
  w.raw(std::string_view(kMagic, 8));
  w.u32(kVersion);
  w.u32(static_cast<uint32_t>(ranks.size()));
  for (const Optimizer* o : ranks) {
    const std::string s = state_of(*o);
    w.u64(s.size());
    w.raw(s);
  }
  w.u32(crc32_of(w.data()));
  write_file_atomic(path, w.data());
}

void load_checkpoint(const std::string& path, const std::vector<Optimizer*>& ranks) {
  const std::string data = read_input_file(path, kMaxCheckpointBytes);
  load_checkpoint_bytes(data, path, ranks);
}

void load_checkpoint_bytes(std::string_view data, const std::string& path,
                           const std::vector<Optimizer*>& ranks) {
  state_io::Reader head(data, path);
  const std::string magic(head.raw("magic", 8));
  if (magic != std::string_view(kMagic, 8)) head.fail("magic", magic, "not a clbo checkpoint");
  const uint32_t version = head.u32("version");
  if (version != 1 && version != kVersion)
    head.fail("version", std::to_string(version),
              fmt::format("unsupported checkpoint version (this build reads 1 and {})", kVersion));
  std::string_view body = data;
  if (version >= 2) {
    // Verified before anything is interpreted: a flipped byte anywhere must not load.
    if (data.size() < 16 + kCrcBytes)
      head.fail("crc32", "missing", "the checkpoint is truncated: it ends before its checksum");
    body = data.substr(0, data.size() - kCrcBytes);
    state_io::Reader tail(data.substr(body.size()), path);
    const uint32_t stored = tail.u32("crc32");
    const uint32_t computed = crc32_of(body);
    if (stored != computed)
      head.fail("crc32", fmt::format("{:#010x}", stored),
                fmt::format("the checkpoint is corrupt: its bytes give CRC-32 {:#010x}; it was "
                            "damaged after it was written (or truncated) and is not loaded",
                            computed));
  }
  state_io::Reader r(body, path);
  r.raw("magic", 8);
  r.u32("version");
  r.expect_equal("world_size", r.u32("world_size"), ranks.size());
  std::vector<std::string> states(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string field = fmt::format("rank{}.length", i);
    const uint64_t len = r.u64(field);
    if (len > r.remaining())
      r.fail(field, std::to_string(len),
             fmt::format("the checkpoint is truncated: {} bytes left", r.remaining()));
    states[i] = std::string(r.raw(field, len));
  }
  r.expect_end();

  // Load rank by rank; if one fails, put the earlier ranks back so no optimizer is left
  // half-loaded (each load_state already leaves its own optimizer untouched on error).
  std::vector<std::string> backups;
  size_t loaded = 0;
  try {
    for (size_t i = 0; i < ranks.size(); ++i) {
      backups.push_back(state_of(*ranks[i]));
      std::istringstream in(states[i], std::ios::binary);
      ranks[i]->load_state(in, path);
      ++loaded;
      if (in.peek() != std::char_traits<char>::eof())
        r.fail(fmt::format("rank{}", i), "(trailing bytes)", "unexpected data after the state");
    }
  } catch (...) {
    for (size_t j = 0; j < loaded; ++j) {
      std::istringstream in(backups[j], std::ios::binary);
      ranks[j]->load_state(in, path);
    }
    throw;
  }
}

}  // namespace clbo
