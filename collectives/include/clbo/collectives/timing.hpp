// Where an optimizer step's time goes, for engines that report per-phase times (the
// convergence engine's per-step split into communication and compression kernels):
//   TimedCommunicator  forwards every call to its inner communicator (the collectives too,
//                      so a backend's own all-to-all and allgather still run) and adds up
//                      the wall seconds spent inside them;
//   kernel_seconds()   the wall seconds the calling thread has spent in the compression
//                      kernels of the compressed and sparse allreduces (compress, server
//                      step, unpack; mask count, compaction, scatter), summed since the
//                      thread started. Take differences around the work of interest.
#pragma once
#include <chrono>

#include "clbo/collectives/communicator.hpp"

namespace clbo {

class TimedCommunicator final : public WrappedCommunicator {
 public:
  using WrappedCommunicator::WrappedCommunicator;
  void send(int peer, const void* data, size_t bytes, int tag) override;
  void recv(int peer, void* data, size_t bytes, int tag) override;
  void sendrecv(int dst, const void* send_data, size_t send_bytes, int src, void* recv_data,
                size_t recv_bytes, int tag) override;
  void alltoall(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) override;
  void allgather(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) override;
  void barrier() override;

  double seconds() const { return seconds_; }  // inside communication calls so far

 private:
  double seconds_ = 0;
};

double kernel_seconds();

// Adds the lifetime of the object to the calling thread's kernel_seconds().
class KernelTimer {
 public:
  KernelTimer() : t0_(std::chrono::steady_clock::now()) {}
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

 private:
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace clbo
