// Reference top-k: a full stable sort of indices by descending |x| (so among equal |x| the
// lower index comes first), then the first k indices in ascending order.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "clbo/kernels/topk.hpp"

namespace clbo::kernels::ref {

void topk_select(const float* x, size_t n, size_t k, uint32_t* idx, float* val) {
  if (k > n)
    throw std::invalid_argument("topk_select: k = " + std::to_string(k) +
                                " exceeds n = " + std::to_string(n));
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [x](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
  for (size_t j = 0; j < k; ++j) {
    idx[j] = order[j];
    val[j] = x[order[j]];
  }
}

}  // namespace clbo::kernels::ref
