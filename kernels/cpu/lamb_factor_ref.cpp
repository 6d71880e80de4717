// Scalar reference for lamb_factor.hpp: one element at a time, in the operation order the
// header fixes, one running double per per-tensor quantity. The optimizer runs this code, so
// its sums are in element order on purpose (a blocked sum would change the factor's last
// bits and with them every 1-bit LAMB result).
#include <algorithm>
#include <cmath>
#include <limits>

#include "clbo/kernels/lamb_factor.hpp"

namespace clbo::kernels {

void onebit_lamb_terms(const float* theta, const float* m, const float* m_last, const float* v,
                       float* v_fresh, float* u, const ParamLayout& layout, const OnebitLambArgs& a,
                       double* terms) {
  const float omb1 = 1.0f - a.beta1, omb2 = 1.0f - a.beta2;
  for (size_t t = 0; t < layout.num_tensors(); ++t) {
    // std::max(acc, NaN) keeps acc, as the GPU's fmax does, so NaN ratios are skipped.
    double max_ratio = -std::numeric_limits<double>::infinity();
    double pre = 0.0, full = 0.0;
    const size_t begin = layout[t].offset, end = begin + layout[t].size;
    for (size_t i = begin; i < end; ++i) {
      const float ghat = (m[i] - a.beta1 * m_last[i]) / omb1;
      v_fresh[i] = a.beta2 * v_fresh[i] + omb2 * ghat * ghat;
      const float denom = std::sqrt(v[i]) + a.eps;
      const float u_pre = m[i] / denom;
      // Adding 0·θ would turn a −0 into +0 (and an infinite θ into NaN), so λ = 0 skips it.
      u[i] = a.weight_decay > 0.0f ? u_pre + a.weight_decay * theta[i] : u_pre;
      const float ratio = denom / (std::sqrt(v_fresh[i]) + a.eps);
      max_ratio = std::max(max_ratio, static_cast<double>(ratio));
      pre += static_cast<double>(u_pre) * static_cast<double>(u_pre);
      full += static_cast<double>(u[i]) * static_cast<double>(u[i]);
    }
    terms[kOnebitLambTerms * t + 0] = max_ratio;
    terms[kOnebitLambTerms * t + 1] = pre;
    terms[kOnebitLambTerms * t + 2] = full;
  }
}

}  // namespace clbo::kernels
