// The MPI backend's device path (DeepSpeed's MPI variant on GPU buffers) against the host
// path, under mpirun: bit-identical outputs over several steps and the same wire bytes, with
// host staging and, where the MPI library is CUDA-aware, with device pointers handed to MPI.
// Skips on every rank when there is no GPU.
#include <gtest/gtest.h>

#include <vector>

#include "../kernels/kernel_test_util.hpp"
#include "clbo/collectives/mpi_device.hpp"
#include "clbo/cuda/runtime.hpp"

namespace clbo {
namespace {

using kernels::testing::bitwise_equal;
using kernels::testing::random_floats;

TEST(MpiDevice, GatherVariantOnDeviceMatchesHost) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  std::vector<MpiOptions::CudaAware> modes = {MpiOptions::CudaAware::kOff};
  if (mpi_library_cuda_support()) modes.push_back(MpiOptions::CudaAware::kOn);
  for (auto mode : modes) {
    MpiOptions opt;
    opt.cuda_aware = mode;
    MpiCommunicator comm(MPI_COMM_WORLD, opt);
    cuda::check(cudaSetDevice(comm.rank() % cuda::device_count()), "cudaSetDevice");
    const size_t n = 100003;
    OnebitState host_state;
    cuda::OnebitDeviceState dev_state;
    cuda::Workspace ws;
    for (int t = 0; t < 3; ++t) {
      auto x = random_floats(n, 900 + 17 * static_cast<uint64_t>(comm.rank()) + t);
      cuda::DeviceBuffer<float> d;
      d.upload(x);
      comm.reset_counters();
      mpi_compressed_allreduce_gather_device(comm, dev_state, d.data(), n, ws);
      cuda::check(cudaDeviceSynchronize(), "sync");
      const uint64_t device_bytes = comm.bytes_sent();
      comm.reset_counters();
      mpi_compressed_allreduce_gather(comm, host_state, x.data(), n);
      EXPECT_EQ(comm.bytes_sent(), device_bytes);
      EXPECT_TRUE(bitwise_equal(d.download(), x))
          << "step " << t << " cuda_aware " << comm.cuda_aware();
    }
  }
}

}  // namespace
}  // namespace clbo
