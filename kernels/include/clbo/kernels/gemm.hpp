// Row-major matrix products whose every output bit is fixed by the inputs alone, on any CPU.
//
// C = op(A)·op(B) with op(A) m×k and op(B) k×n. Every element is the fused multiply-add
// chain over k in increasing order, started from +0:
//     c = +0;  for kk = 0 … k−1:  c = fma(A(i,kk), B(kk,j), c)
// An fma rounds once, exactly as IEEE 754 defines it, so this value does not depend on the
// vector width, the blocking, the instruction set or the library: the AVX2+FMA kernel, the
// portable loop (std::fma, in software where the CPU has no FMA) and the reference give the
// same bits. Training results therefore do not depend on the machine that computed them.
// (A BLAS such as Eigen's picks its blocking from the cache sizes it queries at run time and
// its kernel from the build flags; both change the summation order and hence the bits.)
#pragma once
#include <cstddef>

namespace clbo::kernels {

enum class Op {
  kN,  // op(X) = X:  A(i,kk) = a[i·lda + kk],  B(kk,j) = b[kk·ldb + j]
  kT,  // op(X) = Xᵀ: A(i,kk) = a[kk·lda + i],  B(kk,j) = b[j·ldb + kk]
};

// c[i·ldc + j] = (op(A)·op(B))(i, j) for i < m, j < n; c is overwritten (+0 when k = 0).
// c must not overlap a or b. Thread-safe (packing buffers are per thread).
void gemm(Op opa, Op opb, size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
          size_t ldb, float* c, size_t ldc);
// The same chain in double (for the models' double-precision gradient checks).
void gemm(Op opa, Op opb, size_t m, size_t n, size_t k, const double* a, size_t lda,
          const double* b, size_t ldb, double* c, size_t ldc);

// The float kernel in use: "avx2+fma" where the CPU has both, else "portable". Results
// record it; it changes speed, never a bit.
const char* gemm_path_name();

namespace detail {
// Forces the float kernel: kAuto (the default) picks avx2+fma when available; kPortable is
// the std::fma loop. Returns false when the path is unavailable on this CPU or build. Not
// thread-safe: call before any gemm runs (tests, and `CLBO_GEMM=portable` in clbo train).
enum class GemmPath { kAuto, kPortable, kAvx2Fma };
bool set_gemm_path(GemmPath path);
}  // namespace detail

namespace ref {
// The definition, as a plain triple loop.
void gemm(Op opa, Op opb, size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
          size_t ldb, float* c, size_t ldc);
}  // namespace ref

}  // namespace clbo::kernels
