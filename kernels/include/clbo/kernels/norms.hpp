// Per-tensor sums of squares over a ParamLayout, accumulated in double. Norms are the
// square roots of these; callers take the root so masked and unmasked variants compose.
#pragma once
#include <cstddef>

#include "clbo/core/layout.hpp"

namespace clbo::kernels {

// out[i] = Σ x² over tensor i of the layout. out holds layout.num_tensors() values.
void tensor_sumsq(const float* x, const ParamLayout& layout, double* out);

// SLAMB's masked norms. With F = {r == 1} (fresh) and S = {r < 1} (stale), per tensor i:
//   out[4i+0] = Σ_F w², out[4i+1] = Σ_F u², out[4i+2] = Σ_S w², out[4i+3] = Σ_S u².
void slamb_masked_sumsq(const float* w, const float* u, const float* r, const ParamLayout& layout,
                        double* out);

namespace ref {
void tensor_sumsq(const float* x, const ParamLayout& layout, double* out);
void slamb_masked_sumsq(const float* w, const float* u, const float* r, const ParamLayout& layout,
                        double* out);
}  // namespace ref

}  // namespace clbo::kernels
