// Optimized norms.hpp kernels: many independent double accumulators, so the adds pipeline
// and vectorize; only the reduction order differs from the reference.
#include "clbo/kernels/norms.hpp"
#include "simd.hpp"

namespace clbo::kernels {
namespace {

constexpr int kAcc = 16;

CLBO_MULTIVERSION double sumsq(const float* __restrict x, size_t n) {
  double acc[kAcc] = {};
  size_t i = 0;
  for (; i + kAcc <= n; i += kAcc)
    for (int j = 0; j < kAcc; ++j)
      acc[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
  for (; i < n; ++i) acc[i % kAcc] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  double s = 0.0;
  for (int j = 0; j < kAcc; ++j) s += acc[j];
  return s;
}

// Adds one tensor's four masked sums into out[0..3]. Selecting 0.0 (rather than multiplying
// by a 0/1 weight) keeps an Inf on the other side of the partition out of the sum.
CLBO_MULTIVERSION void masked(const float* __restrict w, const float* __restrict u,
                              const float* __restrict r, size_t n, double* out) {
  constexpr int kLanes = 4;
  double fw[kLanes] = {}, fu[kLanes] = {}, sw[kLanes] = {}, su[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const double w2 = static_cast<double>(w[i + j]) * static_cast<double>(w[i + j]);
      const double u2 = static_cast<double>(u[i + j]) * static_cast<double>(u[i + j]);
      const bool fresh = r[i + j] == 1.0f, stale = r[i + j] < 1.0f;
      fw[j] += fresh ? w2 : 0.0;
      fu[j] += fresh ? u2 : 0.0;
      sw[j] += stale ? w2 : 0.0;
      su[j] += stale ? u2 : 0.0;
    }
  for (; i < n; ++i) {
    const double w2 = static_cast<double>(w[i]) * static_cast<double>(w[i]);
    const double u2 = static_cast<double>(u[i]) * static_cast<double>(u[i]);
    const bool fresh = r[i] == 1.0f, stale = r[i] < 1.0f;
    fw[0] += fresh ? w2 : 0.0;
    fu[0] += fresh ? u2 : 0.0;
    sw[0] += stale ? w2 : 0.0;
    su[0] += stale ? u2 : 0.0;
  }
  for (int k = 0; k < 4; ++k) out[k] = 0.0;
  for (int j = 0; j < kLanes; ++j) {
    out[0] += fw[j];
    out[1] += fu[j];
    out[2] += sw[j];
    out[3] += su[j];
  }
}

}  // namespace

void tensor_sumsq(const float* x, const ParamLayout& layout, double* out) {
  for (size_t t = 0; t < layout.num_tensors(); ++t)
    out[t] = sumsq(x + layout[t].offset, layout[t].size);
}

void slamb_masked_sumsq(const float* w, const float* u, const float* r, const ParamLayout& layout,
                        double* out) {
  for (size_t t = 0; t < layout.num_tensors(); ++t) {
    const size_t o = layout[t].offset;
    masked(w + o, u + o, r + o, layout[t].size, out + 4 * t);
  }
}

}  // namespace clbo::kernels
