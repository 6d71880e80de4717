// 1-bit sign compression with error feedback (docs/reference/algorithms.md §1–§2).
//
// Bit order, the one place it is defined for all of clbo: element 8k+j of a buffer is bit
// (7−j) of byte k — the first element sits in the most significant bit, as NumPy/CuPy
// `packbits` (bitorder='big') writes it, so packed buffers are interchangeable with
// DeepSpeed's. A set bit means +1 and decodes to +scale; a clear bit decodes to −scale.
// The sign test is `value >= 0`, so +0.0 and −0.0 both encode as 1.
//
// Every function has a plain scalar reference in namespace `ref` and an optimized version
// of the same name in `clbo::kernels`. Both follow the same per-element arithmetic, so
// signs, packed bytes and error buffers agree bit for bit; only the double-precision sums
// may differ in the last bits because they are reduced in a different order.
#pragma once
#include <cstddef>
#include <cstdint>

#include "clbo/core/onebit_padding.hpp"  // onebit_padded_size: the padded length n'

namespace clbo::kernels {

// RMS scale of a padded buffer from its sum of squares: (float)sqrt(sumsq / L); 0 when L = 0.
float rms_scale(double sumsq, size_t len);

// Pass 1 of worker compression: Σ (x_i + e_i)², accumulated in double, over i < n_pad,
// where x_i is treated as 0 for i >= n (x holds n elements, err holds n_pad).
double ef_sumsq(const float* x, size_t n, const float* err, size_t n_pad);

// Pass 2, fused: b = x + e (x_i = 0 past n); bit = (b >= 0); e ← b − (bit ? s : −s).
// Writes n_pad/8 bytes to `packed`. n_pad % 8 == 0. `err` is updated in place.
// x and err must not alias. packed must not overlap either float buffer.
void ef_sign_pack(const float* x, size_t n, float* err, size_t n_pad, float scale, uint8_t* packed);

// out[i] = bit_i ? scale : −scale for i < n; reads ceil(n/8) bytes. n need not be a
// multiple of 8 (trailing bits of the last byte are ignored).
void unpack_scale(const uint8_t* packed, size_t n, float scale, float* out);

// Server step over one chunk of c elements (c % 8 == 0), fused in two passes:
//   pass 1: a_i = (Σ_{j=0..p−1} (bit_j,i ? s_j : −s_j)) · (1/p) + e_i, the sum taken in fp32
//           in order j = 0, 1, …, p−1 starting from 0.0f, with 1/p computed as 1.0f / p;
//           a overwrites err, and Σ a² is accumulated in double.
//   pass 2: s = rms_scale(Σa², c); bit = (a >= 0); e ← a − (bit ? s : −s); pack.
// pieces[j] points at c/8 packed bytes from worker j; scales[j] is that worker's scale.
// Returns the server scale s and writes c/8 bytes to packed_out.
float server_step(const uint8_t* const* pieces, const float* scales, int p, float* err, size_t c,
                  uint8_t* packed_out);

namespace ref {
double ef_sumsq(const float* x, size_t n, const float* err, size_t n_pad);
void ef_sign_pack(const float* x, size_t n, float* err, size_t n_pad, float scale, uint8_t* packed);
void unpack_scale(const uint8_t* packed, size_t n, float scale, float* out);
float server_step(const uint8_t* const* pieces, const float* scales, int p, float* err, size_t c,
                  uint8_t* packed_out);
}  // namespace ref

}  // namespace clbo::kernels
