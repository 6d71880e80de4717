#include "clbo/collectives/communicator.hpp"

#include <cstring>

namespace clbo {

namespace {

const char* block(const void* base, int j, size_t bytes) {
  return static_cast<const char*>(base) + static_cast<size_t>(j) * bytes;
}

char* block(void* base, int j, size_t bytes) {
  return static_cast<char*>(base) + static_cast<size_t>(j) * bytes;
}

}  // namespace

void Communicator::sendrecv(int dst, const void* send_data, size_t send_bytes, int src,
                            void* recv_data, size_t recv_bytes, int tag) {
  send(dst, send_data, send_bytes, tag);
  recv(src, recv_data, recv_bytes, tag);
}

void Communicator::alltoall(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return;
  const int p = size(), r = rank();
  std::memcpy(block(recvbuf, r, bytes_per_rank), block(sendbuf, r, bytes_per_rank), bytes_per_rank);
  // Step k pairs every rank with the rank k ahead (send) and k behind (receive), so with a
  // deadlock-free sendrecv no rank ever waits on a rank that waits on it.
  for (int k = 1; k < p; ++k) {
    const int dst = (r + k) % p, src = (r - k + p) % p;
    sendrecv(dst, block(sendbuf, dst, bytes_per_rank), bytes_per_rank, src,
             block(recvbuf, src, bytes_per_rank), bytes_per_rank, kTagAlltoall);
  }
}

void Communicator::allgather(const void* sendbuf, void* recvbuf, size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return;
  const int p = size(), r = rank();
  char* own = block(recvbuf, r, bytes_per_rank);
  if (own != sendbuf) std::memcpy(own, sendbuf, bytes_per_rank);
  for (int k = 1; k < p; ++k) {
    const int dst = (r + k) % p, src = (r - k + p) % p;
    sendrecv(dst, own, bytes_per_rank, src, block(recvbuf, src, bytes_per_rank), bytes_per_rank,
             kTagAllgather);
  }
}

void Communicator::barrier() {
  // Dissemination barrier: after round d every rank has heard, directly or through a chain,
  // from the 2^(d+1) − 1 ranks behind it, so after ceil(log2 p) rounds from all of them.
  const int p = size(), r = rank();
  for (int dist = 1; dist < p; dist *= 2) {
    sendrecv((r + dist) % p, nullptr, 0, (r - dist % p + p) % p, nullptr, 0, kTagBarrier);
  }
}

}  // namespace clbo
