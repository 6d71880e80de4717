#include "clbo/train/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace clbo::train {

void parallel_for(size_t count, int threads, const std::function<void(size_t, int)>& fn) {
  const int n_threads = static_cast<int>(std::min<size_t>(std::max(threads, 1), count));
  if (n_threads <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i, 0);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex mu;
  const auto worker = [&](int thread) {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= count || failed.load()) return;
      try {
        fn(i, thread);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < n_threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace clbo::train
