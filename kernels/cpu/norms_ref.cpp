// Scalar references for norms.hpp: one running double sum per quantity, in element order.
#include "clbo/kernels/norms.hpp"

namespace clbo::kernels::ref {

void tensor_sumsq(const float* x, const ParamLayout& layout, double* out) {
  for (size_t t = 0; t < layout.num_tensors(); ++t) {
    double s = 0.0;
    const size_t begin = layout[t].offset, end = begin + layout[t].size;
    for (size_t i = begin; i < end; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    out[t] = s;
  }
}

void slamb_masked_sumsq(const float* w, const float* u, const float* r, const ParamLayout& layout,
                        double* out) {
  for (size_t t = 0; t < layout.num_tensors(); ++t) {
    double fw = 0.0, fu = 0.0, sw = 0.0, su = 0.0;
    const size_t begin = layout[t].offset, end = begin + layout[t].size;
    for (size_t i = begin; i < end; ++i) {
      const double w2 = static_cast<double>(w[i]) * static_cast<double>(w[i]);
      const double u2 = static_cast<double>(u[i]) * static_cast<double>(u[i]);
      if (r[i] == 1.0f) {
        fw += w2;
        fu += u2;
      } else if (r[i] < 1.0f) {
        sw += w2;
        su += u2;
      }
    }
    out[4 * t + 0] = fw;
    out[4 * t + 1] = fu;
    out[4 * t + 2] = sw;
    out[4 * t + 3] = su;
  }
}

}  // namespace clbo::kernels::ref
