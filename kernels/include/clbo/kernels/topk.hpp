// Top-k selection for the top-k allgather compressor (docs/reference/algorithms.md §7).
#pragma once
#include <cstddef>
#include <cstdint>

namespace clbo::kernels {

// Selects the k elements of largest |x_i| (k <= n). Ties in |x| go to the lower index, so
// the choice is unique. Writes idx ascending and val[j] = x[idx[j]] (the signed value;
// −0.0 is kept as −0.0). NaN inputs are the caller's to reject. Throws std::invalid_argument
// when k > n (or, optimized version, when n exceeds 32-bit indices).
void topk_select(const float* x, size_t n, size_t k, uint32_t* idx, float* val);

namespace ref {
void topk_select(const float* x, size_t n, size_t k, uint32_t* idx, float* val);
}

}  // namespace clbo::kernels
