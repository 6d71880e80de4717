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

  // One step of an exchange: send `send_bytes` to `dst` and receive `recv_bytes` from `src`,
  // both under `tag`. The default is send() then recv(), which is deadlock-free only
  // because send() is buffered in the local backend. A backend whose send() can block until
  // the peer receives (rendezvous, e.g. large MPI_Send) must override this with a
  // deadlock-free exchange (MPI_Sendrecv). Every clbo collective in which ranks both send
  // and receive within one step goes through sendrecv(), never through a bare send()/recv()
  // pair, so overriding sendrecv() is all such a backend needs.
  virtual void sendrecv(int dst, const void* send_data, size_t send_bytes, int src, void* recv_data,
                        size_t recv_bytes, int tag);

  // Block j of sendbuf (bytes_per_rank each) goes to rank j; block j of recvbuf comes from
  // rank j. The default exchanges directly in p−1 sendrecv steps: in step k = 1..p−1 rank r
  // sends its block for rank r+k and receives rank r−k's block (mod p). Each rank sends
  // exactly one message of bytes_per_rank to every other rank; the own block is copied
  // locally and never sent. Nothing is sent when bytes_per_rank is 0. The buffers must not
  // overlap.
  virtual void alltoall(const void* sendbuf, void* recvbuf, size_t bytes_per_rank);
  // Every rank's block lands at offset rank·bytes_per_rank of recvbuf, on every rank.
  // Same direct exchange as alltoall (every rank sends its block to every other rank).
  // sendbuf may be recvbuf + rank·bytes_per_rank (in place).
  virtual void allgather(const void* sendbuf, void* recvbuf, size_t bytes_per_rank);
  // Returns on a rank only after every rank has entered it. The default is a dissemination
  // barrier of ceil(log2 p) rounds of zero-byte messages.
  virtual void barrier();
};

// A Communicator that wraps another (counting, timing): the same rank of the same group on
// the same backend. Subclasses choose which calls they intercept; the rest are the base
// class's direct exchanges over the intercepted point-to-point calls, unless overridden.
class WrappedCommunicator : public Communicator {
 public:
  explicit WrappedCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend_name() const override { return inner_.backend_name(); }

 protected:
  Communicator& inner_;
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
