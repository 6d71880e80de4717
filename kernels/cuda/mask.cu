// GPU mask, compaction and fp16 kernels (contracts in clbo/cuda/mask.hpp).
#include <cuda_fp16.h>

#include <string>

#include "clbo/core/error.hpp"
#include "clbo/cuda/mask.hpp"
#include "clbo/kernels/mask.hpp"
#include "common.cuh"

namespace clbo::cuda {
namespace {

using namespace detail;

constexpr size_t kTile = 4096;                // elements per tile (one block)
constexpr int kPerThread = kTile / kThreads;  // 16 elements per thread
constexpr int kTileBytes = static_cast<int>(kTile / 8);

// Mask bits of global elements g .. g+3 as a nibble, element g in bit 3; elements at or
// past `remaining` are 0. One Philox call when g is a multiple of 4 (the common case).
__device__ inline unsigned keep4(uint64_t seed, uint32_t t, uint64_t thr, uint64_t g,
                                 size_t remaining) {
  unsigned nib = 0;
  if ((g & 3) == 0) {
    const uint64_t q = g >> 2;
    const Philox4x32 r =
        philox4x32_10(static_cast<uint32_t>(q), static_cast<uint32_t>(q >> 32), t, 0,
                      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
#pragma unroll
    for (unsigned u = 0; u < 4; ++u)
      if (u < remaining && r.v[u] < thr) nib |= 8u >> u;
  } else {
    for (unsigned u = 0; u < 4; ++u)
      if (u < remaining && kernels::mask_keep(seed, t, thr, g + u)) nib |= 8u >> u;
  }
  return nib;
}

// Mask generation for one tile per block; counts[tile] = kept elements (if counts != null).
// Thread pairs (2i, 2i+1) hold the two nibbles of one byte; the even lane writes it.
__global__ void mask_tiles(uint64_t seed, uint32_t t, uint64_t thr, size_t begin, size_t n,
                           uint8_t* __restrict__ bits, uint32_t* __restrict__ counts) {
  const size_t tile_base = static_cast<size_t>(blockIdx.x) * kTile;
  const size_t nbytes = ceil_div(n, 8);
  unsigned count = 0;
#pragma unroll
  for (int r = 0; r < kPerThread / 4; ++r) {
    const size_t j0 = tile_base + 4 * (static_cast<size_t>(r) * kThreads + threadIdx.x);
    const unsigned nib = j0 < n ? keep4(seed, t, thr, begin + j0, n - j0) : 0u;
    count += __popc(nib);
    const unsigned low = __shfl_down_sync(kFullMask, nib, 1);
    if ((threadIdx.x & 1) == 0 && j0 / 8 < nbytes)
      bits[j0 / 8] = static_cast<uint8_t>(nib << 4 | low);
  }
  const unsigned total = block_sum(count);
  if (counts && threadIdx.x == 0) counts[blockIdx.x] = total;
}

// Set bits of byte b of a mask over n elements, ignoring bits past n.
__device__ inline unsigned byte_count(const uint8_t* bits, size_t b, size_t n) {
  const size_t first = 8 * b;
  if (first >= n) return 0;
  unsigned v = bits[b];
  if (n - first < 8) v &= 0xffu << (8 - (n - first));
  return __popc(v & 0xffu);
}

__global__ void tile_counts(const uint8_t* __restrict__ bits, size_t n,
                            uint32_t* __restrict__ counts) {
  const size_t b0 = static_cast<size_t>(blockIdx.x) * kTileBytes;
  unsigned count = 0;
  for (int b = threadIdx.x; b < kTileBytes; b += kThreads) count += byte_count(bits, b0 + b, n);
  const unsigned total = block_sum(count);
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// Exclusive scan of the tile counts by one block of 1024 threads; *total = their sum.
constexpr int kScanThreads = 1024;
__global__ void scan_counts(const uint32_t* __restrict__ counts, size_t m,
                            uint64_t* __restrict__ offsets, uint64_t* __restrict__ total) {
  __shared__ uint64_t sums[kScanThreads];
  const size_t per = ceil_div(m, kScanThreads);
  const size_t lo = threadIdx.x * per, hi = lo + per < m ? lo + per : m;
  uint64_t s = 0;
  for (size_t i = lo; i < hi; ++i) s += counts[i];
  sums[threadIdx.x] = s;
  __syncthreads();
  // Hillis–Steele inclusive scan of the per-thread sums.
  for (int d = 1; d < kScanThreads; d <<= 1) {
    const uint64_t add = threadIdx.x >= d ? sums[threadIdx.x - d] : 0;
    __syncthreads();
    sums[threadIdx.x] += add;
    __syncthreads();
  }
  uint64_t run = sums[threadIdx.x] - s;  // exclusive prefix of this thread's range
  for (size_t i = lo; i < hi; ++i) {
    offsets[i] = run;
    run += counts[i];
  }
  if (threadIdx.x == kScanThreads - 1) *total = sums[threadIdx.x];
}

// Moves one tile's kept elements. Compaction: dst[offset + rank] = src[e]; scatter:
// dst[e] = src[offset + rank], where rank counts kept elements before e in the tile. All 16
// source values are loaded up front so each thread has 16 loads in flight.
template <bool kScatter>
__global__ void move_tiles(const float* __restrict__ src, const uint8_t* __restrict__ bits,
                           size_t n, const uint64_t* __restrict__ offsets,
                           float* __restrict__ dst) {
  __shared__ uint8_t tile_bits[kTileBytes];
  __shared__ unsigned warp_counts[kWarps];
  const size_t tile_base = static_cast<size_t>(blockIdx.x) * kTile;
  const size_t nbytes = ceil_div(n, 8);
  for (int b = threadIdx.x; b < kTileBytes; b += kThreads) {
    const size_t gb = tile_base / 8 + b;
    tile_bits[b] = gb < nbytes ? bits[gb] : 0;
  }
  float v[kPerThread];
  if constexpr (!kScatter) {
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
      const size_t e = tile_base + static_cast<size_t>(r) * kThreads + threadIdx.x;
      v[r] = e < n ? src[e] : 0.0f;
    }
  }
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint64_t base = offsets[blockIdx.x];
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) {
    const int local = r * kThreads + threadIdx.x;
    const size_t e = tile_base + local;
    const bool keep = e < n && ((tile_bits[local >> 3] >> (7 - (local & 7))) & 1u);
    const unsigned ballot = __ballot_sync(kFullMask, keep);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    unsigned before = 0, round_total = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      before += w < warp ? warp_counts[w] : 0u;
      round_total += warp_counts[w];
    }
    if (keep) {
      const uint64_t pos = base + before + __popc(ballot & ((1u << lane) - 1u));
      if constexpr (kScatter)
        dst[e] = src[pos];
      else
        dst[pos] = v[r];
    }
    base += round_total;
    __syncthreads();
  }
}

__global__ void f32_to_f16_kernel(const float* __restrict__ src, size_t n,
                                  uint16_t* __restrict__ dst) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = __half_as_ushort(__float2half_rn(src[i]));
}

