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

// Runs fn(comm) on p threads, one per rank, and joins them. If any rank throws, the world
// is aborted (blocked receives on other ranks throw too) and the first exception is
// rethrown here, so a failing rank never leaves the others hanging.
void run_local(int p, const std::function<void(Communicator&)>& fn);

}  // namespace clbo
