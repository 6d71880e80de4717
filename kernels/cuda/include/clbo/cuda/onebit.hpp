// GPU versions of kernels/onebit.hpp: 1-bit sign compression with error feedback, the
// fused server step and unpacking. Same contracts, same bit order (element 8k+j is bit
// 7−j of byte k) and the same per-element fp32 arithmetic as the CPU kernels, so signs,
// packed bytes and error buffers are bit-identical to clbo::kernels::ref given the same
// scale. The double-precision sums are reduced in a fixed tree order that depends only on
// the length (never on the device), so a GPU result is reproducible run to run; it may
// differ from the CPU sum in the last bits, and the float scale derived from it then
// almost always still agrees exactly.
//
// All pointers are device pointers unless named host_*. Every function is asynchronous on
// `stream` and never copies to or from the host, so a compressed allreduce built from them
// runs on device buffers end to end; scales stay on the device (d_* arguments).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "clbo/cuda/runtime.hpp"

namespace clbo::cuda {

// Pass 1 of worker compression: *d_sumsq = Σ_{i<n_pad} (x_i + e_i)² in double, x_i = 0 past
// n. One block-reduced pass; the per-block partials are combined by one final block.
void ef_sumsq(const float* x, size_t n, const float* err, size_t n_pad, double* d_sumsq,
              Workspace& ws, cudaStream_t stream = nullptr);

// Pass 2 with a host scale: b = x + e; bit = (b >= 0); e ← b − (bit ? s : −s); pack with a
// warp ballot. Writes n_pad/8 bytes. n_pad % 8 == 0; x, err and packed must not overlap.
void ef_sign_pack(const float* x, size_t n, float* err, size_t n_pad, float scale, uint8_t* packed,
                  cudaStream_t stream = nullptr);

// The fused worker compression of docs/reference/algorithms.md §1 in two kernels: one block-reduced
// norm pass, then one pass for error feedback, sign and ballot pack that derives the scale
// rms_scale(Σ, n_pad) on the device itself. Writes the scale to *d_scale (device).
void onebit_compress(const float* x, size_t n, float* err, size_t n_pad, uint8_t* packed,
                     float* d_scale, Workspace& ws, cudaStream_t stream = nullptr);

// out[i] = bit_i ? scale : −scale for i < n (reads ceil(n/8) bytes).
void unpack_scale(const uint8_t* packed, size_t n, float scale, float* out,
                  cudaStream_t stream = nullptr);

// Decompression of §2 step 5 in one pass: out[i] = ±d_scales[i / chunk] for i < n, with
// chunk % 8 == 0 (chunk j's signs start at byte j·chunk/8 of `packed`).
void unpack_scale_chunks(const uint8_t* packed, size_t n, size_t chunk, const float* d_scales,
                         float* out, cudaStream_t stream = nullptr);

// The server step of §2 over one chunk of c elements (c % 8 == 0), fused in two kernels:
//   1. unpack all p pieces, scale, average (fp32, j = 0..p−1 from 0.0f, times 1.0f/p), add
//      the server error; a overwrites err; block-reduced Σa²;
//   2. s = rms_scale(Σa², c); bit = (a >= 0); e ← a − (bit ? s : −s); ballot pack.
// `pieces` holds the p pieces back to back (piece j at byte j·c/8, as an all-to-all
// leaves them); d_scales holds the p worker scales. Writes c/8 bytes to packed_out and the
// server scale to *d_scale_out.
void server_step(const uint8_t* pieces, const float* d_scales, int p, float* err, size_t c,
                 uint8_t* packed_out, float* d_scale_out, Workspace& ws,
                 cudaStream_t stream = nullptr);

}  // namespace clbo::cuda
