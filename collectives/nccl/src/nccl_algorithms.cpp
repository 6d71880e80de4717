// Device-buffer algorithms over NCCL (see clbo/collectives/nccl.hpp).
#include <fmt/format.h>

#include "clbo/collectives/nccl.hpp"
#include "clbo/core/error.hpp"
#include "clbo/cuda/mask.hpp"
#include "clbo/cuda/onebit.hpp"
#include "clbo/kernels/onebit.hpp"

namespace clbo {

void nccl_compressed_allreduce(NcclCommunicator& comm, DeviceOnebitState& st, float* d_buf,
                               size_t n) {
  const int p = comm.size(), r = comm.rank();
  if (comm.options().check_headers) comm.agree("compressed_allreduce", n, sizeof(float));
  const size_t n_pad = clbo::onebit_padded_size(n, p);
  const size_t c = n_pad / static_cast<size_t>(p), piece = c / 8;
  if (!st.sized_for(n, p)) st.reset(n, p);
  if (n == 0) return;
  cudaStream_t s = comm.stream();
  cuda::Workspace& ws = comm.workspace();
  float* worker_scales = st.scales.data();
  float* server_scales = st.scales.data() + p;

  // 1. Worker compression; this rank's scale lands in its own slot of the allgather buffer.
  cuda::onebit_compress(d_buf, n, st.worker_error.data(), n_pad, st.packed.data(),
                        worker_scales + r, ws, s);
  // 2. Sign pieces all-to-all and worker scales allgather, in one NCCL group.
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  comm.alltoall_async(st.packed.data(), st.pieces.data(), piece);
  comm.allgather_async(worker_scales + r, worker_scales, sizeof(float));
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  // 3. Fused server step on this rank's chunk, written in place into the gather buffer.
  uint8_t* own = st.server_signs.data() + static_cast<size_t>(r) * piece;
  cuda::server_step(st.pieces.data(), worker_scales, p, st.server_error.data(), c, own,
                    server_scales + r, ws, s);
  // 4. Server signs and scales to every rank.
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  comm.allgather_async(own, st.server_signs.data(), piece);
  comm.allgather_async(server_scales + r, server_scales, sizeof(float));
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  // 5. Fused unpack of every chunk with its scale, truncated to n.
  cuda::unpack_scale_chunks(st.server_signs.data(), n, c, server_scales, d_buf, s);
}

size_t nccl_sparse_allreduce_sum(NcclCommunicator& comm, float* d_buf, size_t n,
                                 const uint8_t* d_mask, DType wire, float* d_scratch) {
  if (wire != DType::kF32 && wire != DType::kF16)
    throw Error(fmt::format("nccl sparse allreduce: wire type {} is not supported (fp32 or fp16)",
                            to_string(wire)));
  cudaStream_t s = comm.stream();
  cuda::Workspace& ws = comm.workspace();
  // At p = 1 the sum is the identity, with no fp16 rounding, as for ring_allreduce_sum.
  if (comm.size() == 1) return cuda::mask_count(d_mask, n, ws, s);
  const size_t k = cuda::compact(d_buf, d_mask, n, d_scratch, ws, s);
  if (comm.options().check_headers) comm.agree("sparse_allreduce", k, dtype_bytes(wire));
  if (wire == DType::kF32) {
    comm.allreduce_sum_async(d_scratch, d_scratch, k, DType::kF32);
  } else {
    auto* half = static_cast<uint16_t*>(ws.get(k * sizeof(uint16_t) + 1));
    cuda::f32_to_f16(d_scratch, k, half, s);
    comm.allreduce_sum_async(half, half, k, DType::kF16);
    cuda::f16_to_f32(half, k, d_scratch, s);
  }
  cuda::scatter(d_scratch, d_mask, n, d_buf, ws, s);
  return k;
}

}  // namespace clbo