__global__ void f16_to_f32_kernel(const uint16_t* __restrict__ src, size_t n,
                                  float* __restrict__ dst) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = __half2float(__ushort_as_half(src[i]));
}

uint64_t checked_threshold(double k, const char* fn) {
  if (!(k >= 0.0 && k <= 1.0))
    throw Error(std::string("clbo::cuda::") + fn + ": keep fraction k must be in [0, 1], got " +
                std::to_string(k));
  return mask_threshold(k);
}

// Scratch layout for the tile machinery: counts, offsets, total.
struct TileScratch {
  uint32_t* counts;
  uint64_t* offsets;
  uint64_t* total;
  unsigned tiles;
};

TileScratch tile_scratch(size_t n, Workspace& ws) {
  const size_t tiles = ceil_div(n, kTile);
  if (tiles > UINT32_MAX)
    throw Error("clbo::cuda: mask of " + std::to_string(n) + " elements is too long");
  auto* base = static_cast<uint8_t*>(ws.get(tiles * 12 + 16 + 8));
  // offsets first (8-byte aligned), then total, then counts.
  auto* offsets = reinterpret_cast<uint64_t*>(base);
  auto* total = offsets + tiles;
  auto* counts = reinterpret_cast<uint32_t*>(total + 1);
  return {counts, offsets, total, static_cast<unsigned>(tiles)};
}

