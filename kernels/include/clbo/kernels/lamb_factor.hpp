// 1-bit LAMB's per-tensor scaling factor in the compression phase (docs/reference/algorithms.md
// §4). This is the one CPU contract: the optimizer (optim/src/onebit_lamb.cpp) calls it, and the
// fused GPU kernel (clbo/cuda/optim.hpp, cuda::onebit_lamb_terms) is tested against it.
//
// The computation has two halves:
//
// 1. onebit_lamb_terms: one pass over the elements, after the compressed allreduce has
//    produced the new momentum m. Per element, in fp32, in this order, with (1−β) formed
//    once as 1.0f − β and products associating left to right:
//      ĝ       = (m − β1·m_last) / (1−β1)       the gradient the momentum implies
//      v_fresh = β2·v_fresh + ((1−β2)·ĝ)·ĝ       updated in place
//      denom   = sqrt(v) + eps                   v is the frozen variance
//      u_pre   = m / denom
//      u       = u_pre + λ·θ  if λ > 0, else u_pre (written to u)
//      ratio   = denom / (sqrt(v_fresh) + eps)
//    and per tensor t, in doubles:
//      terms[3t+0] = max of the tensor's ratios (NaN ratios are skipped; −inf if none),
//      terms[3t+1] = Σ u_pre², terms[3t+2] = Σ u² (squares of the fp32 values, in double).
//    Inputs θ, m, m_last, v are read only; v_fresh is read and written; u is written. u must
//    not alias any input.
//
// 2. onebit_lamb_factors: per tensor, from its terms and its previous factor (doubles):
//      factor = max ratio (1 for an empty tensor, which has no ratio)
//      if λ > 0:  rr = min(1, sqrt(Σu_pre²)/sqrt(Σu²)), or 1 when Σu² is 0
//                 factor = factor·rr + (1 − rr)
//      factor = min(factor, factor_max), then max(factor, factor_min)
//      factor = min(factor, last·(1 + threshold)), then max(factor, last·(1 − threshold))
//    and `last` is replaced by the new factor in place. The caller steps with
//    lr·(lamb_coeff_freeze·factor)·u. The clamps run in DeepSpeed's order (upper bound
//    first). The order would matter only for inverted bounds, which cannot occur: config
//    validation requires factor_min ≤ factor_max and threshold ≥ 0, and last stays > 0.
//
// The scalar reference in kernels/cpu/lamb_factor_ref.cpp is the only CPU implementation:
// its in-order double sums are the optimizer's exact arithmetic, and the GPU kernel matches
// it bit for bit on u and v_fresh, exactly on the max ratio, and within rounding on the sums.
#pragma once
#include <cstddef>

#include "clbo/core/layout.hpp"

namespace clbo::kernels {

// Per-tensor doubles onebit_lamb_terms writes (terms holds this many per tensor).
inline constexpr size_t kOnebitLambTerms = 3;

struct OnebitLambArgs {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.f;
};

void onebit_lamb_terms(const float* theta, const float* m, const float* m_last, const float* v,
                       float* v_fresh, float* u, const ParamLayout& layout, const OnebitLambArgs& a,
                       double* terms);

struct OnebitLambFactorArgs {
  float weight_decay = 0.f;  // λ, the same value the terms were computed with
  double factor_min = 0.5, factor_max = 4.0, factor_threshold = 0.1;
};

// The factor of one tensor with `numel` elements from its three terms and previous factor.
double onebit_lamb_factor(const double* terms, size_t numel, double last_factor,
                          const OnebitLambFactorArgs& a);

// For every tensor t of the layout: last_factor[t] = onebit_lamb_factor(terms + 3t, size of
// t, last_factor[t], a). last_factor holds layout.num_tensors() values.
void onebit_lamb_factors(const double* terms, const ParamLayout& layout,
                         const OnebitLambFactorArgs& a, double* last_factor);

}  // namespace clbo::kernels
