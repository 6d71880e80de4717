// gemm.hpp: a packed, register-blocked product (the BLIS loop order) whose blocking never
// changes a bit. Each output's fma chain runs over k in increasing order; a k block stores
// its partial chain in C and the next block continues it from there, which is the same
// chain. Edges are zero-padded in the packed panels and the padded outputs are dropped.
#include <algorithm>
#include <cmath>
#include <vector>

#include "clbo/kernels/gemm.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CLBO_HAVE_AVX2_GEMM 1
#endif

namespace clbo::kernels {

namespace {

// Register tile, and the cache blocks: a kKC×kNR panel of B stays in L1 while the
// kMC×kKC block of A streams from L2.
constexpr size_t kMR = 6, kNR = 16, kKC = 256, kMC = 96, kNC = 2048;

// The portable kernel: the same chain per element, as an axpy over each row of C (so C's row
// stays in cache). std::fma is exact everywhere; without FMA hardware it runs in software.
template <class T>
void gemm_portable(Op opa, Op opb, size_t m, size_t n, size_t k, const T* a, size_t lda, const T* b,
                   size_t ldb, T* c, size_t ldc) {
  for (size_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    std::fill(row, row + n, T(0));
    for (size_t kk = 0; kk < k; ++kk) {
      const T x = opa == Op::kN ? a[i * lda + kk] : a[kk * lda + i];
      if (opb == Op::kN) {
        const T* brow = b + kk * ldb;
        for (size_t j = 0; j < n; ++j) row[j] = std::fma(x, brow[j], row[j]);
      } else {
        for (size_t j = 0; j < n; ++j) row[j] = std::fma(x, b[j * ldb + kk], row[j]);
      }
    }
  }
}

#if defined(CLBO_HAVE_AVX2_GEMM)

// Panels of kMR rows of op(A)[i0 .., k0 .. k0+kc): out[(p·kc + kk)·kMR + r], zero past row m.
void pack_a(Op op, const float* a, size_t lda, size_t i0, size_t mc, size_t k0, size_t kc,
            float* out) {
  for (size_t p = 0; p * kMR < mc; ++p) {
    float* dst = out + p * kc * kMR;
    const size_t base = i0 + p * kMR, rows = std::min(kMR, mc - p * kMR);
    if (op == Op::kN) {
      for (size_t r = 0; r < kMR; ++r) {
        if (r < rows) {
          const float* src = a + (base + r) * lda + k0;
          for (size_t kk = 0; kk < kc; ++kk) dst[kk * kMR + r] = src[kk];
        } else {
          for (size_t kk = 0; kk < kc; ++kk) dst[kk * kMR + r] = 0.0f;
        }
      }
    } else {
      for (size_t kk = 0; kk < kc; ++kk) {
        const float* src = a + (k0 + kk) * lda + base;
        for (size_t r = 0; r < kMR; ++r) dst[kk * kMR + r] = r < rows ? src[r] : 0.0f;
      }
    }
  }
}

// Panels of kNR columns of op(B)[k0 .. k0+kc, j0 ..): out[(p·kc + kk)·kNR + j], zero past n.
void pack_b(Op op, const float* b, size_t ldb, size_t k0, size_t kc, size_t j0, size_t nc,
            float* out) {
  for (size_t p = 0; p * kNR < nc; ++p) {
    float* dst = out + p * kc * kNR;
    const size_t base = j0 + p * kNR, cols = std::min(kNR, nc - p * kNR);
    if (op == Op::kN) {
      for (size_t kk = 0; kk < kc; ++kk) {
        const float* src = b + (k0 + kk) * ldb + base;
        float* d = dst + kk * kNR;
        for (size_t j = 0; j < kNR; ++j) d[j] = j < cols ? src[j] : 0.0f;
      }
    } else {
      for (size_t j = 0; j < kNR; ++j) {
        if (j < cols) {
          const float* src = b + (base + j) * ldb + k0;
          for (size_t kk = 0; kk < kc; ++kk) dst[kk * kNR + j] = src[kk];
        } else {
          for (size_t kk = 0; kk < kc; ++kk) dst[kk * kNR + j] = 0.0f;
        }
      }
    }
  }
}

// One kMR×kNR tile: c (row stride ldc) = [c +] Σ_kk a[kk]·b[kk] as fma chains; `accumulate`
// continues the chains stored in c by the previous k block.
__attribute__((target("avx2,fma"))) void tile_avx2(size_t kc, const float* a, const float* b,
                                                   float* c, size_t ldc, bool accumulate) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (accumulate) {
    c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
    c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
    c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
    c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
    c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
    c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
  } else {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  }
  for (size_t kk = 0; kk < kc; ++kk, a += kMR, b += kNR) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
  _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

struct PackBuffers {
  std::vector<float> a, b;
};

void gemm_avx2(Op opa, Op opb, size_t m, size_t n, size_t k, const float* a, size_t lda,
               const float* b, size_t ldb, float* c, size_t ldc) {
  thread_local PackBuffers buf;
  const size_t round_n = (std::min(n, kNC) + kNR - 1) / kNR * kNR;
  const size_t round_m = (std::min(m, kMC) + kMR - 1) / kMR * kMR;
  buf.b.resize(std::max(buf.b.size(), round_n * std::min(k, kKC)));
  buf.a.resize(std::max(buf.a.size(), round_m * std::min(k, kKC)));
  alignas(32) float edge[kMR * kNR];
  for (size_t jc = 0; jc < n; jc += kNC) {
    const size_t nc = std::min(kNC, n - jc);
    for (size_t pc = 0; pc < k; pc += kKC) {
      const size_t kc = std::min(kKC, k - pc);
      const bool accumulate = pc > 0;
      pack_b(opb, b, ldb, pc, kc, jc, nc, buf.b.data());
      for (size_t ic = 0; ic < m; ic += kMC) {
        const size_t mc = std::min(kMC, m - ic);
        pack_a(opa, a, lda, ic, mc, pc, kc, buf.a.data());
        for (size_t jr = 0; jr < nc; jr += kNR) {
          const size_t cols = std::min(kNR, nc - jr);
          const float* bp = buf.b.data() + (jr / kNR) * kc * kNR;
          for (size_t ir = 0; ir < mc; ir += kMR) {
            const size_t rows = std::min(kMR, mc - ir);
            const float* ap = buf.a.data() + (ir / kMR) * kc * kMR;
            float* ct = c + (ic + ir) * ldc + jc + jr;
            if (rows == kMR && cols == kNR) {
              tile_avx2(kc, ap, bp, ct, ldc, accumulate);
              continue;
            }
            // An edge tile runs in a full scratch tile; only its valid part is C.
            std::fill(edge, edge + kMR * kNR, 0.0f);
            if (accumulate)
              for (size_t r = 0; r < rows; ++r)
                std::copy(ct + r * ldc, ct + r * ldc + cols, edge + r * kNR);
            tile_avx2(kc, ap, bp, edge, kNR, accumulate);
            for (size_t r = 0; r < rows; ++r)
              std::copy(edge + r * kNR, edge + r * kNR + cols, ct + r * ldc);
          }
        }
      }
    }
  }
}

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

#endif  // CLBO_HAVE_AVX2_GEMM

detail::GemmPath g_forced = detail::GemmPath::kAuto;

bool use_avx2() {
#if defined(CLBO_HAVE_AVX2_GEMM)
  return g_forced != detail::GemmPath::kPortable && cpu_has_avx2_fma();
#else
  return false;
#endif
}

}  // namespace

void gemm(Op opa, Op opb, size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
          size_t ldb, float* c, size_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
#if defined(CLBO_HAVE_AVX2_GEMM)
  if (use_avx2()) return gemm_avx2(opa, opb, m, n, k, a, lda, b, ldb, c, ldc);
#endif
  gemm_portable(opa, opb, m, n, k, a, lda, b, ldb, c, ldc);
}

void gemm(Op opa, Op opb, size_t m, size_t n, size_t k, const double* a, size_t lda,
          const double* b, size_t ldb, double* c, size_t ldc) {
  gemm_portable(opa, opb, m, n, k, a, lda, b, ldb, c, ldc);
}

const char* gemm_path_name() {
  return use_avx2() ? "avx2+fma" : "portable";
}

namespace detail {
bool set_gemm_path(GemmPath path) {
#if defined(CLBO_HAVE_AVX2_GEMM)
  if (path == GemmPath::kAvx2Fma && !cpu_has_avx2_fma()) return false;
#else
  if (path == GemmPath::kAvx2Fma) return false;
#endif
  g_forced = path;
  return true;
}
}  // namespace detail

}  // namespace clbo::kernels