void launch_scan(const TileScratch& s, cudaStream_t stream) {
  scan_counts<<<1, kScanThreads, 0, stream>>>(s.counts, s.tiles, s.offsets, s.total);
  check_launch("scan_counts");
}

// The scanned total, after everything queued on the stream so far has finished.
size_t download_total(const TileScratch& s, cudaStream_t stream) {
  uint64_t total = 0;
  check(cudaMemcpyAsync(&total, s.total, sizeof(total), cudaMemcpyDeviceToHost, stream),
        "mask count download");
  check(cudaStreamSynchronize(stream), "mask count");
  return static_cast<size_t>(total);
}

}  // namespace

void random_mask(uint64_t seed, uint32_t t, double k, size_t begin, size_t n, uint8_t* bits,
                 cudaStream_t stream) {
  const uint64_t thr = checked_threshold(k, "random_mask");
  if (n == 0) return;
  mask_tiles<<<static_cast<unsigned>(ceil_div(n, kTile)), kThreads, 0, stream>>>(
      seed, t, thr, begin, n, bits, nullptr);
  check_launch("mask_tiles");
}

size_t mask_count(const uint8_t* bits, size_t n, Workspace& ws, cudaStream_t stream) {
  if (n == 0) return 0;
  const TileScratch s = tile_scratch(n, ws);
  tile_counts<<<s.tiles, kThreads, 0, stream>>>(bits, n, s.counts);
  check_launch("tile_counts");
  launch_scan(s, stream);
  return download_total(s, stream);
}

size_t compact(const float* src, const uint8_t* bits, size_t n, float* dst, Workspace& ws,
               cudaStream_t stream) {
  if (n == 0) return 0;
  const TileScratch s = tile_scratch(n, ws);
  tile_counts<<<s.tiles, kThreads, 0, stream>>>(bits, n, s.counts);
  check_launch("tile_counts");
  launch_scan(s, stream);
  move_tiles<false><<<s.tiles, kThreads, 0, stream>>>(src, bits, n, s.offsets, dst);
  check_launch("move_tiles");
  return download_total(s, stream);
}

void scatter(const float* src, const uint8_t* bits, size_t n, float* dst, Workspace& ws,
             cudaStream_t stream) {
  if (n == 0) return;
  const TileScratch s = tile_scratch(n, ws);
  tile_counts<<<s.tiles, kThreads, 0, stream>>>(bits, n, s.counts);
  check_launch("tile_counts");
  launch_scan(s, stream);
  move_tiles<true><<<s.tiles, kThreads, 0, stream>>>(src, bits, n, s.offsets, dst);
  check_launch("move_tiles");
}

size_t mask_compact(uint64_t seed, uint32_t t, double k, size_t begin, size_t n, const float* src,
                    uint8_t* bits, float* dst, Workspace& ws, cudaStream_t stream) {
  const uint64_t thr = checked_threshold(k, "mask_compact");
  if (n == 0) return 0;
  const TileScratch s = tile_scratch(n, ws);
  mask_tiles<<<s.tiles, kThreads, 0, stream>>>(seed, t, thr, begin, n, bits, s.counts);
  check_launch("mask_tiles");
  launch_scan(s, stream);
  move_tiles<false><<<s.tiles, kThreads, 0, stream>>>(src, bits, n, s.offsets, dst);
  check_launch("move_tiles");
  return download_total(s, stream);
}

void f32_to_f16(const float* src, size_t n, uint16_t* dst, cudaStream_t stream) {
  if (n == 0) return;
  f32_to_f16_kernel<<<stream_blocks(n, kThreads * 4), kThreads, 0, stream>>>(src, n, dst);
  check_launch("f32_to_f16_kernel");
}

void f16_to_f32(const uint16_t* src, size_t n, float* dst, cudaStream_t stream) {
  if (n == 0) return;
  f16_to_f32_kernel<<<stream_blocks(n, kThreads * 4), kThreads, 0, stream>>>(src, n, dst);
  check_launch("f16_to_f32_kernel");
}

}  // namespace clbo::cuda
