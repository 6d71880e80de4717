// Optimized adam.hpp kernels: the reference's per-element fp32 operations, branch-free in
// the inner loop (the moment flags select one of four specialized loops), so they vectorize.
#include <algorithm>
#include <cmath>

#include "clbo/kernels/adam.hpp"
#include "simd.hpp"

namespace clbo::kernels {
namespace {

constexpr int kAcc = 8;  // independent double accumulators per sum

struct Coeffs {
  float lr, b1, omb1, b2, omb2, eps, wd, bc1, bc2;
  explicit Coeffs(const AdamArgs& a)
      : lr(a.lr),
        b1(a.beta1),
        omb1(1.0f - a.beta1),
        b2(a.beta2),
        omb2(1.0f - a.beta2),
        eps(a.eps),
        wd(a.weight_decay),
        bc1(a.bc1),
        bc2(a.bc2) {}
};

template <bool kM, bool kV>
CLBO_MULTIVERSION void adam_loop(float* __restrict theta, float* __restrict m, float* __restrict v,
                                 const float* __restrict g, size_t n, Coeffs c) {
  for (size_t i = 0; i < n; ++i) {
    float mi = m[i], vi = v[i];
    if constexpr (kM) mi = c.b1 * mi + c.omb1 * g[i];
    if constexpr (kV) vi = c.b2 * vi + c.omb2 * g[i] * g[i];
    const float u = (mi / c.bc1) / (std::sqrt(vi / c.bc2) + c.eps) + c.wd * theta[i];
    if constexpr (kM) m[i] = mi;
    if constexpr (kV) v[i] = vi;
    theta[i] = theta[i] - c.lr * u;
  }
}

// One tensor of lamb_direction; adds Σθ² and Σu² to sums[0], sums[1].
template <bool kM, bool kV>
CLBO_MULTIVERSION void lamb_loop(const float* __restrict theta, float* __restrict m,
                                 float* __restrict v, const float* __restrict g,
                                 float* __restrict u, size_t n, Coeffs c, double* sums) {
  double ts[kAcc] = {}, us[kAcc] = {};
  size_t i = 0;
  for (; i + kAcc <= n; i += kAcc)
    for (int j = 0; j < kAcc; ++j) {
      const size_t e = i + static_cast<size_t>(j);
      float mi = m[e], vi = v[e];
      if constexpr (kM) mi = c.b1 * mi + c.omb1 * g[e];
      if constexpr (kV) vi = c.b2 * vi + c.omb2 * g[e] * g[e];
      const float ue = (mi / c.bc1) / (std::sqrt(vi / c.bc2) + c.eps) + c.wd * theta[e];
      if constexpr (kM) m[e] = mi;
      if constexpr (kV) v[e] = vi;
      u[e] = ue;
      ts[j] += static_cast<double>(theta[e]) * static_cast<double>(theta[e]);
      us[j] += static_cast<double>(ue) * static_cast<double>(ue);
    }
  for (; i < n; ++i) {
    float mi = m[i], vi = v[i];
    if constexpr (kM) mi = c.b1 * mi + c.omb1 * g[i];
    if constexpr (kV) vi = c.b2 * vi + c.omb2 * g[i] * g[i];
    const float ue = (mi / c.bc1) / (std::sqrt(vi / c.bc2) + c.eps) + c.wd * theta[i];
    if constexpr (kM) m[i] = mi;
    if constexpr (kV) v[i] = vi;
    u[i] = ue;
    ts[0] += static_cast<double>(theta[i]) * static_cast<double>(theta[i]);
    us[0] += static_cast<double>(ue) * static_cast<double>(ue);
  }
  double t = 0.0, s = 0.0;
  for (int j = 0; j < kAcc; ++j) {
    t += ts[j];
    s += us[j];
  }
  sums[0] = t;
  sums[1] = s;
}

CLBO_MULTIVERSION void momentum_loop(float* __restrict m, const float* __restrict g, size_t n,
                                     float b1, float omb1) {
  for (size_t i = 0; i < n; ++i) m[i] = b1 * m[i] + omb1 * g[i];
}

CLBO_MULTIVERSION void scaled_loop(float* __restrict theta, const float* __restrict u, size_t n,
                                   float step) {
  for (size_t i = 0; i < n; ++i) theta[i] = theta[i] - step * u[i];
}

}  // namespace

void adam_update(float* theta, float* m, float* v, const float* g, size_t n, const AdamArgs& a) {
  const Coeffs c(a);
  if (a.update_m && a.update_v)
    adam_loop<true, true>(theta, m, v, g, n, c);
  else if (a.update_m)
    adam_loop<true, false>(theta, m, v, g, n, c);
  else if (a.update_v)
    adam_loop<false, true>(theta, m, v, g, n, c);
  else
    adam_loop<false, false>(theta, m, v, g, n, c);
}

void momentum_update(float* m, const float* g, size_t n, float beta1) {
  momentum_loop(m, g, n, beta1, 1.0f - beta1);
}

void lamb_direction(const float* theta, float* m, float* v, const float* g, float* u,
                    const ParamLayout& layout, const AdamArgs& a, double* theta_sumsq,
                    double* u_sumsq) {
  const Coeffs c(a);
  for (size_t t = 0; t < layout.num_tensors(); ++t) {
    const size_t o = layout[t].offset, n = layout[t].size;
    const float* gt = g ? g + o : nullptr;
    double sums[2];
    if (a.update_m && a.update_v)
      lamb_loop<true, true>(theta + o, m + o, v + o, gt, u + o, n, c, sums);
    else if (a.update_m)
      lamb_loop<true, false>(theta + o, m + o, v + o, gt, u + o, n, c, sums);
    else if (a.update_v)
      lamb_loop<false, true>(theta + o, m + o, v + o, gt, u + o, n, c, sums);
    else
      lamb_loop<false, false>(theta + o, m + o, v + o, gt, u + o, n, c, sums);
    theta_sumsq[t] = sums[0];
    u_sumsq[t] = sums[1];
  }
}

void scaled_update(float* theta, const float* u, const ParamLayout& layout, const float* coeff,
                   float lr) {
  for (size_t t = 0; t < layout.num_tensors(); ++t) {
    const float step = lr * coeff[t];
    scaled_loop(theta + layout[t].offset, u + layout[t].offset, layout[t].size, step);
  }
}

float lamb_trust(double theta_sumsq, double u_sumsq, float lo, float hi) {
  if (theta_sumsq == 0.0 || u_sumsq == 0.0) return 1.0f;
  const float ratio = static_cast<float>(std::sqrt(theta_sumsq) / std::sqrt(u_sumsq));
  return std::min(std::max(ratio, lo), hi);  // not std::clamp: no precondition on lo <= hi
}

}  // namespace clbo::kernels
