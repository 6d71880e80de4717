// DeepSpeed's MPI compressed allreduce on device buffers (clbo/collectives/mpi_device.hpp).
#include <fmt/format.h>

#include <vector>

#include "clbo/collectives/mpi_device.hpp"
#include "clbo/core/error.hpp"
#include "clbo/cuda/onebit.hpp"
#include "clbo/kernels/onebit.hpp"

namespace clbo {

namespace {

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(fmt::format("mpi: {} failed (error code {})", what, rc));
}

void to_host(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), "stage to host");
  cuda::check(cudaStreamSynchronize(s), "stage to host");
}

void to_device(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), "stage to device");
}

}  // namespace

void mpi_compressed_allreduce_gather_device(MpiCommunicator& comm, cuda::OnebitDeviceState& st,
                                            float* d_buf, size_t n, cuda::Workspace& ws,
                                            cudaStream_t stream) {
  if (comm.options().check_headers)
    comm.agree(CallHeader::make("compressed_allreduce_gather", n, sizeof(float)));
  const int p = comm.size(), r = comm.rank();
  const size_t n_pad = clbo::onebit_padded_size(n, p);
  const size_t c = n_pad / static_cast<size_t>(p), piece = c / 8;
  if (!st.sized_for(n, p)) st.reset(n, p);
  if (n == 0) return;
  if (piece > static_cast<size_t>(INT32_MAX))
    throw Error(fmt::format("mpi: a sign piece of {} bytes exceeds one MPI call", piece));
  const int piece_i = static_cast<int>(piece);
  MPI_Comm mc = comm.comm();
  const bool direct = comm.cuda_aware();
  float* worker_scales = st.scales.data();
  float* server_scales = st.scales.data() + p;

  // 1. Worker compression on the GPU.
  cuda::onebit_compress(d_buf, n, st.worker_error.data(), n_pad, st.packed.data(),
                        worker_scales + r, ws, stream);
  cuda::check(cudaStreamSynchronize(stream), "compress");

  // 2. p non-blocking gathers, from device memory or from host copies.
  std::vector<uint8_t> h_packed, h_pieces;
  std::vector<float> h_scales;
  const uint8_t* packed = st.packed.data();
  uint8_t* pieces = st.pieces.data();
  const float* my_scale = worker_scales + r;
  float* scales = worker_scales;
  if (!direct) {
    h_packed.resize(n_pad / 8), h_pieces.resize(n_pad / 8), h_scales.resize(static_cast<size_t>(p));
    to_host(h_packed.data(), st.packed.data(), n_pad / 8, stream);
    to_host(&h_scales[static_cast<size_t>(r)], worker_scales + r, sizeof(float), stream);
    packed = h_packed.data(), pieces = h_pieces.data();
    my_scale = &h_scales[static_cast<size_t>(r)], scales = h_scales.data();
  }
  std::vector<MPI_Request> reqs(2 * static_cast<size_t>(p));
  for (int j = 0; j < p; ++j)
    mpi_check(MPI_Igather(packed + static_cast<size_t>(j) * piece, piece_i, MPI_BYTE,
                          j == r ? pieces : nullptr, piece_i, MPI_BYTE, j, mc,
                          &reqs[static_cast<size_t>(j)]),
              "MPI_Igather (signs)");
  // The own scale already sits in its slot of the receive buffer: the root gathers in place.
  for (int j = 0; j < p; ++j)
    mpi_check(MPI_Igather(j == r ? MPI_IN_PLACE : my_scale, 1, MPI_FLOAT, j == r ? scales : nullptr,
                          1, MPI_FLOAT, j, mc, &reqs[static_cast<size_t>(p + j)]),
              "MPI_Igather (scales)");
  comm.wait_all(2 * p, reqs.data(), "the compressed allreduce's gathers");
  comm.count_sent(static_cast<uint64_t>(p - 1) * (piece + sizeof(float)), 2ull * (p - 1));
  if (!direct) {
    to_device(st.pieces.data(), h_pieces.data(), n_pad / 8, stream);
    to_device(worker_scales, h_scales.data(), sizeof(float) * p, stream);
  }

  // 3. Fused server step on the GPU, into this rank's slot of the gather buffers.
  uint8_t* own = st.server_signs.data() + static_cast<size_t>(r) * piece;
  cuda::server_step(st.pieces.data(), worker_scales, p, st.server_error.data(), c, own,
                    server_scales + r, ws, stream);
  cuda::check(cudaStreamSynchronize(stream), "server step");

  // 4. MPI_Allgather of the server signs and scales, in place.
  std::vector<uint8_t> h_signs;
  std::vector<float> h_server_scales;
  uint8_t* signs = st.server_signs.data();
  float* sscales = server_scales;
  if (!direct) {
    h_signs.resize(n_pad / 8), h_server_scales.resize(static_cast<size_t>(p));
    to_host(h_signs.data() + static_cast<size_t>(r) * piece, own, piece, stream);
    to_host(&h_server_scales[static_cast<size_t>(r)], server_scales + r, sizeof(float), stream);
    signs = h_signs.data(), sscales = h_server_scales.data();
  }
  MPI_Request ag[2];
  mpi_check(MPI_Iallgather(MPI_IN_PLACE, piece_i, MPI_BYTE, signs, piece_i, MPI_BYTE, mc, &ag[0]),
            "MPI_Iallgather (signs)");
  mpi_check(MPI_Iallgather(MPI_IN_PLACE, 1, MPI_FLOAT, sscales, 1, MPI_FLOAT, mc, &ag[1]),
            "MPI_Iallgather (scales)");
  comm.wait_all(2, ag, "the compressed allreduce's allgathers");
  comm.count_sent(static_cast<uint64_t>(p - 1) * (piece + sizeof(float)), 2ull * (p - 1));
  if (!direct) {
    to_device(st.server_signs.data(), h_signs.data(), n_pad / 8, stream);
    to_device(server_scales, h_server_scales.data(), sizeof(float) * p, stream);
  }

  // 5. Fused unpack of every chunk on the GPU.
  cuda::unpack_scale_chunks(st.server_signs.data(), n, c, server_scales, d_buf, stream);
}

}  // namespace clbo
