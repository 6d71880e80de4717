// Where the p data-parallel workers of a `clbo train` run live, and how one optimizer step
// reaches the collectives:
//   local_workers(p)  all p workers in this process, stepping on threads over the `local`
//                     backend (the default);
//   a process-per-worker backend (the MPI one, apps/train/train_mpi_main.cpp) hosts one
//                     worker per process and steps it over its own Communicator.
// Either way a worker computes the same gradient and steps the same optimizer, so the final
// parameters do not depend on the backend (tests/mpi/test_train_mpi.py checks bit
// identity).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clbo/collectives/communicator.hpp"

namespace clbo::train {

// One worker's side of one optimizer step.
struct StepCost {
  uint64_t bytes_sent = 0;  // counted by the backend
  double comm_s = 0;        // wall seconds inside communication calls
  double kernel_s = 0;      // wall seconds in compression kernels (collectives/timing.hpp)
};

class Workers {
 public:
  virtual ~Workers() = default;
  virtual std::string backend() const = 0;  // "local", "mpi"
  virtual int size() const = 0;             // p
  virtual int first() const = 0;            // the first worker this process hosts
  virtual int count() const = 0;            // workers hosted here: first() .. first()+count()-1
  bool is_root() const { return first() == 0; }
  // Runs fn(worker, comm) for every worker hosted here, each through its own communicator
  // (the collectives' traffic), and returns each one's cost in hosting order. An exception
  // of any worker is rethrown after all of them stopped.
  virtual std::vector<StepCost> step(const std::function<void(int, Communicator&)>& fn) = 0;
  // Every worker's values in worker order, from each process's values for its workers
  // (`mine`: count() × per_worker values). Control traffic: neither counted nor timed.
  virtual std::vector<double> gather(const std::vector<double>& mine, size_t per_worker) = 0;
  // The same for float vectors (parameters, gradients), bit for bit.
  virtual std::vector<float> gather(const std::vector<float>& mine, size_t per_worker) = 0;
  // Returns once every worker has called it (control traffic, like gather). The harness's
  // own gathers end at different times on different ranks, and their last bytes may still
  // be draining; a timed step that starts right after one would count that skew as its
  // communication.
  virtual void barrier() = 0;
};

std::unique_ptr<Workers> local_workers(int p);

}  // namespace clbo::train
