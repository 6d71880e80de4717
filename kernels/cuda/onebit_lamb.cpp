// Host side of 1-bit LAMB's fused compression step: the scalar CPU reference the GPU kernel
// is tested against, and the per-tensor factor arithmetic of algorithms.md §4.
#include <algorithm>
#include <cmath>

#include "clbo/cuda/optim.hpp"

namespace clbo::cuda {

float onebit_lamb_factor(const double* terms, float weight_decay, float last_factor,
                         float factor_min, float factor_max, float factor_threshold) {
  double factor = terms[0];
  if (weight_decay > 0.0f) {
    const double rr =
        terms[2] == 0.0 ? 1.0 : std::min(1.0, std::sqrt(terms[1]) / std::sqrt(terms[2]));
    factor = factor * rr + (1.0 - rr);
  }
  factor = std::min(std::max(factor, double{factor_min}), double{factor_max});
  const double last = last_factor;
  factor =
      std::min(std::max(factor, last * (1.0 - factor_threshold)), last * (1.0 + factor_threshold));
  return static_cast<float>(factor);
}

namespace ref {

void onebit_lamb_terms(const float* theta, const float* m, const float* m_last, const float* v,
                       float* v_fresh, float* u, const ParamLayout& layout, const OnebitLambArgs& a,
                       double* terms) {
  const float omb1 = 1.0f - a.beta1, omb2 = 1.0f - a.beta2;
  for (size_t t = 0; t < layout.num_tensors(); ++t) {
    double max_ratio = 0.0, pre = 0.0, full = 0.0;
    const size_t begin = layout[t].offset, end = begin + layout[t].size;
    for (size_t i = begin; i < end; ++i) {
      const float g = (m[i] - a.beta1 * m_last[i]) / omb1;
      v_fresh[i] = a.beta2 * v_fresh[i] + omb2 * g * g;
      const float denom = std::sqrt(v[i]) + a.eps;
      const float u_pre = m[i] / denom;
      u[i] = u_pre + a.weight_decay * theta[i];
      const float ratio = denom / (std::sqrt(v_fresh[i]) + a.eps);
      max_ratio = std::max(max_ratio, static_cast<double>(ratio));
      pre += static_cast<double>(u_pre) * static_cast<double>(u_pre);
      full += static_cast<double>(u[i]) * static_cast<double>(u[i]);
    }
    terms[3 * t + 0] = max_ratio;
    terms[3 * t + 1] = pre;
    terms[3 * t + 2] = full;
  }
}

}  // namespace ref
}  // namespace clbo::cuda
