// Communicator: the one interface every backend (local threads, MPI, NCCL) implements and
// every collective algorithm is written against. Buffers are host memory unless a backend
// documents otherwise.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace clbo {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend_name() const = 0;

  // Point-to-point. send() may return before the peer receives (the local backend buffers);
  // messages between one (sender, receiver, tag) triple arrive in order. recv() blocks until
  // a message of exactly `bytes` arrives; a size mismatch is an error on the receiver.
  virtual void send(int peer, const void* data, size_t bytes, int tag) = 0;
  virtual void recv(int peer, void* data, size_t bytes, int tag) = 0;

  // Block j of sendbuf (bytes_per_rank each) goes to rank j; block j of recvbuf comes from
  // rank j. The default exchanges directly over send/recv; the own block is copied locally.
  virtual void alltoall(const void* sendbuf, void* recvbuf, size_t bytes_per_rank);
  // Every rank's block lands at offset rank·bytes_per_rank of recvbuf, on every rank.
  virtual void allgather(const void* sendbuf, void* recvbuf, size_t bytes_per_rank);
  virtual void barrier();
};

// Tags reserved by clbo's collective algorithms; user point-to-point should use >= 1000.
enum CollTag : int {
  kTagAlltoall = 1,
  kTagAllgather = 2,
  kTagBarrier = 3,
  kTagRing = 4,
  kTagHeader = 5,
};

}  // namespace clbo
