// The `mpi` backend (OpenMPI): one rank per MPI process, host buffers.
//
// MpiCommunicator implements Communicator on an MPI communicator. Point-to-point calls map to
// MPI_Isend/MPI_Mrecv, sendrecv is deadlock-free (non-blocking send, then receive), and the
// collectives use MPI's own non-blocking all-to-all, allgather and barrier. Nothing can
// hang forever: every wait polls with a deadline (MpiOptions::timeout_s) and then throws.
//
// Safety before payload: alltoall and allgather first exchange a small CallHeader (op name,
// sizes) among all ranks; when any rank disagrees, every rank throws the same clbo::Error
// naming the field and both values, before a byte of payload moves. The algorithm entry
// points below do the same with their full configuration.
//
// Byte counting: bytes_sent() counts what this rank hands to MPI for other ranks (its own
// block is never counted), the quantity CommPlan predicts. Inside MPI_Allreduce the
// algorithm is MPI's and invisible, so mpi_allreduce_sum counts what a ring would send.
//
// CUDA-aware MPI: with MpiOptions::cuda_aware on (or auto and the library reports CUDA
// support via MPIX_Query_cuda_support), device pointers may be passed to every call here
// and MPI moves them itself; otherwise buffers must be host memory.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "clbo/collectives/algorithms.hpp"
#include "clbo/collectives/call_header.hpp"
#include "clbo/collectives/communicator.hpp"
#include "clbo/core/schedule.hpp"

namespace clbo {

struct MpiOptions {
  enum class CudaAware { kAuto, kOn, kOff };
  CudaAware cuda_aware = CudaAware::kAuto;  // kOn fails when the library has no CUDA support
  double timeout_s = 120.0;                 // longest wait for a peer before giving up
  bool check_headers = true;                // exchange a CallHeader before each collective
};

// Initializes MPI (MPI_THREAD_FUNNELED) unless already initialized, and finalizes it on
// destruction if it initialized it. Works under mpirun and as a singleton (p = 1).
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool owns_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD, MpiOptions options = {});
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "mpi"; }

  void send(int peer, const void* data, size_t bytes, int tag) override;
  // A message of a different size than `bytes` is an error naming both sizes.
  void recv(int peer, void* data, size_t bytes, int tag) override;
  void sendrecv(int dst, const void* send_data, size_t send_bytes, int src, void* recv_data,
                size_t recv_bytes, int tag) override;
  void alltoall(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) override;
  void allgather(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) override;
  void barrier() override;

  // Collective: every rank passes its header; if any differs, every rank throws the same
  // clbo::Error ("mpi: ranks disagree on <op>: rank 0 has count=…, rank 2 has count=…").
  void agree(const CallHeader& header);

  // Waits for the requests, polling, and throws naming `what` after timeout_s.
  void wait_all(int count, MPI_Request* requests, const char* what);

  bool cuda_aware() const { return cuda_aware_; }
  const MpiOptions& options() const { return options_; }
  void set_check_headers(bool on) { options_.check_headers = on; }
  MPI_Comm comm() const { return comm_; }

  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t messages_sent() const { return messages_sent_; }
  void count_sent(uint64_t bytes, uint64_t messages) {
    bytes_sent_ += bytes;
    messages_sent_ += messages;
  }
  void reset_counters() { bytes_sent_ = messages_sent_ = 0; }

 private:
  MPI_Comm comm_;
  MpiOptions options_;
  int rank_ = 0, size_ = 1;
  bool cuda_aware_ = false;
  uint64_t bytes_sent_ = 0, messages_sent_ = 0;
};

// Whether the MPI library was built with CUDA support and reports it at run time.
bool mpi_library_cuda_support();

// "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line).
std::string mpi_library_version();

// DeepSpeed's MPI compressed allreduce (deepspeed/runtime/comm/mpi.py): the arithmetic of
// compressed_allreduce (docs/reference/algorithms.md §2) with the all-to-all done as p non-blocking
// gathers (MPI_Igather of piece j and of the worker scale to root j, for every j), then
// MPI_Allgather of the server signs and of the server scales. Bit-identical to
// compressed_allreduce on any backend and sends the same bytes. Agrees on n first (unless
// the communicator's check_headers is off).
void mpi_compressed_allreduce_gather(MpiCommunicator& comm, OnebitState& state, float* buf,
                                     size_t n);

// MPI_Allreduce (sum) of n floats in place, the baseline the compressed allreduce is
// compared with. wire must be kF32 (MPI has no fp16 sum). Agrees on n first (unless
// check_headers is off); counts the bytes a ring allreduce would send.
void mpi_allreduce_sum(MpiCommunicator& comm, float* buf, size_t n, DType wire = DType::kF32);

}  // namespace clbo
