// One rank's device buffers for the two-phase compressed allreduce (docs/reference/algorithms.md
// §2): the error buffers that persist from call to call, and per-call scratch. Shared by the NCCL
// backend and the MPI backend's device path.
#pragma once
#include <cstddef>
#include <cstdint>

#include "clbo/cuda/runtime.hpp"

namespace clbo::cuda {

struct OnebitDeviceState {
  DeviceBuffer<float> worker_error;                    // n' elements
  DeviceBuffer<float> server_error;                    // c = n'/p elements
  DeviceBuffer<uint8_t> packed, pieces, server_signs;  // n'/8 bytes each
  DeviceBuffer<float> scales;                          // p worker + p server scales
  size_t n = 0;
  int p = 0;
  // Sizes everything for (n, p) and zeroes both error buffers.
  void reset(size_t n, int p);
  // Whether the buffers fit (n, p); callers reset() when not.
  bool sized_for(size_t n, int p) const;
};

}  // namespace clbo::cuda
