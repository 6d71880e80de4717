// Collective algorithms built on a Communicator. Each one's exact per-rank traffic is
// described by the matching CommPlan (plan.hpp); tests check the two agree byte for byte.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "clbo/collectives/communicator.hpp"
#include "clbo/core/schedule.hpp"

namespace clbo {

// Ring allreduce (reduce-scatter then allgather) summing `n` floats in place. The buffer is
// split into p contiguous chunks, chunk j = [j·n/p, (j+1)·n/p) with integer division, and
// each rank sends its partial chunk to rank+1. Chunk j is summed left to right in rank
// order j, j+1, …, j+p−1 (mod p) by the rank that receives it last, and the allgather
// phase copies each final chunk to every rank, so all ranks end bit-identical. Empty
// chunks (n < p) are not sent. With wire = kF16 each transfer carries fp16 values, every
// rank's own contribution is rounded to fp16 and every partial sum is rounded to fp16 as
// NCCL does for fp16 buffers; the result stays fp32 in `buf` (every element then holds an
// fp16-representable value). p = 1 and n = 0 are no-ops (no fp16 rounding either).
// Any wire type other than kF32/kF16 is an error.
void ring_allreduce_sum(Communicator& comm, float* buf, size_t n, DType wire = DType::kF32);
// Sum followed by multiplication with 1.0f/p (in fp32; exact division only for p = 2^k).
void ring_allreduce_mean(Communicator& comm, float* buf, size_t n, DType wire = DType::kF32);

// Per-rank state of the 1-bit compressed allreduce: worker error over n' elements and the
// server error over this rank's chunk c = n'/p. Both start at zero.
struct OnebitState {
  std::vector<float> worker_error;  // n' elements
  std::vector<float> server_error;  // c elements
  size_t n = 0;                     // the unpadded length the state was sized for
  int p = 0;
  void reset(size_t n, int p);  // sizes and zeroes both buffers
  void zero();                  // zeroes both buffers, keeping sizes
};

// The two-phase 1-bit compressed allreduce of docs/reference/algorithms.md §2, in place on
// buf[0..n). Resizes `state` on first use (or when n or p changed). Output: the same n floats on
// every rank, bit-identical. At p = 1 it still compresses (worker then server step).
void compressed_allreduce(Communicator& comm, OnebitState& state, float* buf, size_t n);

// Step 5 of §2, shared by every backend's compressed allreduce: out[j·c + i] =
// ±server_scales[j] from the gathered server signs (p chunks of c/8 bytes), stopping at n
// so the padding is dropped. Same bytes and scales give bit-identical outputs everywhere.
void onebit_decompress(const uint8_t* server_signs, const float* server_scales, int p, size_t c,
                       size_t n, float* out);

// Sparse allreduce over the elements selected by `mask` (a bitmap over buf[0..n) in the
// bit order of kernels/mask.hpp, identical on every rank): compact, ring-allreduce the
// compacted values (summed, on the given wire type), scatter back. Unselected elements are
// untouched. Returns the compacted count. Ranks whose masks select different counts fail
// with the backend's message-size error.
size_t sparse_allreduce_sum(Communicator& comm, float* buf, size_t n, const uint8_t* mask,
                            DType wire = DType::kF32);

// Top-k allgather: each rank selects its k largest-|x| elements (kernels::topk_select, ties
// to the lower index), allgathers the (uint32 index, fp32 value) pairs as one message of
// 8·k bytes (k indices, then k values), and every rank writes the mean of the sparse
// contributions into buf: out_i = (0.0f + Σ_{j=0..p−1} v_{j,i}) · (1.0f/p), summed in rank
// order, zero where no rank selected element i. All ranks end bit-identical. k > n is an
// InputError; NaN inputs are the caller's to reject.
void topk_allgather_mean(Communicator& comm, float* buf, size_t n, size_t k);

}  // namespace clbo
