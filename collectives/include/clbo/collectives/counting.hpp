// A Communicator wrapper that counts what its rank really sends, point to point, so tests
// can hold every algorithm to the bytes its CommPlan promises. alltoall, allgather and
// barrier are deliberately not forwarded to the inner communicator: they run the base
// class's direct exchanges, which go through this wrapper's send/recv/sendrecv, so every
// transfer is seen. Only the point-to-point calls reach the inner backend. Counters are
// per wrapper (one per rank) and not thread-safe; a rank uses its wrapper from one thread.
#pragma once
#include <cstdint>

#include "clbo/collectives/communicator.hpp"

namespace clbo {

class CountingCommunicator final : public WrappedCommunicator {
 public:
  using WrappedCommunicator::WrappedCommunicator;
  void send(int peer, const void* data, size_t bytes, int tag) override;
  void recv(int peer, void* data, size_t bytes, int tag) override;
  void sendrecv(int dst, const void* send_data, size_t send_bytes, int src, void* recv_data,
                size_t recv_bytes, int tag) override;

  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }
  uint64_t messages_sent() const { return messages_sent_; }  // zero-byte messages included
  void reset() { bytes_sent_ = bytes_received_ = messages_sent_ = 0; }

 private:
  uint64_t bytes_sent_ = 0, bytes_received_ = 0, messages_sent_ = 0;
};

}  // namespace clbo
