// GPU optimizer kernels (contracts in clbo/cuda/optim.hpp). Element-wise math spells out
// every fp32 operation with __fadd_rn/__fmul_rn/__fdiv_rn/__fsqrt_rn in the order of the
// CPU reference, so no FMA contraction or approximate division can change a bit.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/cuda/optim.hpp"
#include "common.cuh"

namespace clbo::cuda {
namespace {

using namespace detail;
using Segment = LayoutTable::Segment;

struct AdamCoeffs {
  float lr, b1, omb1, b2, omb2, eps, wd, bc1, bc2;
  bool update_m, update_v;
};

AdamCoeffs coeffs(const kernels::AdamArgs& a) {
  return {a.lr,           a.beta1, 1.0f - a.beta1, a.beta2,    1.0f - a.beta2, a.eps,
          a.weight_decay, a.bc1,   a.bc2,          a.update_m, a.update_v};
}

// The reference's direction(): [m update]; [v update]; u = (m/bc1)/(sqrt(v/bc2)+eps) + wd·θ.
__device__ inline float adam_direction(const AdamCoeffs& c, float theta, float& m, float& v,
                                       const float* g, size_t i) {
  if (c.update_m) m = __fadd_rn(__fmul_rn(c.b1, m), __fmul_rn(c.omb1, g[i]));
  if (c.update_v) v = __fadd_rn(__fmul_rn(c.b2, v), __fmul_rn(__fmul_rn(c.omb2, g[i]), g[i]));
  const float denom = __fadd_rn(__fsqrt_rn(__fdiv_rn(v, c.bc2)), c.eps);
  return __fadd_rn(__fdiv_rn(__fdiv_rn(m, c.bc1), denom), __fmul_rn(c.wd, theta));
}

__global__ void adam_kernel(float* __restrict__ theta, float* __restrict__ m, float* __restrict__ v,
                            const float* __restrict__ g, size_t n, AdamCoeffs c) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float mi = m[i], vi = v[i];
    const float th = theta[i];
    const float u = adam_direction(c, th, mi, vi, g, i);
    if (c.update_m) m[i] = mi;
    if (c.update_v) v[i] = vi;
    theta[i] = __fsub_rn(th, __fmul_rn(c.lr, u));
  }
}

__global__ void momentum_kernel(float* __restrict__ m, const float* __restrict__ g, size_t n,
                                float b1, float omb1) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    m[i] = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(omb1, g[i]));
}

// −inf, the identity of max: an empty tensor's max ratio, as in the CPU reference.
constexpr double kMaxIdentity = -HUGE_VAL;

// Max over the block, valid in thread 0 (order-independent, so trivially deterministic).
// fmax skips NaN operands, as std::max(acc, NaN) does on the CPU.
__device__ double block_max(double v) {
  __shared__ double warp_max[kWarps];
  for (int off = 16; off > 0; off >>= 1) v = fmax(v, __shfl_down_sync(kFullMask, v, off));
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = v;
  __syncthreads();
  double m = kMaxIdentity;
  if (threadIdx.x == 0)
    for (int w = 0; w < kWarps; ++w) m = fmax(m, warp_max[w]);
  __syncthreads();
  return m;
}

// One block per segment: op(i, acc) for each element, then per-slot block reductions into
// partials[segment·K + k]. Slots below Op::kMaxSlots reduce with max, the rest with +.
template <class Op>
__global__ void segmented(const Segment* __restrict__ segs, Op op, double* __restrict__ partials) {
  constexpr int K = Op::kSlots;
  const Segment seg = segs[blockIdx.x];
  double acc[K];
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = k < Op::kMaxSlots ? kMaxIdentity : 0.0;
  for (size_t i = seg.begin + threadIdx.x; i < seg.end; i += blockDim.x) op(i, acc);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const double total = k < Op::kMaxSlots ? block_max(acc[k]) : block_sum(acc[k]);
    if (threadIdx.x == 0) partials[static_cast<size_t>(blockIdx.x) * K + k] = total;
  }
}

// Where per-tensor totals go: slot k of tensor t lands at slot[k][t·tensor_stride].
struct TotalsOut {
  double* slot[4];
  size_t tensor_stride;
};

// Interleaved K doubles per tensor: out[K·t + k].
TotalsOut interleaved(double* out, int K) {
  TotalsOut o{{nullptr, nullptr, nullptr, nullptr}, static_cast<size_t>(K)};
  for (int k = 0; k < K; ++k) o.slot[k] = out + k;
  return o;
}

