// GPU versions of kernels/adam.hpp and kernels/norms.hpp, plus 1-bit LAMB's fused
// compression-step direction. Element-wise results (θ, m, v, u) are bit-identical to
// clbo::kernels::ref; per-tensor double sums are reduced per fixed-size segment and then in
// segment order, so they are reproducible run to run and may differ from the CPU's sum in
// the last bits only.
//
// Pointers are device pointers; per-tensor outputs (d_*) are device arrays. All functions
// are asynchronous on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "clbo/core/layout.hpp"
#include "clbo/cuda/runtime.hpp"
#include "clbo/kernels/adam.hpp"

namespace clbo::cuda {

// A ParamLayout prepared for per-tensor GPU kernels: the flat buffer cut into segments of at
// most kSegment elements that never straddle a tensor. Each segment is one thread block;
// a tensor's sum is the sum of its segments' partials, in order. Build once per layout.
class LayoutTable {
 public:
  static constexpr size_t kSegment = 4096;
  struct Segment {
    uint64_t begin, end;  // element range in the flat buffer
    uint32_t tensor;
  };
  explicit LayoutTable(const ParamLayout& layout);
  size_t num_tensors() const { return num_tensors_; }
  size_t total() const { return total_; }
  size_t num_segments() const { return num_segments_; }
  const Segment* segments() const { return segments_.data(); }  // device
  // first_segment()[t] .. first_segment()[t+1] are tensor t's segments (device).
  const uint32_t* first_segment() const { return first_segment_.data(); }

 private:
  size_t num_tensors_ = 0, total_ = 0, num_segments_ = 0;
  DeviceBuffer<Segment> segments_;
  DeviceBuffer<uint32_t> first_segment_;
};

// kernels::adam_update on the device (same per-element operations and order).
void adam_update(float* theta, float* m, float* v, const float* g, size_t n,
                 const kernels::AdamArgs& a, cudaStream_t stream = nullptr);

// m = β1·m + (1−β1)·g
void momentum_update(float* m, const float* g, size_t n, float beta1,
                     cudaStream_t stream = nullptr);

// kernels::lamb_direction fused with its per-tensor norms: writes u and the per-tensor
// Σθ², Σu² to d_theta_sumsq[t], d_u_sumsq[t].
void lamb_direction(const float* theta, float* m, float* v, const float* g, float* u,
                    const LayoutTable& layout, const kernels::AdamArgs& a, double* d_theta_sumsq,
                    double* d_u_sumsq, Workspace& ws, cudaStream_t stream = nullptr);

// d_coeff[t] = kernels::lamb_trust(d_theta_sumsq[t], d_u_sumsq[t], lo, hi) for every tensor,
// on the device (same double→float arithmetic), so LAMB never leaves the GPU.
void lamb_trust(const double* d_theta_sumsq, const double* d_u_sumsq, size_t num_tensors, float lo,
                float hi, float* d_coeff, cudaStream_t stream = nullptr);

// kernels::scaled_update: θ_i −= (lr·coeff[tensor of i])·u_i, lr·coeff formed in fp32.
void scaled_update(float* theta, const float* u, const LayoutTable& layout, const float* d_coeff,
                   float lr, cudaStream_t stream = nullptr);

// kernels::tensor_sumsq: d_out[t] = Σ x² over tensor t.
void tensor_sumsq(const float* x, const LayoutTable& layout, double* d_out, Workspace& ws,
                  cudaStream_t stream = nullptr);

// kernels::slamb_masked_sumsq: d_out[4t..4t+3] = Σ_F w², Σ_F u², Σ_S w², Σ_S u².
void slamb_masked_sumsq(const float* w, const float* u, const float* r, const LayoutTable& layout,
                        double* d_out, Workspace& ws, cudaStream_t stream = nullptr);

// 1-bit LAMB's compression step (algorithms.md §4) after the compressed allreduce, fused
// into one pass. Per element, in fp32, in this order:
//   ĝ = (m − β1·m_last) / (1 − β1)
//   v_fresh = β2·v_fresh + (1 − β2)·ĝ·ĝ
//   denom = sqrt(v) + eps                      (v is frozen)
//   u_pre = m / denom;  u = u_pre + λ·θ        (u is written)
//   ratio = denom / (sqrt(v_fresh) + eps)
// and per tensor t: terms[3t+0] = max ratio, terms[3t+1] = Σ u_pre², terms[3t+2] = Σ u²
// (doubles). onebit_lamb_factor turns these into the tensor's clamped factor.
struct OnebitLambArgs {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.f;
};
void onebit_lamb_terms(const float* theta, const float* m, const float* m_last, const float* v,
                       float* v_fresh, float* u, const LayoutTable& layout, const OnebitLambArgs& a,
                       double* d_terms, Workspace& ws, cudaStream_t stream = nullptr);

// The per-tensor factor of §4 from one tensor's terms (host, scalar):
//   factor = max ratio; if λ > 0: rr = min(1, sqrt(Σu_pre²)/sqrt(Σu²)), factor = factor·rr + (1 −
//   rr); factor = clamp(factor, factor_min, factor_max); factor = clamp(factor, last·(1 −
//   threshold), last·(1 + threshold)).
// rr is 1 when Σu² is 0. Computed in double, returned as float.
float onebit_lamb_factor(const double* terms, float weight_decay, float last_factor,
                         float factor_min, float factor_max, float factor_threshold);

namespace ref {
// Scalar CPU reference of onebit_lamb_terms (element order, one running sum per quantity).
void onebit_lamb_terms(const float* theta, const float* m, const float* m_last, const float* v,
                       float* v_fresh, float* u, const ParamLayout& layout, const OnebitLambArgs& a,
                       double* terms);
}  // namespace ref

}  // namespace clbo::cuda
