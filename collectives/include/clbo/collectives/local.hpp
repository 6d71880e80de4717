// The `local` backend: p ranks as threads of one process. Each send copies its payload into
// the receiver's mailbox and each recv takes it from there, so every byte a collective
// moves really crosses between ranks; nothing is computed centrally.
#pragma once
#include <functional>
#include <memory>

#include "clbo/collectives/communicator.hpp"

namespace clbo {

class LocalWorld;

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<LocalWorld> world, int rank);
  int rank() const override { return rank_; }
  int size() const override;
  std::string backend_name() const override { return "local"; }
  void send(int peer, const void* data, size_t bytes, int tag) override;
  void recv(int peer, void* data, size_t bytes, int tag) override;

 private:
  std::shared_ptr<LocalWorld> world_;
  int rank_;
};

// Runs fn(comm) on p threads, one per rank (rank 0 on the calling thread), and joins them.
// p < 1 is an InputError.
// - If any rank throws, the world is aborted: blocked and later sends/receives on the other
//   ranks throw too, and the first original exception (not one of the abort-induced ones) is
//   rethrown here, so a failing rank never leaves the others hanging.
// - A deadlock (every rank still running waits in recv, so no message can ever arrive) is
//   detected and reported as a clbo::Error listing what each rank waits for.
// - A message still undelivered when every rank has returned is an error too: a collective
//   that sends more than its peers receive is a bug.
// Mailboxes are FIFO per (sender, receiver, tag); send copies the payload and never blocks;
// recv blocks until a message is there and fails if its size differs from the request.
void run_local(int p, const std::function<void(Communicator&)>& fn);

}  // namespace clbo
