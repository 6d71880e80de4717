#include "clbo/train/workers.hpp"

#include "clbo/collectives/counting.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/collectives/timing.hpp"

namespace clbo::train {

namespace {

class LocalWorkers final : public Workers {
 public:
  explicit LocalWorkers(int p) : p_(p) {}
  std::string backend() const override { return "local"; }
  int size() const override { return p_; }
  int first() const override { return 0; }
  int count() const override { return p_; }

  std::vector<StepCost> step(const std::function<void(int, Communicator&)>& fn) override {
    std::vector<StepCost> cost(static_cast<size_t>(p_));
    run_local(p_, [&](Communicator& comm) {
      const int r = comm.rank();
      CountingCommunicator counting(comm);
      TimedCommunicator timed(counting);
      const double k0 = kernel_seconds();
      fn(r, timed);
      cost[static_cast<size_t>(r)] = {counting.bytes_sent(), timed.seconds(),
                                      kernel_seconds() - k0};
    });
    return cost;
  }

  std::vector<double> gather(const std::vector<double>& mine, size_t) override { return mine; }
  std::vector<float> gather(const std::vector<float>& mine, size_t) override { return mine; }
  void barrier() override {}  // one process: step() already joins the worker threads

 private:
  int p_;
};

}  // namespace

std::unique_ptr<Workers> local_workers(int p) {
  return std::make_unique<LocalWorkers>(p);
}

}  // namespace clbo::train
