// GPU 1-bit compression kernels (contracts in clbo/cuda/onebit.hpp). Per-element fp32
// arithmetic uses __fadd_rn/__fmul_rn/__fsub_rn, which are never contracted into an FMA,
// so the bits match the CPU build (compiled with -ffp-contract=off) whatever nvcc's
// -fmad setting.
#include <stdexcept>
#include <string>

#include "clbo/core/error.hpp"
#include "clbo/cuda/onebit.hpp"
#include "common.cuh"

namespace clbo::cuda {
namespace {

using namespace detail;

// What the sign/pack pass signs.
enum PackMode : int {
  kWorker = 0,       // b = (i < n ? x_i : 0.0f) + e_i, as the worker's error feedback
  kServerVotes = 1,  // b = a_i recomputed from the p pieces and e_i (server pass 2)
};

struct ServerArgs {
  const uint8_t* pieces = nullptr;  // p pieces of piece_bytes each, back to back
  size_t piece_bytes = 0;
  const float* scales = nullptr;  // p worker scales (device)
  int p = 1;
};

// a_i = (Σ_j (bit_j,i ? s_j : −s_j)) · (1/p) + e_i, the sum in fp32 in order j = 0..p−1
// from 0.0f. `scales` points at shared memory.
__device__ inline float server_a(const ServerArgs& s, const float* scales, float inv_p, float e,
                                 size_t i) {
  const size_t byte = i >> 3;
  const unsigned shift = 7u - static_cast<unsigned>(i & 7);
  float votes = 0.0f;
  for (int j = 0; j < s.p; ++j) {
    const bool bit = (s.pieces[static_cast<size_t>(j) * s.piece_bytes + byte] >> shift) & 1u;
    votes = __fadd_rn(votes, bit ? scales[j] : -scales[j]);
  }
  return __fadd_rn(__fmul_rn(votes, inv_p), e);
}

// Copies the p worker scales to shared memory (dynamic, p floats).
__device__ inline float* load_scales(const ServerArgs& s) {
  extern __shared__ float shared_scales[];
  for (int j = threadIdx.x; j < s.p; j += blockDim.x) shared_scales[j] = s.scales[j];
  __syncthreads();
  return shared_scales;
}

// Pass 1 partials: partial[block] = Σ (x_i + e_i)² over this block's grid-stride elements.
__global__ void ef_sumsq_partials(const float* __restrict__ x, size_t n,
                                  const float* __restrict__ err, size_t n_pad,
                                  double* __restrict__ partials) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  double acc = 0.0;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Four independent loads in flight per thread before any arithmetic.
  for (; i + 3 * stride < n_pad; i += 4 * stride) {
    float b[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const size_t k = i + u * stride;
      b[u] = __fadd_rn(k < n ? x[k] : 0.0f, err[k]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) acc += static_cast<double>(b[u]) * static_cast<double>(b[u]);
  }
  for (; i < n_pad; i += stride) {
    const float b = __fadd_rn(i < n ? x[i] : 0.0f, err[i]);
    acc += static_cast<double>(b) * static_cast<double>(b);
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Server pass 1 partials: Σ a² with a as in server_a; nothing is written but the partials
// (pass 2 recomputes a from the same bytes, which moves p/8 bytes per element instead of
// the 8 that storing and reloading a would).
__global__ void server_sumsq_partials(ServerArgs s, const float* __restrict__ err, size_t c,
                                      double* __restrict__ partials) {
  const float* scales = load_scales(s);
  const float inv_p = 1.0f / static_cast<float>(s.p);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  double acc = 0.0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < c; i += stride) {
    const float a = server_a(s, scales, inv_p, err[i], i);
    acc += static_cast<double>(a) * static_cast<double>(a);
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// One block: Σ partials in index order, then the RMS scale over `len` elements.
__global__ void finalize_scale(const double* __restrict__ partials, size_t count, size_t len,
                               double* __restrict__ d_sumsq, float* __restrict__ d_scale) {
  const double sum = block_sum_partials(partials, count);
  if (threadIdx.x == 0) {
    if (d_sumsq) *d_sumsq = sum;
    if (d_scale) *d_scale = rms_scale_dev(sum, len);
  }
}

// Sign, error feedback and pack. Each warp handles tiles of 128 elements: four coalesced
// loads per lane, four ballots, and lanes 0..15 each write one byte of the tile's 16.
template <int kMode>
__global__ void sign_pack(const float* __restrict__ x, size_t n, float* __restrict__ err,
                          size_t len, const float* __restrict__ d_scale, float scale,
                          ServerArgs srv, uint8_t* __restrict__ packed) {
  const float* scales = kMode == kServerVotes ? load_scales(srv) : nullptr;
  const float inv_p = 1.0f / static_cast<float>(srv.p);
  const float s = d_scale ? *d_scale : scale;
  const int lane = threadIdx.x & 31;
  const size_t warps = static_cast<size_t>(gridDim.x) * kWarps;
  const size_t tiles = ceil_div(len, 128);
  const size_t bytes = len / 8;
  for (size_t tile = static_cast<size_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); tile < tiles;
       tile += warps) {
    const size_t base = tile * 128;
    float e[4], xv[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const size_t i = base + u * 32 + lane;
      e[u] = i < len ? err[i] : 0.0f;
      xv[u] = (kMode == kWorker && i < n) ? x[i] : 0.0f;
    }
    unsigned ballot[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const size_t i = base + u * 32 + lane;
      bool bit = false;
      if (i < len) {
        const float b =
            kMode == kWorker ? __fadd_rn(xv[u], e[u]) : server_a(srv, scales, inv_p, e[u], i);
        bit = b >= 0.0f;
        err[i] = __fsub_rn(b, bit ? s : -s);
      }
      ballot[u] = __ballot_sync(kFullMask, bit);
    }
    if (lane < 16) {
      const size_t byte = base / 8 + lane;
      const int w = lane >> 2;
      const unsigned word = w == 0   ? ballot[0]
                            : w == 1 ? ballot[1]
                            : w == 2 ? ballot[2]
                                     : ballot[3];
      if (byte < bytes) packed[byte] = ballot_byte(word, lane & 3);
    }
  }
}

// Unpack with scaling. Each warp expands tiles of 1024 elements (128 packed bytes): every
// lane loads 4 of the bytes, then each of 8 rounds shuffles to every lane the nibble of the 4
// elements it stores, so one store instruction writes 512 contiguous bytes (a float4 per
// lane when aligned). The earlier layout, 8 consecutive floats per lane (two float4 stores
// 32 B apart), reached 0.44 of the copy bandwidth on an H200 (results/gpu/README.md). The
// last n % 1024 elements go one per thread in the last block.
constexpr size_t kUnpackTile = 1024;

// 8 resident blocks of 256 threads (32 registers): at the 48 it took alone, the register
// file held 5, and the H200 reached 0.76 of the copy bandwidth with the warps it had.
template <bool kAligned>
__global__ void __launch_bounds__(kThreads, 8)
    unpack(const uint8_t* __restrict__ packed, size_t n, size_t chunk,
           const float* __restrict__ d_scales, float scale, float* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  const size_t tiles = n / kUnpackTile;
  const size_t warps = static_cast<size_t>(gridDim.x) * kWarps;
  for (size_t tile = static_cast<size_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5); tile < tiles;
       tile += warps) {
    const size_t base = tile * kUnpackTile;
    const uint8_t* bytes = packed + base / 8 + 4 * lane;
    const unsigned word = (unsigned{bytes[0]} << 24) | (unsigned{bytes[1]} << 16) |
                          (unsigned{bytes[2]} << 8) | unsigned{bytes[3]};
    // Chunk index of the tile's first element. A chunk of at least a tile is entered at most
    // once inside the tile, so one division per tile serves; shorter chunks divide per quad.
    size_t first_chunk = 0, next_chunk_at = 0;
    if (d_scales) {
      first_chunk = base / chunk;
      next_chunk_at = (first_chunk + 1) * chunk;
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int q = u * 32 + lane;  // this lane's quad (4 elements) in the tile
      const unsigned w = __shfl_sync(kFullMask, word, q >> 3);  // byte q/2 is in word q/8
      const unsigned byte = (w >> (8 * (3 - ((q >> 1) & 3)))) & 0xffu;
      const unsigned nibble = (q & 1) ? (byte & 0xfu) : (byte >> 4);  // element 4q+j: bit 3−j
      const size_t i = base + 4 * static_cast<size_t>(q);
      float s = scale;
      if (d_scales)
        s = d_scales[chunk >= kUnpackTile ? first_chunk + (i >= next_chunk_at) : i / chunk];
      const float4 v = make_float4((nibble & 8u) ? s : -s, (nibble & 4u) ? s : -s,
                                   (nibble & 2u) ? s : -s, (nibble & 1u) ? s : -s);
      if constexpr (kAligned) {
        *reinterpret_cast<float4*>(out + i) = v;
      } else {
        out[i] = v.x, out[i + 1] = v.y, out[i + 2] = v.z, out[i + 3] = v.w;
      }
    }
  }
  if (blockIdx.x == gridDim.x - 1)
    for (size_t i = tiles * kUnpackTile + threadIdx.x; i < n; i += blockDim.x) {
      const float s = d_scales ? d_scales[i / chunk] : scale;
      out[i] = ((packed[i / 8] >> (7 - i % 8)) & 1u) ? s : -s;
    }
}

unsigned unpack_blocks(size_t n) {
  return stream_blocks(ceil_div(n, kUnpackTile), kWarps);
}

void require_multiple_of_8(size_t len, const char* fn, const char* what) {
  if (len % 8 != 0)
    throw Error(std::string("clbo::cuda::") + fn + ": " + what + " = " + std::to_string(len) +
                " must be a multiple of 8");
}

unsigned pack_blocks(size_t len) {
  return stream_blocks(ceil_div(len, 128), kWarps);
}

// Pass 1 of the worker compression into ws partials, then the final reduction.
void worker_norm(const float* x, size_t n, const float* err, size_t n_pad, double* d_sumsq,
                 float* d_scale, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = reduce_blocks(n_pad);
  auto* partials = static_cast<double*>(ws.get(blocks * sizeof(double)));
  if (n_pad > 0) {
    ef_sumsq_partials<<<blocks, kThreads, 0, stream>>>(x, n, err, n_pad, partials);
    check_launch("ef_sumsq_partials");
  }
  finalize_scale<<<1, kThreads, 0, stream>>>(partials, n_pad > 0 ? blocks : 0, n_pad, d_sumsq,
                                             d_scale);
  check_launch("finalize_scale");
}

}  // namespace

void ef_sumsq(const float* x, size_t n, const float* err, size_t n_pad, double* d_sumsq,
              Workspace& ws, cudaStream_t stream) {
  worker_norm(x, n, err, n_pad, d_sumsq, nullptr, ws, stream);
}

void ef_sign_pack(const float* x, size_t n, float* err, size_t n_pad, float scale, uint8_t* packed,
                  cudaStream_t stream) {
  require_multiple_of_8(n_pad, "ef_sign_pack", "n_pad");
  if (n_pad == 0) return;
  sign_pack<kWorker><<<pack_blocks(n_pad), kThreads, 0, stream>>>(x, n, err, n_pad, nullptr, scale,
                                                                  ServerArgs{}, packed);
  check_launch("sign_pack");
}

void onebit_compress(const float* x, size_t n, float* err, size_t n_pad, uint8_t* packed,
                     float* d_scale, Workspace& ws, cudaStream_t stream) {
  require_multiple_of_8(n_pad, "onebit_compress", "n_pad");
  if (!d_scale) throw Error("clbo::cuda::onebit_compress: d_scale must point at device memory");
  worker_norm(x, n, err, n_pad, nullptr, d_scale, ws, stream);
  if (n_pad == 0) return;
  sign_pack<kWorker><<<pack_blocks(n_pad), kThreads, 0, stream>>>(x, n, err, n_pad, d_scale, 0.0f,
                                                                  ServerArgs{}, packed);
  check_launch("sign_pack");
}

void unpack_scale(const uint8_t* packed, size_t n, float scale, float* out, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = unpack_blocks(n);
  if (aligned16(out))
    unpack<true><<<blocks, kThreads, 0, stream>>>(packed, n, 8, nullptr, scale, out);
  else
    unpack<false><<<blocks, kThreads, 0, stream>>>(packed, n, 8, nullptr, scale, out);
  check_launch("unpack");
}

void unpack_scale_chunks(const uint8_t* packed, size_t n, size_t chunk, const float* d_scales,
                         float* out, cudaStream_t stream) {
  if (chunk == 0 || chunk % 8 != 0)
    throw Error("clbo::cuda::unpack_scale_chunks: chunk = " + std::to_string(chunk) +
                " must be a positive multiple of 8");
  if (n == 0) return;
  const unsigned blocks = unpack_blocks(n);
  if (aligned16(out))
    unpack<true><<<blocks, kThreads, 0, stream>>>(packed, n, chunk, d_scales, 0.0f, out);
  else
    unpack<false><<<blocks, kThreads, 0, stream>>>(packed, n, chunk, d_scales, 0.0f, out);
  check_launch("unpack");
}

void server_step(const uint8_t* pieces, const float* d_scales, int p, float* err, size_t c,
                 uint8_t* packed_out, float* d_scale_out, Workspace& ws, cudaStream_t stream) {
  require_multiple_of_8(c, "server_step", "c");
  if (p < 1) throw Error("clbo::cuda::server_step: p = " + std::to_string(p) + " must be >= 1");
  if (!d_scale_out) throw Error("clbo::cuda::server_step: d_scale_out must point at device memory");
  const ServerArgs srv{pieces, c / 8, d_scales, p};
  const size_t smem = static_cast<size_t>(p) * sizeof(float);
  const unsigned blocks = reduce_blocks(c);
  auto* partials = static_cast<double*>(ws.get(blocks * sizeof(double)));
  if (c > 0) {
    server_sumsq_partials<<<blocks, kThreads, smem, stream>>>(srv, err, c, partials);
    check_launch("server_sumsq_partials");
  }
  finalize_scale<<<1, kThreads, 0, stream>>>(partials, c > 0 ? blocks : 0, c, nullptr, d_scale_out);
  check_launch("finalize_scale");
  if (c == 0) return;
  sign_pack<kServerVotes><<<pack_blocks(c), kThreads, smem, stream>>>(
      nullptr, 0, err, c, d_scale_out, 0.0f, srv, packed_out);
  check_launch("sign_pack");
}

}  // namespace clbo::cuda
