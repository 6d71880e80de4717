// MPI-native algorithms: DeepSpeed's gather-based compressed allreduce and the
// MPI_Allreduce baseline (see clbo/collectives/mpi.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "clbo/collectives/mpi.hpp"
#include "clbo/collectives/timing.hpp"
#include "clbo/core/error.hpp"
#include "clbo/kernels/onebit.hpp"
#include "clbo/plan/plan.hpp"

namespace clbo {

namespace {

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(fmt::format("mpi: {} failed (error code {})", what, rc));
}

int as_int(size_t v, const char* what) {
  if (v > static_cast<size_t>(INT32_MAX))
    throw Error(fmt::format("mpi: {} of {} exceeds what one MPI call can carry", what, v));
  return static_cast<int>(v);
}

}  // namespace

void mpi_compressed_allreduce_gather(MpiCommunicator& comm, OnebitState& state, float* buf,
                                     size_t n) {
  if (comm.options().check_headers)
    comm.agree(CallHeader::make("compressed_allreduce_gather", n, sizeof(float)));
  const int p = comm.size(), r = comm.rank();
  const size_t n_pad = clbo::onebit_padded_size(n, p);
  const size_t c = n_pad / static_cast<size_t>(p);
  const size_t piece = c / 8;
  if (state.n != n || state.p != p || state.worker_error.size() != n_pad ||
      state.server_error.size() != c)
    state.reset(n, p);
  if (n == 0) return;
  const int piece_i = as_int(piece, "a sign piece (bytes)");
  MPI_Comm mc = comm.comm();

  // 1. Worker error feedback and packing, exactly as compressed_allreduce does it.
  std::vector<uint8_t> packed(n_pad / 8);
  float worker_scale;
  {
    const KernelTimer kernel;
    worker_scale =
        kernels::rms_scale(kernels::ef_sumsq(buf, n, state.worker_error.data(), n_pad), n_pad);
    kernels::ef_sign_pack(buf, n, state.worker_error.data(), n_pad, worker_scale, packed.data());
  }

  // 2. p non-blocking gathers: root j collects piece j of every worker, and every worker's
  //    scale. All 2p are in flight at once; every rank posts them in the same order.
  std::vector<uint8_t> pieces(n_pad / 8);
  std::vector<float> worker_scales(static_cast<size_t>(p));
  std::vector<MPI_Request> reqs(2 * static_cast<size_t>(p));
  for (int j = 0; j < p; ++j)
    mpi_check(MPI_Igather(packed.data() + static_cast<size_t>(j) * piece, piece_i, MPI_BYTE,
                          j == r ? pieces.data() : nullptr, piece_i, MPI_BYTE, j, mc,
                          &reqs[static_cast<size_t>(j)]),
              "MPI_Igather (signs)");
  for (int j = 0; j < p; ++j)
    mpi_check(MPI_Igather(&worker_scale, 1, MPI_FLOAT, j == r ? worker_scales.data() : nullptr, 1,
                          MPI_FLOAT, j, mc, &reqs[static_cast<size_t>(p + j)]),
              "MPI_Igather (scales)");
  comm.wait_all(2 * p, reqs.data(), "the compressed allreduce's gathers");
  comm.count_sent(static_cast<uint64_t>(p - 1) * (piece + sizeof(float)), 2ull * (p - 1));

  // 3. Server step on this rank's chunk.
  std::vector<const uint8_t*> piece_ptrs(static_cast<size_t>(p));
  for (int j = 0; j < p; ++j) piece_ptrs[static_cast<size_t>(j)] = pieces.data() + j * piece;
  std::vector<uint8_t> server_signs(n_pad / 8);
  uint8_t* own = server_signs.data() + static_cast<size_t>(r) * piece;
  float server_scale;
  {
    const KernelTimer kernel;
    server_scale = kernels::server_step(piece_ptrs.data(), worker_scales.data(), p,
                                        state.server_error.data(), c, own);
  }

  // 4. MPI_Allgather of the server signs and scales.
  std::vector<float> server_scales(static_cast<size_t>(p));
  MPI_Request ag[2];
  mpi_check(MPI_Iallgather(MPI_IN_PLACE, piece_i, MPI_BYTE, server_signs.data(), piece_i, MPI_BYTE,
                           mc, &ag[0]),
            "MPI_Iallgather (signs)");
  mpi_check(
      MPI_Iallgather(&server_scale, 1, MPI_FLOAT, server_scales.data(), 1, MPI_FLOAT, mc, &ag[1]),
      "MPI_Iallgather (scales)");
  comm.wait_all(2, ag, "the compressed allreduce's allgathers");
  comm.count_sent(static_cast<uint64_t>(p - 1) * (piece + sizeof(float)), 2ull * (p - 1));

  // 5. Decompress chunk by chunk, dropping the padding.
  onebit_decompress(server_signs.data(), server_scales.data(), p, c, n, buf);
}

void mpi_allreduce_sum(MpiCommunicator& comm, float* buf, size_t n, DType wire) {
  if (wire != DType::kF32)
    throw Error(
        fmt::format("mpi_allreduce_sum: MPI_Allreduce has no {} sum; use "
                    "ring_allreduce_sum for an fp16 wire",
                    to_string(wire)));
  if (comm.options().check_headers) comm.agree(CallHeader::make("allreduce", n, sizeof(float)));
  const int p = comm.size();
  constexpr size_t kMaxCount = size_t{1} << 30;
  std::vector<MPI_Request> reqs;
  for (size_t off = 0; off < n; off += kMaxCount) {
    reqs.emplace_back();
    mpi_check(
        MPI_Iallreduce(MPI_IN_PLACE, buf + off, static_cast<int>(std::min(kMaxCount, n - off)),
                       MPI_FLOAT, MPI_SUM, comm.comm(), &reqs.back()),
        "MPI_Iallreduce");
  }
  comm.wait_all(static_cast<int>(reqs.size()), reqs.data(), "MPI_Iallreduce");
  if (p > 1) comm.count_sent(ring_bytes_per_rank(n, p, comm.rank(), sizeof(float)), 2ull * (p - 1));
}

}  // namespace clbo
