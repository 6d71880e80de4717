#include "clbo/optim/checkpoint.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"
#include "state_io.hpp"

namespace clbo {

namespace {

constexpr char kMagic[9] = "CLBOCKPT";
constexpr uint32_t kVersion = 1;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "(file)", path, "cannot open checkpoint");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
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
  write_file_atomic(path, w.data());
}

void load_checkpoint(const std::string& path, const std::vector<Optimizer*>& ranks) {
  const std::string data = read_all(path);
  state_io::Reader r(data, path);
  const std::string magic(r.raw("magic", 8));
  if (magic != std::string_view(kMagic, 8)) r.fail("magic", magic, "not a clbo checkpoint");
  const uint32_t version = r.u32("version");
  if (version != kVersion)
    r.fail("version", std::to_string(version),
           fmt::format("unsupported checkpoint version (this build reads {})", kVersion));
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
