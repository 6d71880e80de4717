#include "clbo/collectives/counting.hpp"

namespace clbo {

void CountingCommunicator::send(int peer, const void* data, size_t bytes, int tag) {
  inner_.send(peer, data, bytes, tag);
  bytes_sent_ += bytes;
  ++messages_sent_;
}

void CountingCommunicator::recv(int peer, void* data, size_t bytes, int tag) {
  inner_.recv(peer, data, bytes, tag);
  bytes_received_ += bytes;
}

void CountingCommunicator::sendrecv(int dst, const void* send_data, size_t send_bytes, int src,
                                    void* recv_data, size_t recv_bytes, int tag) {
  // Forwarded as one exchange, so a backend's deadlock-free sendrecv is kept.
  inner_.sendrecv(dst, send_data, send_bytes, src, recv_data, recv_bytes, tag);
  bytes_sent_ += send_bytes;
  ++messages_sent_;
  bytes_received_ += recv_bytes;
}

}  // namespace clbo
