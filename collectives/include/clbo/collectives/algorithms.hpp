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
// each rank sends its partial chunk to rank+1. With wire = kF16 each transfer carries fp16
// values and every partial sum is rounded to fp16 as NCCL does for fp16 buffers; the
// result stays fp32 in `buf`. All ranks end bit-identical. p = 1 is a no-op.
void ring_allreduce_sum(Communicator& comm, float* buf, size_t n, DType wire = DType::kF32);
// Sum followed by multiplication with 1/p (in fp32).
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

// The two-phase 1-bit compressed allreduce of algorithms.md §2, in place on buf[0..n).
// Resizes `state` on first use (or when n or p changed). Output: the same n floats on every
// rank, bit-identical. At p = 1 it still compresses (worker then server step).
void compressed_allreduce(Communicator& comm, OnebitState& state, float* buf, size_t n);

// Sparse allreduce over the elements selected by `mask` (a bitmap over buf[0..n) in the
// bit order of kernels/mask.hpp, identical on every rank): compact, ring-allreduce the
// compacted values (summed, on the given wire type), scatter back. Unselected elements are
// untouched. Returns the compacted count.
size_t sparse_allreduce_sum(Communicator& comm, float* buf, size_t n, const uint8_t* mask,
                            DType wire = DType::kF32);

// Top-k allgather: each rank selects its k largest-|x| elements, allgathers the (uint32
// index, fp32 value) pairs, and every rank writes the mean of the sparse contributions
// into buf (zero where no rank selected an element). Summation order is rank 0..p−1.
void topk_allgather_mean(Communicator& comm, float* buf, size_t n, size_t k);

}  // namespace clbo
