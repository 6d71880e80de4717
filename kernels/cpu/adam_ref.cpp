// Scalar references for adam.hpp: one element at a time, in the operation order the header
// fixes. The optimized kernels must match these bit for bit.
#include <cmath>

#include "clbo/kernels/adam.hpp"

namespace clbo::kernels::ref {
namespace {

// Moment updates and the Adam direction for element i; returns u.
float direction(float theta, float& m, float& v, const float* g, size_t i, const AdamArgs& a) {
  if (a.update_m) m = a.beta1 * m + (1.0f - a.beta1) * g[i];
  if (a.update_v) v = a.beta2 * v + (1.0f - a.beta2) * g[i] * g[i];
  return (m / a.bc1) / (std::sqrt(v / a.bc2) + a.eps) + a.weight_decay * theta;
}

}  // namespace

void adam_update(float* theta, float* m, float* v, const float* g, size_t n, const AdamArgs& a) {
  for (size_t i = 0; i < n; ++i) {
    float mi = m[i], vi = v[i];
    const float u = direction(theta[i], mi, vi, g, i, a);
    if (a.update_m) m[i] = mi;
    if (a.update_v) v[i] = vi;
    theta[i] = theta[i] - a.lr * u;
  }
}

void lamb_direction(const float* theta, float* m, float* v, const float* g, float* u,
                    const ParamLayout& layout, const AdamArgs& a, double* theta_sumsq,
                    double* u_sumsq) {
  for (size_t t = 0; t < layout.num_tensors(); ++t) {
    double ts = 0.0, us = 0.0;
    const size_t begin = layout[t].offset, end = begin + layout[t].size;
    for (size_t i = begin; i < end; ++i) {
      float mi = m[i], vi = v[i];
      u[i] = direction(theta[i], mi, vi, g, i, a);
      if (a.update_m) m[i] = mi;
      if (a.update_v) v[i] = vi;
      ts += static_cast<double>(theta[i]) * static_cast<double>(theta[i]);
      us += static_cast<double>(u[i]) * static_cast<double>(u[i]);
    }
    theta_sumsq[t] = ts;
    u_sumsq[t] = us;
  }
}

}  // namespace clbo::kernels::ref
