// Optimized batch fp16 conversion: x86 F16C (vcvtps2ph with round-to-nearest-even, and
// vcvtph2ps) when the CPU has it, chosen at run time since we build for generic x86-64;
// otherwise the scalar conversion. Both are exact IEEE conversions, so results are
// bit-identical to the reference (the tests compare them over all 65536 codes).
#include "clbo/kernels/half.hpp"

// CLBO_NO_MULTIVERSION (the clang fuzz build) keeps the scalar path: clang 14 does not know
// "f16c" in __builtin_cpu_supports.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(CLBO_NO_MULTIVERSION)
#include <immintrin.h>
#define CLBO_HAVE_F16C_DISPATCH 1
#endif

namespace clbo::kernels {
namespace {

#if defined(CLBO_HAVE_F16C_DISPATCH)
bool cpu_has_f16c() {
  static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
}

__attribute__((target("avx,f16c"))) void to_f16_f16c(const float* src, size_t n, uint16_t* dst) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

__attribute__((target("avx,f16c"))) void to_f32_f16c(const uint16_t* src, size_t n, float* dst) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
#endif

}  // namespace

void f32_to_f16(const float* src, size_t n, uint16_t* dst) {
#if defined(CLBO_HAVE_F16C_DISPATCH)
  if (cpu_has_f16c()) return to_f16_f16c(src, n, dst);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

void f16_to_f32(const uint16_t* src, size_t n, float* dst) {
#if defined(CLBO_HAVE_F16C_DISPATCH)
  if (cpu_has_f16c()) return to_f32_f16c(src, n, dst);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

}  // namespace clbo::kernels
