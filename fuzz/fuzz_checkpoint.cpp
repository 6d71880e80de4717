// The checkpoint reader: the file framing, the CRC-32, and every optimizer's state decoder.
// The bytes are offered to a 2-rank world of each optimizer type on a 2-tensor layout. A CRC
// would stop almost every mutation at the checksum, so when the first byte is even the
// target rewrites the trailing CRC to match before loading: both the check and the decoders
// behind it are exercised. InputError is the expected rejection; a state the loader accepts
// must then step without a crash or sanitizer report.
//
// With CLBO_FUZZ_WRITE_SEEDS=DIR set, the target writes one valid checkpoint per optimizer
// type (after a few steps) into DIR and exits: the seeds in fuzz/corpus/fuzz_checkpoint.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "clbo/collectives/local.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/core/output_file.hpp"
#include "clbo/optim/checkpoint.hpp"
#include "clbo/optim/optimizer.hpp"

namespace {

constexpr int kRanks = 2;

struct World {
  std::string type;
  std::vector<std::unique_ptr<clbo::Optimizer>> ranks;
  std::vector<clbo::Optimizer*> ptrs() {
    std::vector<clbo::Optimizer*> p;
    for (auto& o : ranks) p.push_back(o.get());
    return p;
  }
};

std::vector<World>& worlds() {
  static std::vector<World> w = [] {
    const clbo::ParamLayout layout = clbo::ParamLayout::from_sizes({24, 8});
    std::vector<World> out;
    for (const std::string& type : clbo::optimizer_types()) {
      nlohmann::json block = {{"type", type}, {"params", {{"lr", 0.01}}}};
      if (type == "OneBitAdam" || type == "OneBitLamb" || type == "OneBitAdamNoErrorFeedback" ||
          type == "NaiveOneBitLamb")
        block["params"]["freeze_step"] = 2;
      if (type == "ZeroOneAdam") block["params"]["var_freeze_step"] = 2;
      if (type == "Slamb") block["params"]["local_steps"] = 2;
      World world{type, {}};
      for (int r = 0; r < kRanks; ++r)
        world.ranks.push_back(clbo::make_optimizer(block, "fuzz", layout, kRanks, r));
      out.push_back(std::move(world));
    }
    return out;
  }();
  return w;
}

void step_all(World& w, int steps) {
  const size_t n = 32;
  clbo::run_local(kRanks, [&](clbo::Communicator& comm) {
    std::vector<float> params(n, 0.5f), grad(n);
    for (int s = 0; s < steps; ++s) {
      for (size_t i = 0; i < n; ++i) grad[i] = 0.01f * static_cast<float>((i * 7 + s) % 13) - 0.06f;
      w.ranks[static_cast<size_t>(comm.rank())]->step(comm, params.data(), grad.data());
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("CLBO_FUZZ_WRITE_SEEDS")) {
    for (World& w : worlds()) {
      step_all(w, 4);
      std::vector<const clbo::Optimizer*> ranks(w.ranks.size());
      for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = w.ranks[i].get();
      clbo::save_checkpoint(std::string(dir) + "/" + w.type + ".ckpt", ranks);
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size >= 20 && data[0] % 2 == 0) {
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()),
                            static_cast<uInt>(size - 4));
    for (int i = 0; i < 4; ++i) bytes[size - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  }
  for (World& w : worlds()) {
    try {
      clbo::load_checkpoint_bytes(bytes, "fuzz.ckpt", w.ptrs());
    } catch (const clbo::InputError&) {
      continue;
    }
    // Whatever the loader accepted must be a state the optimizer can step from: buffers of
    // the sizes the step indexes. An Error (say a non-finite gradient from a loaded NaN
    // moment) is a clean rejection; a crash or sanitizer report is a finding.
    try {
      step_all(w, 1);
    } catch (const clbo::Error&) {
    }
  }
  return 0;
}
