// 1-bit LAMB's per-tensor factor from the terms (lamb_factor.hpp). Scalar per tensor, so the
// CPU optimizer and the GPU path (which copies the terms to the host) share this one code.
#include <algorithm>
#include <cmath>

#include "clbo/kernels/lamb_factor.hpp"

namespace clbo::kernels {

double onebit_lamb_factor(const double* terms, size_t numel, double last_factor,
                          const OnebitLambFactorArgs& a) {
  double factor = numel > 0 ? terms[0] : 1.0;
  if (a.weight_decay > 0.0f) {
    const double pre = terms[1], full = terms[2];
    const double rr = full > 0.0 ? std::min(1.0, std::sqrt(pre) / std::sqrt(full)) : 1.0;
    factor = factor * rr + (1.0 - rr);
  }
  factor = std::min(factor, a.factor_max);
  factor = std::max(factor, a.factor_min);
  factor = std::min(factor, last_factor * (1.0 + a.factor_threshold));
  factor = std::max(factor, last_factor * (1.0 - a.factor_threshold));
  return factor;
}

void onebit_lamb_factors(const double* terms, const ParamLayout& layout,
                         const OnebitLambFactorArgs& a, double* last_factor) {
  for (size_t t = 0; t < layout.num_tensors(); ++t)
    last_factor[t] =
        onebit_lamb_factor(terms + kOnebitLambTerms * t, layout[t].size, last_factor[t], a);
}

}  // namespace clbo::kernels
