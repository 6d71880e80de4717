// GPU versions of kernels/adam.hpp, kernels/norms.hpp and kernels/lamb_factor.hpp (1-bit
// LAMB's fused compression-step pass). Element-wise results (θ, m, v, u, v_fresh) are
// bit-identical to the CPU code (clbo::kernels::ref, and kernels::onebit_lamb_terms, which is
// itself the scalar reference); per-tensor double sums are reduced per fixed-size segment
// and then in segment order, so they are reproducible run to run and may differ from the
// CPU's sum in the last bits only.
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
#include "clbo/kernels/lamb_factor.hpp"

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

// kernels::onebit_lamb_terms (clbo/kernels/lamb_factor.hpp, 1-bit LAMB's compression step
// after the compressed allreduce) fused into one pass: writes u and v_fresh, and per tensor t
// d_terms[3t..3t+2] = max ratio, Σu_pre², Σu². The max is exact; NaN ratios are skipped and
// an empty tensor gets −inf, as on the CPU. Copy the terms to the host and turn them into
// factors with kernels::onebit_lamb_factors, the same code the CPU optimizer runs.
void onebit_lamb_terms(const float* theta, const float* m, const float* m_last, const float* v,
                       float* v_fresh, float* u, const LayoutTable& layout,
                       const kernels::OnebitLambArgs& a, double* d_terms, Workspace& ws,
                       cudaStream_t stream = nullptr);

}  // namespace clbo::cuda