// One block per tensor: combine its segments' partials in segment order.
template <int K, int kMaxSlots>
__global__ void segment_totals(const double* __restrict__ partials,
                               const uint32_t* __restrict__ first, TotalsOut out) {
  const uint32_t t = blockIdx.x, s0 = first[t], s1 = first[t + 1];
  for (int k = 0; k < K; ++k) {
    double v = k < kMaxSlots ? kMaxIdentity : 0.0;
    if (k < kMaxSlots) {
      for (uint32_t s = s0 + threadIdx.x; s < s1; s += blockDim.x)
        v = fmax(v, partials[static_cast<size_t>(s) * K + k]);
      v = block_max(v);
    } else {
      for (uint32_t s = s0 + threadIdx.x; s < s1; s += blockDim.x)
        v += partials[static_cast<size_t>(s) * K + k];
      v = block_sum(v);
    }
    if (threadIdx.x == 0) out.slot[k][static_cast<size_t>(t) * out.tensor_stride] = v;
  }
}

template <class Op>
void run_segmented(const LayoutTable& layout, const Op& op, const TotalsOut& out, Workspace& ws,
                   cudaStream_t stream) {
  constexpr int K = Op::kSlots;
  auto* partials =
      static_cast<double*>(ws.get(std::max<size_t>(1, layout.num_segments()) * K * sizeof(double)));
  if (layout.num_segments() > 0) {
    segmented<Op><<<static_cast<unsigned>(layout.num_segments()), kThreads, 0, stream>>>(
        layout.segments(), op, partials);
    check_launch("segmented");
  }
  if (layout.num_tensors() > 0) {
    segment_totals<K, Op::kMaxSlots>
        <<<static_cast<unsigned>(layout.num_tensors()), kThreads, 0, stream>>>(
            partials, layout.first_segment(), out);
    check_launch("segment_totals");
  }
}

__device__ inline double sq(float x) {
  return static_cast<double>(x) * static_cast<double>(x);
}

struct LambDirectionOp {
  static constexpr int kSlots = 2, kMaxSlots = 0;
  const float* theta;
  float *m, *v;
  const float* g;
  float* u;
  AdamCoeffs c;
  __device__ void operator()(size_t i, double* acc) const {
    float mi = m[i], vi = v[i];
    const float th = theta[i];
    const float ui = adam_direction(c, th, mi, vi, g, i);
    if (c.update_m) m[i] = mi;
    if (c.update_v) v[i] = vi;
    u[i] = ui;
    acc[0] += sq(th);
    acc[1] += sq(ui);
  }
};

struct SumsqOp {
  static constexpr int kSlots = 1, kMaxSlots = 0;
  const float* x;
  __device__ void operator()(size_t i, double* acc) const { acc[0] += sq(x[i]); }
};

struct SlambOp {
  static constexpr int kSlots = 4, kMaxSlots = 0;
  const float *w, *u, *r;
  __device__ void operator()(size_t i, double* acc) const {
    const double w2 = sq(w[i]), u2 = sq(u[i]);
    const float ri = r[i];
    if (ri == 1.0f) {
      acc[0] += w2;
      acc[1] += u2;
    } else if (ri < 1.0f) {
      acc[2] += w2;
      acc[3] += u2;
    }
  }
};

struct OnebitLambOp {
  static constexpr int kSlots = 3, kMaxSlots = 1;
  const float *theta, *m, *m_last, *v;
  float *v_fresh, *u;
  float b1, omb1, b2, omb2, eps, wd;
  __device__ void operator()(size_t i, double* acc) const {
    const float mi = m[i];
    const float g = __fdiv_rn(__fsub_rn(mi, __fmul_rn(b1, m_last[i])), omb1);
    const float vf = __fadd_rn(__fmul_rn(b2, v_fresh[i]), __fmul_rn(__fmul_rn(omb2, g), g));
    v_fresh[i] = vf;
    const float denom = __fadd_rn(__fsqrt_rn(v[i]), eps);
    const float u_pre = __fdiv_rn(mi, denom);
    // λ = 0 skips the add, as the CPU reference does (0·θ would turn a −0 into +0).
    const float ui = wd > 0.0f ? __fadd_rn(u_pre, __fmul_rn(wd, theta[i])) : u_pre;
    u[i] = ui;
    const float ratio = __fdiv_rn(denom, __fadd_rn(__fsqrt_rn(vf), eps));
    acc[0] = fmax(acc[0], static_cast<double>(ratio));
    acc[1] += sq(u_pre);
    acc[2] += sq(ui);
  }
};

__global__ void lamb_trust_kernel(const double* __restrict__ ts, const double* __restrict__ us,
                                  size_t count, float lo, float hi, float* __restrict__ coeff) {
  const size_t t = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= count) return;
  if (ts[t] == 0.0 || us[t] == 0.0) {
    coeff[t] = 1.0f;
    return;
  }
  float r = static_cast<float>(__dsqrt_rn(ts[t]) / __dsqrt_rn(us[t]));
  r = r < lo ? lo : r;         // std::max(r, lo)
  coeff[t] = hi < r ? hi : r;  // std::min(r, hi)
}

