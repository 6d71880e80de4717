// Device helpers shared by the .cu files: launch geometry, deterministic block reductions,
// bit packing in clbo's MSB-first order, and 8-float loads/stores.
//
// Determinism: every reduction has a grid size that depends only on the element count
// (never on the device's SM count) and combines per-block partials in index order, so the
// same input gives the same double on every GPU and every run.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace clbo::cuda::detail {

constexpr int kThreads = 256;  // threads per block for every kernel here
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;
// Reductions use at most this many blocks (and so this many partials). Enough resident
// threads to saturate HBM on an H200 (132 SMs × 2048 threads ≈ 1056 such blocks).
constexpr size_t kMaxReduceBlocks = 1024;
// Streaming kernels cap their grid here and loop (grid-stride) beyond it.
constexpr size_t kMaxGrid = 8192;

__host__ __device__ inline size_t ceil_div(size_t a, size_t b) {
  return (a + b - 1) / b;
}

// Blocks for a reduction over n elements: about 8 elements per thread, at most
// kMaxReduceBlocks, at least 1. A pure function of n.
inline unsigned reduce_blocks(size_t n) {
  size_t b = ceil_div(n, size_t{kThreads} * 8);
  if (b > kMaxReduceBlocks) b = kMaxReduceBlocks;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

inline unsigned stream_blocks(size_t work_items, size_t items_per_block) {
  size_t b = ceil_div(work_items, items_per_block);
  if (b > kMaxGrid) b = kMaxGrid;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

// Sum of v over the block, valid in thread 0. Fixed shuffle tree, then warp totals in
// warp order: deterministic for a fixed blockDim. All threads must call it.
template <class T>
__device__ T block_sum(T v) {
  __shared__ T warp_totals[kWarps];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(kFullMask, v, off);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  T total = T(0);
  if (threadIdx.x == 0)
    for (int w = 0; w < kWarps; ++w) total += warp_totals[w];
  __syncthreads();  // warp_totals may be reused by a following call
  return total;
}

// Σ partials[0..count) by one block, in a fixed order; valid in thread 0.
__device__ inline double block_sum_partials(const double* partials, size_t count) {
  double v = 0.0;
  for (size_t i = threadIdx.x; i < count; i += blockDim.x) v += partials[i];
  return block_sum(v);
}

// kernels::rms_scale on the device: (float)sqrt(sumsq / L), 0 when L = 0. Double sqrt and
// division are correctly rounded on the GPU as on the CPU.
__device__ inline float rms_scale_dev(double sumsq, size_t len) {
  if (len == 0) return 0.0f;
  return static_cast<float>(sqrt(sumsq / static_cast<double>(len)));
}

// The byte of packed signs for 8 elements whose bits are b0 (first) … b7, MSB first.
__device__ inline uint8_t pack8(const bool (&bits)[8]) {
  unsigned byte = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) byte |= static_cast<unsigned>(bits[j]) << (7 - j);
  return static_cast<uint8_t>(byte);
}

// Byte `b` (0..3) of a warp ballot in clbo's order. __ballot_sync puts lane l in bit l
// (LSB = lane 0), but clbo wants the first element in the MSB: take the 8 lanes of byte b
// and reverse them with __brev.
__device__ inline uint8_t ballot_byte(unsigned ballot, int b) {
  return static_cast<uint8_t>(__brev((ballot >> (8 * b)) & 0xffu) >> 24);
}

inline bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

}  // namespace clbo::cuda::detail
