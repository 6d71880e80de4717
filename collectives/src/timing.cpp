#include "clbo/collectives/timing.hpp"

namespace clbo {

namespace {

thread_local double t_kernel_seconds = 0;

// Runs fn and adds its wall time to `total`.
template <class Fn>
void timed(double& total, Fn&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double kernel_seconds() {
  return t_kernel_seconds;
}

KernelTimer::~KernelTimer() {
  t_kernel_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void TimedCommunicator::send(int peer, const void* data, size_t bytes, int tag) {
  timed(seconds_, [&] { inner_.send(peer, data, bytes, tag); });
}

void TimedCommunicator::recv(int peer, void* data, size_t bytes, int tag) {
  timed(seconds_, [&] { inner_.recv(peer, data, bytes, tag); });
}

void TimedCommunicator::sendrecv(int dst, const void* send_data, size_t send_bytes, int src,
                                 void* recv_data, size_t recv_bytes, int tag) {
  timed(seconds_,
        [&] { inner_.sendrecv(dst, send_data, send_bytes, src, recv_data, recv_bytes, tag); });
}

void TimedCommunicator::alltoall(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) {
  timed(seconds_, [&] { inner_.alltoall(sendbuf, recvbuf, bytes_per_rank); });
}

void TimedCommunicator::allgather(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) {
  timed(seconds_, [&] { inner_.allgather(sendbuf, recvbuf, bytes_per_rank); });
}

void TimedCommunicator::barrier() {
  timed(seconds_, [&] { inner_.barrier(); });
}

}  // namespace clbo
