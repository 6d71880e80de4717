// Helpers shared by the collectives tests: deterministic inputs, running p ranks over the
// local backend behind counting wrappers, and a timeout guard for tests that could hang.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "clbo/collectives/counting.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/plan/plan.hpp"

namespace clbo::test {

// Uniform values in [lo, hi), reproducible from the seed.
inline std::vector<float> random_floats(uint64_t seed, size_t n, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937_64 gen(seed);
  std::vector<float> v(n);
  for (float& x : v) {
    x = lo + (hi - lo) * static_cast<float>(gen() >> 40) * 0x1p-24f;
  }
  return v;
}

inline uint64_t seed_of(int p, int rank, size_t n, uint64_t salt = 0) {
  return (static_cast<uint64_t>(p) << 48) ^ (static_cast<uint64_t>(rank) << 40) ^
         (static_cast<uint64_t>(n) << 8) ^ (salt * 0x9E3779B97F4A7C15ull);
}

// What one rank saw of a call: its traffic, as counted by its wrapper.
struct Traffic {
  uint64_t bytes_sent = 0, bytes_received = 0, messages_sent = 0;
};

// Runs fn(comm, rank) on p local ranks, each behind a CountingCommunicator, and returns
// every rank's traffic.
inline std::vector<Traffic> run_counted(int p,
                                        const std::function<void(CountingCommunicator&, int)>& fn) {
  std::vector<Traffic> traffic(static_cast<size_t>(p));
  run_local(p, [&](Communicator& inner) {
    CountingCommunicator comm(inner);
    fn(comm, comm.rank());
    traffic[static_cast<size_t>(comm.rank())] = {comm.bytes_sent(), comm.bytes_received(),
                                                 comm.messages_sent()};
  });
  return traffic;
}

// Every rank moved exactly what the plan says: bytes out, bytes in and message count.
inline void expect_traffic_matches(const CommPlan& plan, const std::vector<Traffic>& traffic) {
  ASSERT_EQ(static_cast<size_t>(plan.p), traffic.size());
  for (int r = 0; r < plan.p; ++r) {
    const Traffic& t = traffic[static_cast<size_t>(r)];
    EXPECT_EQ(t.bytes_sent, plan.bytes_sent_by(r)) << plan.algorithm << " rank " << r;
    EXPECT_EQ(t.bytes_received, plan.bytes_received_by(r)) << plan.algorithm << " rank " << r;
    EXPECT_EQ(t.messages_sent, plan.messages_sent_by(r)) << plan.algorithm << " rank " << r;
  }
}

inline bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Runs fn on a helper thread and waits at most `limit`. Returns true when it finished
// (its exception, if any, goes to *error). On timeout the stuck thread is abandoned: fn must
// own everything it touches (capture by value), so the test can fail instead of hanging.
inline bool finishes_within(std::chrono::seconds limit, std::function<void()> fn,
                            std::exception_ptr* error) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> fut = done->get_future();
  std::thread worker([done, fn = std::move(fn)] {
    try {
      fn();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  });
  if (fut.wait_for(limit) != std::future_status::ready) {
    worker.detach();  // hung: the test fails and the process ends with it
    return false;
  }
  // Joined, not detached: the worker's last release of the shared state (and of the exception
  // in it) then happens before the caller reads the exception (ThreadSanitizer saw a race).
  worker.join();
  try {
    fut.get();
  } catch (...) {
    *error = std::current_exception();
  }
  return true;
}

}  // namespace clbo::test
