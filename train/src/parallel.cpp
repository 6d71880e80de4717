#include "clbo/train/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace clbo::train {

namespace {

// One fork-join loop: items are claimed from `next`; the first exception stops the claiming.
struct Job {
  size_t count = 0;
  const std::function<void(size_t, int)>* fn = nullptr;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::exception_ptr first;

  void work(int thread) {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= count || failed.load()) return;
      try {
        (*fn)(i, thread);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
        failed = true;
      }
    }
  }
};

// Helper threads that live for the whole process. A training run calls parallel_for a few
// hundred times per run; keeping the same threads lets the models' per-thread scratch
// buffers survive between calls instead of being reallocated (and page-faulted) every step.
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : helpers_) t.join();
  }

  // Runs `job` on the caller (thread 0) and `extra` helpers (threads 1..extra).
  void run(Job& job, int extra) {
    std::unique_lock<std::mutex> lock(mu_);
    while (static_cast<int>(helpers_.size()) < extra) {
      const int index = static_cast<int>(helpers_.size()) + 1;
      helpers_.emplace_back([this, index] { helper_loop(index); });
    }
    job_ = &job;
    participants_ = extra;
    pending_ = extra;
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    job.work(0);
    lock.lock();
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void helper_loop(int index) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index > participants_) continue;
      Job* job = job_;
      lock.unlock();
      job->work(index);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> helpers_;
  Job* job_ = nullptr;
  int participants_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
};

// One caller at a time uses the pool; a concurrent caller (not the harness's pattern, but
// allowed) falls back to threads of its own.
std::mutex pool_user;
Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_for(size_t count, int threads, const std::function<void(size_t, int)>& fn) {
  const int n_threads = static_cast<int>(std::min<size_t>(std::max(threads, 1), count));
  if (n_threads <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i, 0);
    return;
  }
  Job job;
  job.count = count;
  job.fn = &fn;
  std::unique_lock<std::mutex> use(pool_user, std::try_to_lock);
  if (use.owns_lock()) {
    pool().run(job, n_threads - 1);
  } else {
    std::vector<std::thread> own;
    for (int t = 1; t < n_threads; ++t) own.emplace_back([&job, t] { job.work(t); });
    job.work(0);
    for (auto& th : own) th.join();
  }
  if (job.first) std::rethrow_exception(job.first);
}

}  // namespace clbo::train
