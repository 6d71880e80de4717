// GPU versions of kernels/mask.hpp (the shared Philox mask and mask-driven compaction) and
// kernels/half.hpp (fp16 wire conversion). Same mask (element i kept at step t when word
// i mod 4 of Philox4x32-10({lo(i/4), hi(i/4), t, 0}, {lo(seed), hi(seed)}) is below
// floor(k·2^32), via the shared clbo::kernels::mask_keep) and the same bit order (local
// element j is bit 7 − j%8 of byte j/8), so masks and compacted buffers are bit-identical to
// the CPU's.
//
// Compaction works on tiles of 4096 elements: count per tile, one exclusive scan of the tile
// counts, then every tile writes its kept values at its offset in increasing index order.
// Functions that return a count wait for `stream` to finish; the others are asynchronous.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "clbo/cuda/runtime.hpp"

namespace clbo::cuda {

// Writes ceil(n/8) bytes: the mask over global elements [begin, begin+n); trailing bits of
// the last byte are zero. k must be in [0, 1].
void random_mask(uint64_t seed, uint32_t t, double k, size_t begin, size_t n, uint8_t* bits,
                 cudaStream_t stream = nullptr);

// Number of set bits among the first n (bits past n are ignored).
size_t mask_count(const uint8_t* bits, size_t n, Workspace& ws, cudaStream_t stream = nullptr);

// dst[j++] = src[i] for each kept i < n, in increasing i; returns the count. dst must hold
// mask_count(bits, n) floats and must not overlap src.
size_t compact(const float* src, const uint8_t* bits, size_t n, float* dst, Workspace& ws,
               cudaStream_t stream = nullptr);

// The inverse: dst[i] = src[j++] for each kept i < n; other dst elements are untouched.
void scatter(const float* src, const uint8_t* bits, size_t n, float* dst, Workspace& ws,
             cudaStream_t stream = nullptr);

// Random mask and compaction fused: generates the mask of random_mask into `bits` while
// counting each tile, then compacts src through it. Returns the count.
size_t mask_compact(uint64_t seed, uint32_t t, double k, size_t begin, size_t n, const float* src,
                    uint8_t* bits, float* dst, Workspace& ws, cudaStream_t stream = nullptr);

// IEEE binary16 conversion, round to nearest even (kernels/half.hpp on the device).
void f32_to_f16(const float* src, size_t n, uint16_t* dst, cudaStream_t stream = nullptr);
void f16_to_f32(const uint16_t* src, size_t n, float* dst, cudaStream_t stream = nullptr);

}  // namespace clbo::cuda
