// The reference for gemm.hpp: one fma chain per output element, k in increasing order.
#include <cmath>

#include "clbo/kernels/gemm.hpp"

namespace clbo::kernels::ref {

void gemm(Op opa, Op opb, size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
          size_t ldb, float* c, size_t ldc) {
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (size_t kk = 0; kk < k; ++kk) {
        const float x = opa == Op::kN ? a[i * lda + kk] : a[kk * lda + i];
        const float y = opb == Op::kN ? b[kk * ldb + j] : b[j * ldb + kk];
        acc = std::fma(x, y, acc);
      }
      c[i * ldc + j] = acc;
    }
}

}  // namespace clbo::kernels::ref
