// Mask-driven sparse allreduce and the top-k allgather compressor.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/collectives/timing.hpp"
#include "clbo/core/error.hpp"
#include "clbo/kernels/mask.hpp"
#include "clbo/kernels/topk.hpp"

namespace clbo {

size_t sparse_allreduce_sum(Communicator& comm, float* buf, size_t n, const uint8_t* mask,
                            DType wire) {
  std::vector<float> compacted;
  size_t count;
  {
    const KernelTimer kernel;
    count = kernels::mask_count(mask, n);
    compacted.resize(count);
    kernels::compact(buf, mask, n, compacted.data());
  }
  ring_allreduce_sum(comm, compacted.data(), count, wire);
  {
    const KernelTimer kernel;
    kernels::scatter(compacted.data(), mask, n, buf);
  }
  return count;
}

void topk_allgather_mean(Communicator& comm, float* buf, size_t n, size_t k) {
  if (k > n) {
    throw InputError("topk_allgather_mean", "k", std::to_string(k),
                     "must not exceed the buffer length " + std::to_string(n));
  }
  if (k > UINT32_MAX || n > static_cast<size_t>(UINT32_MAX) + 1) {
    throw InputError("topk_allgather_mean", "n", std::to_string(n),
                     "indices travel as uint32, so the buffer must have at most 2^32 elements");
  }
  const int p = comm.size();
  // One message per rank: k uint32 indices, then k fp32 values (8·k bytes).
  const size_t msg = 8 * k;
  std::vector<uint8_t> own(msg), all(msg * static_cast<size_t>(p));
  {
    std::vector<uint32_t> idx(k);
    std::vector<float> val(k);
    kernels::topk_select(buf, n, k, idx.data(), val.data());
    if (k > 0) {
      std::memcpy(own.data(), idx.data(), 4 * k);
      std::memcpy(own.data() + 4 * k, val.data(), 4 * k);
    }
  }
  comm.allgather(own.data(), all.data(), msg);

  std::fill(buf, buf + n, 0.0f);
  for (int j = 0; j < p; ++j) {
    const uint8_t* block = all.data() + static_cast<size_t>(j) * msg;
    for (size_t i = 0; i < k; ++i) {
      uint32_t index;
      float value;
      std::memcpy(&index, block + 4 * i, 4);
      std::memcpy(&value, block + 4 * k + 4 * i, 4);
      if (index >= n) {
        throw Error("topk_allgather_mean: rank " + std::to_string(j) + " sent index " +
                    std::to_string(index) + " outside the buffer of " + std::to_string(n) +
                    " elements (do all ranks pass the same n?)");
      }
      buf[index] += value;
    }
  }
  const float inv_p = 1.0f / static_cast<float>(p);
  for (size_t i = 0; i < n; ++i) buf[i] *= inv_p;
}

}  // namespace clbo
