// The 1-bit compressor's padding rule (docs/reference/algorithms.md §1), the one definition
// shared by the compression kernels, the CommPlans' byte counts and the simulator. It lives
// in core because the simulator links neither kernels nor collectives.
#pragma once
#include <cstddef>

namespace clbo {

// DeepSpeed's padding: n' = ceil(n / (p·lcm(p,8))) · p·lcm(p,8). Always a multiple of 8p,
// and 0 only for n = 0. Throws std::invalid_argument when p < 1.
size_t onebit_padded_size(size_t n, int p);

}  // namespace clbo
