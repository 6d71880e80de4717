// The `nccl` backend: one GPU per rank, DEVICE buffers.
//
// Unlike the `local` and `mpi` backends, every buffer passed to an NcclCommunicator (and to
// the nccl_* algorithms below) is device memory on the communicator's GPU. The generic
// host algorithms of algorithms.hpp therefore do not run on it; the device algorithms here
// implement the same semantics with the GPU kernels of clbo/cuda/*.hpp.
//
// Bootstrap: every rank needs the same ncclUniqueId. One process per GPU gets it from rank
// 0 over MPI (nccl_id_via_mpi in the benchmark, MPI_Bcast) or over a shared file
// (nccl_id_via_file); a single process driving all GPUs of a node uses ncclCommInitAll
// (run_nccl_single_process), one thread per GPU.
//
// Ordering: send() and recv() are blocking (they synchronize the stream), and NCCL pairs
// point-to-point calls only when both sides are posted together, so two ranks that both
// send() first would deadlock. sendrecv(), alltoall() and allgather() are grouped
// (ncclGroupStart/End) and safe in any pattern; clbo's algorithms use only those. Tags are
// ignored: NCCL matches point-to-point calls between two ranks by their order.
//
// Byte counting: bytes_sent() counts what this rank sends to other ranks: (p−1)·block for
// all-to-all and allgather, the ring's bytes for ncclAllReduce (NCCL's internal choice of
// ring or tree is not visible).
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "clbo/collectives/communicator.hpp"
#include "clbo/core/schedule.hpp"
#include "clbo/cuda/onebit_state.hpp"
#include "clbo/cuda/runtime.hpp"

namespace clbo {

// Throws clbo::Error("nccl: <what>: <NCCL error string>") unless r is ncclSuccess.
void nccl_check(ncclResult_t r, const char* what);

// "2.28.9" (the library actually loaded).
std::string nccl_library_version();

// A fresh id (call on one rank only, then share it).
ncclUniqueId nccl_unique_id();

// File-store bootstrap: rank 0 creates an id and writes it atomically to `path`; the other
// ranks wait up to timeout_s for the file and read it. Use a path unique to the job.
ncclUniqueId nccl_id_via_file(const std::string& path, int rank, double timeout_s = 60.0);

struct NcclOptions {
  // Exchange a small header (op, sizes) before each alltoall/allgather and algorithm call,
  // so mismatched sizes fail every rank with a clear error instead of hanging NCCL. Costs
  // one tiny allgather and a stream synchronization per call.
  bool check_headers = true;
};

class NcclCommunicator final : public Communicator {
 public:
  // One rank of `size`, joining the clique `id` on CUDA device `device`. Throws a clear
  // clbo::Error when there is no usable CUDA device.
  NcclCommunicator(int rank, int size, const ncclUniqueId& id, int device,
                   NcclOptions options = {});
  // Wraps (without owning) a communicator made by ncclCommInitAll for `device`.
  NcclCommunicator(ncclComm_t comm, int device, NcclOptions options = {});
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "nccl"; }

  void send(int peer, const void* d_data, size_t bytes, int tag) override;
  void recv(int peer, void* d_data, size_t bytes, int tag) override;
  void sendrecv(int dst, const void* d_send, size_t send_bytes, int src, void* d_recv,
                size_t recv_bytes, int tag) override;
  void alltoall(const void* d_send, void* d_recv, size_t bytes_per_rank) override;
  void allgather(const void* d_send, void* d_recv, size_t bytes_per_rank) override;
  void barrier() override;

  // Asynchronous device collectives on stream(); the Communicator overrides above are these
  // plus a stream synchronization.
  void alltoall_async(const void* d_send, void* d_recv, size_t bytes_per_rank);
  void allgather_async(const void* d_send, void* d_recv, size_t bytes_per_rank);
  // Sum of `count` elements of dtype (kF32 or kF16) in place or out of place.
  void allreduce_sum_async(const void* d_in, void* d_out, size_t count, DType dtype);

  // Every rank passes (op, count, elem_bytes, config); if any differs anywhere, every rank
  // throws the same clbo::Error naming the field and both values. Synchronizes.
  void agree(const std::string& op, uint64_t count, uint64_t elem_bytes, uint64_t config = 0);

  void synchronize();
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }
  ncclComm_t comm() const { return comm_; }
  cuda::Workspace& workspace() { return ws_; }
  NcclOptions& options() { return options_; }

  uint64_t bytes_sent() const { return bytes_sent_; }
  void count_sent(uint64_t bytes) { bytes_sent_ += bytes; }
  void reset_counters() { bytes_sent_ = 0; }

 private:
  void init_stream();
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int rank_ = 0, size_ = 1, device_ = 0;
  NcclOptions options_;
  bool owns_comm_ = true;
  cuda::Workspace ws_;
  uint64_t bytes_sent_ = 0;
};

// Single-process multi-GPU: one communicator per device from ncclCommInitAll, fn(comm) run
// on one thread per device (each thread bound to its device). Exceptions from any rank are
// rethrown here (the first one), after all threads have stopped.
void run_nccl_single_process(const std::vector<int>& devices,
                             const std::function<void(NcclCommunicator&)>& fn);

// Error buffers of the compressed allreduce on the GPU, plus its scratch.
using DeviceOnebitState = cuda::OnebitDeviceState;

// The two-phase compressed allreduce of docs/reference/algorithms.md §2 on a device buffer, end to
// end on the GPU (compress, grouped all-to-all of the sign pieces, allgather of scales, fused
// server step, allgather of server signs and scales, fused unpack), asynchronous on
// comm.stream() with no host staging. Same result as compressed_allreduce on the CPU
// backends for the same inputs (bit-identical whenever the device scales equal the
// CPU's, see clbo/cuda/onebit.hpp).
void nccl_compressed_allreduce(NcclCommunicator& comm, DeviceOnebitState& state, float* d_buf,
                               size_t n);

// Sparse allreduce over the elements selected by d_mask (identical on every rank): compact,
// ncclAllReduce of the compacted values (fp32, or fp16 on the wire when wire = kF16),
// scatter back; at p = 1 nothing changes (no fp16 rounding either, as ring_allreduce_sum).
// `scratch` holds at least n floats. Returns the compacted count.
size_t nccl_sparse_allreduce_sum(NcclCommunicator& comm, float* d_buf, size_t n,
                                 const uint8_t* d_mask, DType wire, float* d_scratch);

}  // namespace clbo
