// Scalar references for onebit.hpp: one element at a time, exactly as docs/reference/algorithms.md
// §1–§2 words it. The optimized kernels are tested against these.
#include <cmath>

#include "clbo/kernels/onebit.hpp"

namespace clbo::kernels::ref {

double ef_sumsq(const float* x, size_t n, const float* err, size_t n_pad) {
  double sum = 0.0;
  for (size_t i = 0; i < n_pad; ++i) {
    const float b = (i < n ? x[i] : 0.0f) + err[i];
    sum += static_cast<double>(b) * static_cast<double>(b);
  }
  return sum;
}

void ef_sign_pack(const float* x, size_t n, float* err, size_t n_pad, float scale,
                  uint8_t* packed) {
  for (size_t k = 0; k < n_pad / 8; ++k) packed[k] = 0;
  for (size_t i = 0; i < n_pad; ++i) {
    const float b = (i < n ? x[i] : 0.0f) + err[i];
    const bool bit = b >= 0.0f;
    err[i] = b - (bit ? scale : -scale);
    if (bit) packed[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
  }
}

void unpack_scale(const uint8_t* packed, size_t n, float scale, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const bool bit = (packed[i / 8] >> (7 - i % 8)) & 1u;
    out[i] = bit ? scale : -scale;
  }
}

float server_step(const uint8_t* const* pieces, const float* scales, int p, float* err, size_t c,
                  uint8_t* packed_out) {
  const float inv_p = 1.0f / static_cast<float>(p);
  double sumsq = 0.0;
  for (size_t i = 0; i < c; ++i) {
    float votes = 0.0f;
    for (int j = 0; j < p; ++j) {
      const bool bit = (pieces[j][i / 8] >> (7 - i % 8)) & 1u;
      votes += bit ? scales[j] : -scales[j];
    }
    const float a = votes * inv_p + err[i];
    err[i] = a;
    sumsq += static_cast<double>(a) * static_cast<double>(a);
  }
  // Pass 2 signs a itself (not 0.0f + a as ef_sign_pack would), so a = −0.0 with s = 0
  // leaves e = −0.0 exactly as the contract's e ← a − s reads.
  const float s = rms_scale(sumsq, c);
  for (size_t k = 0; k < c / 8; ++k) packed_out[k] = 0;
  for (size_t i = 0; i < c; ++i) {
    const float a = err[i];
    const bool bit = a >= 0.0f;
    err[i] = a - (bit ? s : -s);
    if (bit) packed_out[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
  }
  return s;
}

}  // namespace clbo::kernels::ref
