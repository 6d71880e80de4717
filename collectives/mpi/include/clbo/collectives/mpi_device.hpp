// The MPI backend's device path (built when CUDA is): DeepSpeed's MPI compressed allreduce
// on a GPU buffer, the dataflow of deepspeed/runtime/comm/mpi.py with clbo's fused kernels.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "clbo/collectives/mpi.hpp"
#include "clbo/cuda/onebit_state.hpp"
#include "clbo/cuda/runtime.hpp"

namespace clbo {

// Compression, server step and unpack run on the GPU (clbo/cuda/onebit.hpp). The p
// MPI_Igather and the MPI_Allgather hand device memory straight to MPI when
// comm.cuda_aware(), and otherwise stage through host memory (copy out, MPI, copy back), as
// DeepSpeed does without CUDA-aware MPI. `stream` is synchronized before each MPI step.
// Same bytes on the wire as mpi_compressed_allreduce_gather, and the same result whenever
// the device scales equal the CPU's (bit-identical kernels otherwise).
void mpi_compressed_allreduce_gather_device(MpiCommunicator& comm, cuda::OnebitDeviceState& state,
                                            float* d_buf, size_t n, cuda::Workspace& ws,
                                            cudaStream_t stream = nullptr);

}  // namespace clbo
