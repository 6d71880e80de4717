// Ring allreduce (algorithms.hpp): reduce-scatter then allgather around r → r+1.
#include <cstdint>
#include <string>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/core/error.hpp"
#include "clbo/kernels/half.hpp"
#include "clbo/plan/plan.hpp"

namespace clbo {

namespace {

struct Chunk {
  size_t begin = 0, len = 0;
};

Chunk chunk_of(size_t n, int p, int j) {
  j = (j % p + p) % p;
  const size_t b = ring_chunk_begin(n, p, j);
  return {b, ring_chunk_begin(n, p, j + 1) - b};
}

// One ring step. Empty chunks (n < p) are never sent, matching the plan; the pairing stays
// deadlock-free because a lone send or recv cannot close a cycle of blocked senders.
void exchange(Communicator& comm, int next, const void* out, size_t out_bytes, int prev, void* in,
              size_t in_bytes) {
  if (out_bytes > 0 && in_bytes > 0) {
    comm.sendrecv(next, out, out_bytes, prev, in, in_bytes, kTagRing);
  } else if (out_bytes > 0) {
    comm.send(next, out, out_bytes, kTagRing);
  } else if (in_bytes > 0) {
    comm.recv(prev, in, in_bytes, kTagRing);
  }
}

float round_f16(float x) {
  return kernels::f16_to_f32(kernels::f32_to_f16(x));
}

void ring_f32(Communicator& comm, float* buf, size_t n) {
  const int p = comm.size(), r = comm.rank(), next = (r + 1) % p, prev = (r - 1 + p) % p;
  std::vector<float> incoming(chunk_of(n, p, p - 1).len);  // the last chunk is the longest
  for (int s = 0; s < p - 1; ++s) {
    const Chunk out = chunk_of(n, p, r - s), in = chunk_of(n, p, r - s - 1);
    exchange(comm, next, buf + out.begin, out.len * 4, prev, incoming.data(), in.len * 4);
    // Partial sum from the ranks behind first, own value last: chunk j is summed left to
    // right in rank order j, j+1, …, j+p−1 (mod p).
    for (size_t i = 0; i < in.len; ++i) buf[in.begin + i] = incoming[i] + buf[in.begin + i];
  }
  for (int s = 0; s < p - 1; ++s) {
    const Chunk out = chunk_of(n, p, r + 1 - s), in = chunk_of(n, p, r - s);
    exchange(comm, next, buf + out.begin, out.len * 4, prev, buf + in.begin, in.len * 4);
  }
}

void ring_f16(Communicator& comm, float* buf, size_t n) {
  const int p = comm.size(), r = comm.rank(), next = (r + 1) % p, prev = (r - 1 + p) % p;
  const size_t longest = chunk_of(n, p, p - 1).len;
  std::vector<uint16_t> outgoing(longest), incoming(longest);
  for (int s = 0; s < p - 1; ++s) {
    const Chunk out = chunk_of(n, p, r - s), in = chunk_of(n, p, r - s - 1);
    kernels::f32_to_f16(buf + out.begin, out.len, outgoing.data());
    exchange(comm, next, outgoing.data(), out.len * 2, prev, incoming.data(), in.len * 2);
    // The fp16 sum of two fp16 values, as NCCL's half reduction computes it: the fp32 sum
    // rounded to fp16 equals the correctly rounded fp16 sum (24 ≥ 2·11 + 2 bits, so the
    // double rounding is innocuous).
    for (size_t i = 0; i < in.len; ++i) {
      float& x = buf[in.begin + i];
      x = round_f16(kernels::f16_to_f32(incoming[i]) + round_f16(x));
    }
  }
  for (int s = 0; s < p - 1; ++s) {
    const Chunk out = chunk_of(n, p, r + 1 - s), in = chunk_of(n, p, r - s);
    kernels::f32_to_f16(buf + out.begin, out.len, outgoing.data());  // exact: already fp16
    exchange(comm, next, outgoing.data(), out.len * 2, prev, incoming.data(), in.len * 2);
    kernels::f16_to_f32(incoming.data(), in.len, buf + in.begin);
  }
}

}  // namespace

void ring_allreduce_sum(Communicator& comm, float* buf, size_t n, DType wire) {
  if (wire != DType::kF32 && wire != DType::kF16) {
    throw Error(std::string("ring_allreduce_sum: the wire type must be fp32 or fp16, not ") +
                to_string(wire));
  }
  if (comm.size() == 1 || n == 0) return;
  if (wire == DType::kF32) {
    ring_f32(comm, buf, n);
  } else {
    ring_f16(comm, buf, n);
  }
}

void ring_allreduce_mean(Communicator& comm, float* buf, size_t n, DType wire) {
  ring_allreduce_sum(comm, buf, n, wire);
  const float inv_p = 1.0f / static_cast<float>(comm.size());
  for (size_t i = 0; i < n; ++i) buf[i] *= inv_p;
}

}  // namespace clbo
