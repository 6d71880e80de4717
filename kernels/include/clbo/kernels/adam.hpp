// Fused Adam/LAMB update math on flat fp32 buffers (docs/reference/algorithms.md §3, §4, §7).
//
// All arithmetic is fp32 in the order written below, with no fused multiply-add
// contraction, so the reference and the optimized versions agree bit for bit, and an
// optimizer run with bias correction off matches its compressed twin's warmup exactly.
// bc1 and bc2 are the bias-correction divisors 1−β1^t and 1−β2^t, or 1 when off.
// (1−β1) and (1−β2) are each formed once in fp32 as 1.0f − β; products associate left to
// right as written, e.g. ((1−β2)·g)·g, as PyTorch's addcmul_(g, g, value=1−β2) computes it.
#pragma once
#include <cstddef>

#include "clbo/core/layout.hpp"

namespace clbo::kernels {

struct AdamArgs {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.f;
  float bc1 = 1.f, bc2 = 1.f;
  bool update_m = true;  // m = β1·m + (1−β1)·g
  bool update_v = true;  // v = β2·v + ((1−β2)·g)·g (off while v is frozen)
};

// Per element: [m update]; [v update]; u = (m/bc1) / (sqrt(v/bc2) + eps) + wd·θ; θ = θ − lr·u.
// g may be null when neither moment is updated.
void adam_update(float* theta, float* m, float* v, const float* g, size_t n, const AdamArgs& a);

// m = β1·m + (1−β1)·g
void momentum_update(float* m, const float* g, size_t n, float beta1);

// LAMB direction, fused with its norms: [moment updates as in AdamArgs];
// u = (m/bc1) / (sqrt(v/bc2) + eps) + wd·θ, written to `u`; per tensor i,
// theta_sumsq[i] = Σ θ², u_sumsq[i] = Σ u². lr is unused here.
void lamb_direction(const float* theta, float* m, float* v, const float* g, float* u,
                    const ParamLayout& layout, const AdamArgs& a, double* theta_sumsq,
                    double* u_sumsq);

// θ_i −= (lr·coeff[tensor of i])·u_i; the product lr·coeff is formed once per tensor in fp32.
void scaled_update(float* theta, const float* u, const ParamLayout& layout, const float* coeff,
                   float lr);

// LAMB's trust ratio: clamp(sqrt(θ²)/sqrt(u²), lo, hi), or 1 when either norm is 0.
float lamb_trust(double theta_sumsq, double u_sumsq, float lo, float hi);

namespace ref {
void adam_update(float* theta, float* m, float* v, const float* g, size_t n, const AdamArgs& a);
void lamb_direction(const float* theta, float* m, float* v, const float* g, float* u,
                    const ParamLayout& layout, const AdamArgs& a, double* theta_sumsq,
                    double* u_sumsq);
}  // namespace ref

}  // namespace clbo::kernels
