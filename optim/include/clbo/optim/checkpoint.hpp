// Checkpoints of a whole data-parallel optimizer: every rank's full state (moments, 1-bit
// error buffers, counters, frozen coefficients, freshness, lr) in one versioned
// little-endian file, so resuming is bit-identical to never having stopped
// (docs/reference/algorithms.md §8). DeepSpeed instead resets the error buffers on load.
//
// File layout (docs/optimizers.md, "Checkpoints"):
//   "CLBOCKPT" | u32 version | u32 world size p | p × (u64 byte length | rank state)
// where each rank state is what Optimizer::save_state writes:
//   "CLBOSTAT" | u32 version | type | n | p | rank | tensor sizes | steps | skipped | lr |
//   the type's buffers and counters.
#pragma once
#include <string>
#include <vector>

#include "clbo/optim/optimizer.hpp"

namespace clbo {

// Writes all ranks (ranks[r] must be rank r of a world of ranks.size()) atomically: the file
// is complete or untouched.
void save_checkpoint(const std::string& path, const std::vector<const Optimizer*>& ranks);

// Loads into optimizers built from the same config, layout and world size. Validates the
// magic, version, world size and each rank's type, n, layout and rank; a mismatch, a
// truncated file or trailing bytes throw InputError naming the file, and then no optimizer
// is changed.
void load_checkpoint(const std::string& path, const std::vector<Optimizer*>& ranks);

}  // namespace clbo