__global__ void scaled_update_kernel(const Segment* __restrict__ segs, float* __restrict__ theta,
                                     const float* __restrict__ u, const float* __restrict__ coeff,
                                     float lr) {
  const Segment seg = segs[blockIdx.x];
  const float step = __fmul_rn(lr, coeff[seg.tensor]);
  for (size_t i = seg.begin + threadIdx.x; i < seg.end; i += blockDim.x)
    theta[i] = __fsub_rn(theta[i], __fmul_rn(step, u[i]));
}

}  // namespace

LayoutTable::LayoutTable(const ParamLayout& layout)
    : num_tensors_(layout.num_tensors()), total_(layout.total()) {
  std::vector<Segment> segs;
  std::vector<uint32_t> first;
  first.reserve(num_tensors_ + 1);
  for (size_t t = 0; t < num_tensors_; ++t) {
    first.push_back(static_cast<uint32_t>(segs.size()));
    const size_t begin = layout[t].offset, end = begin + layout[t].size;
    for (size_t b = begin; b < end; b += kSegment)
      segs.push_back({b, std::min(end, b + kSegment), static_cast<uint32_t>(t)});
  }
  first.push_back(static_cast<uint32_t>(segs.size()));
  if (segs.size() > UINT32_MAX / 2)
    throw Error("clbo::cuda::LayoutTable: " + std::to_string(segs.size()) +
                " segments is too many");
  num_segments_ = segs.size();
  segments_.upload(segs);
  first_segment_.upload(first);
}

void adam_update(float* theta, float* m, float* v, const float* g, size_t n,
                 const kernels::AdamArgs& a, cudaStream_t stream) {
  if (n == 0) return;
  adam_kernel<<<stream_blocks(n, kThreads * 4), kThreads, 0, stream>>>(theta, m, v, g, n,
                                                                       coeffs(a));
  check_launch("adam_kernel");
}

void momentum_update(float* m, const float* g, size_t n, float beta1, cudaStream_t stream) {
  if (n == 0) return;
  momentum_kernel<<<stream_blocks(n, kThreads * 4), kThreads, 0, stream>>>(m, g, n, beta1,
                                                                           1.0f - beta1);
  check_launch("momentum_kernel");
}

void lamb_direction(const float* theta, float* m, float* v, const float* g, float* u,
                    const LayoutTable& layout, const kernels::AdamArgs& a, double* d_theta_sumsq,
                    double* d_u_sumsq, Workspace& ws, cudaStream_t stream) {
  const TotalsOut out{{d_theta_sumsq, d_u_sumsq, nullptr, nullptr}, 1};
  run_segmented(layout, LambDirectionOp{theta, m, v, g, u, coeffs(a)}, out, ws, stream);
}

void lamb_trust(const double* d_theta_sumsq, const double* d_u_sumsq, size_t num_tensors, float lo,
                float hi, float* d_coeff, cudaStream_t stream) {
  if (num_tensors == 0) return;
  lamb_trust_kernel<<<static_cast<unsigned>(ceil_div(num_tensors, kThreads)), kThreads, 0,
                      stream>>>(d_theta_sumsq, d_u_sumsq, num_tensors, lo, hi, d_coeff);
  check_launch("lamb_trust_kernel");
}

void scaled_update(float* theta, const float* u, const LayoutTable& layout, const float* d_coeff,
                   float lr, cudaStream_t stream) {
  if (layout.num_segments() == 0) return;
  scaled_update_kernel<<<static_cast<unsigned>(layout.num_segments()), kThreads, 0, stream>>>(
      layout.segments(), theta, u, d_coeff, lr);
  check_launch("scaled_update_kernel");
}

void tensor_sumsq(const float* x, const LayoutTable& layout, double* d_out, Workspace& ws,
                  cudaStream_t stream) {
  run_segmented(layout, SumsqOp{x}, interleaved(d_out, 1), ws, stream);
}

void slamb_masked_sumsq(const float* w, const float* u, const float* r, const LayoutTable& layout,
                        double* d_out, Workspace& ws, cudaStream_t stream) {
  run_segmented(layout, SlambOp{w, u, r}, interleaved(d_out, 4), ws, stream);
}

void onebit_lamb_terms(const float* theta, const float* m, const float* m_last, const float* v,
                       float* v_fresh, float* u, const LayoutTable& layout,
                       const kernels::OnebitLambArgs& a, double* d_terms, Workspace& ws,
                       cudaStream_t stream) {
  const OnebitLambOp op{theta,          m,       m_last,         v,     v_fresh,       u, a.beta1,
                        1.0f - a.beta1, a.beta2, 1.0f - a.beta2, a.eps, a.weight_decay};
  run_segmented(layout, op, interleaved(d_terms, 3), ws, stream);
}

}  // namespace clbo::cuda
