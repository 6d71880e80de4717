// clbo_train_mpi: `clbo train --backend mpi`, one data-parallel worker per MPI rank. Every
// rank loads the data, computes its worker's gradient and steps its optimizer through the
// MPI backend (collectives/mpi/); rank 0 evaluates and writes the result. A separate binary
// because MPI must not share a process with the simulator's SimGrid (which exports MPI_*
// symbols of its own). Run it as `mpirun -np <workers> clbo train --backend mpi X.json`.
#include <mpi.h>

#include <iostream>

#include "clbo/collectives/mpi.hpp"
#include "clbo/collectives/timing.hpp"
#include "train_run.hpp"

namespace {

// One worker per rank. The collectives run on MPI_COMM_WORLD (counted, timed); the trainer's
// own gathers (losses, bytes, times) on a duplicate, so they never mix with the optimizer's
// traffic. Per-call header checks are off: they would add an allgather before every
// all-to-all and allgather of the timed steps; every rank runs the same experiment file.
class MpiWorkers final : public clbo::train::Workers {
 public:
  MpiWorkers() : comm_(MPI_COMM_WORLD, options()) { MPI_Comm_dup(MPI_COMM_WORLD, &control_); }
  ~MpiWorkers() override { MPI_Comm_free(&control_); }

  std::string backend() const override { return "mpi"; }
  int size() const override { return comm_.size(); }
  int first() const override { return comm_.rank(); }
  int count() const override { return 1; }

  std::vector<clbo::train::StepCost> step(
      const std::function<void(int, clbo::Communicator&)>& fn) override {
    comm_.reset_counters();
    clbo::TimedCommunicator timed(comm_);
    const double k0 = clbo::kernel_seconds();
    fn(comm_.rank(), timed);
    return {{comm_.bytes_sent(), timed.seconds(), clbo::kernel_seconds() - k0}};
  }

  std::vector<double> gather(const std::vector<double>& mine, size_t per_worker) override {
    return allgather(mine, per_worker, MPI_DOUBLE);
  }
  std::vector<float> gather(const std::vector<float>& mine, size_t per_worker) override {
    return allgather(mine, per_worker, MPI_FLOAT);
  }

  void barrier() override {
    MPI_Request req;
    MPI_Ibarrier(control_, &req);
    comm_.wait_all(1, &req, "the trainer's barrier after its own gathers");
  }

 private:
  template <typename T>
  std::vector<T> allgather(const std::vector<T>& mine, size_t per_worker, MPI_Datatype type) {
    std::vector<T> all(per_worker * static_cast<size_t>(size()));
    // Non-blocking plus the backend's polled wait: MPI's own blocking wait yields the CPU,
    // which stalls a rank for whole scheduler ticks on a busy machine.
    MPI_Request req;
    MPI_Iallgather(mine.data(), static_cast<int>(per_worker), type, all.data(),
                   static_cast<int>(per_worker), type, control_, &req);
    comm_.wait_all(1, &req, "the trainer's gather of losses, bytes, times and parameters");
    return all;
  }
  static clbo::MpiOptions options() {
    clbo::MpiOptions o;
    o.check_headers = false;
    o.cuda_aware = clbo::MpiOptions::CudaAware::kOff;  // host buffers only
    return o;
  }
  clbo::MpiCommunicator comm_;
  MPI_Comm control_ = MPI_COMM_NULL;
};

}  // namespace

int main(int argc, char** argv) {
  clbo::cli::TrainArgs args;
  CLI::App app{
      "clbo train --backend mpi: one data-parallel worker per MPI rank (mpirun -np <workers>)",
      "clbo train"};
  clbo::cli::add_train_options(app, args, false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  clbo::MpiSession session;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    if (args.summary)
      throw clbo::InputError("<command line>", "--summary", "on",
                             "--summary reads result files; run it without --backend mpi");
    MpiWorkers workers;
    return clbo::cli::run_train(args, &workers);
  } catch (const clbo::InputError& e) {
    // Input errors are found before any collective, identically on every rank: rank 0
    // reports it.
    if (rank == 0) std::cerr << "clbo: error: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clbo: error (rank " << rank << "): " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
