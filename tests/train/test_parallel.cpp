// parallel_for keeps helper threads between calls; these pin what callers rely on.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "clbo/train/parallel.hpp"

namespace clbo::train {
namespace {

TEST(ParallelFor, EveryItemOnceWithThreadIndicesInRangeAcrossRepeatedCalls) {
  for (int round = 0; round < 50; ++round) {
    const int threads = 1 + round % 4;  // the pool grows and shrinks its participants
    const size_t count = 3 + static_cast<size_t>(round) % 17;
    std::vector<std::atomic<int>> hits(count);
    std::atomic<bool> bad_thread{false};
    parallel_for(count, threads, [&](size_t i, int th) {
      if (th < 0 || th >= threads) bad_thread = true;
      ++hits[i];
    });
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << "round " << round;
    ASSERT_FALSE(bad_thread.load());
  }
}

TEST(ParallelFor, RethrowsAndStaysUsable) {
  EXPECT_THROW(parallel_for(100, 3,
                            [](size_t i, int) {
                              if (i == 7) throw std::runtime_error("item 7");
                            }),
               std::runtime_error);
  std::atomic<size_t> sum{0};
  parallel_for(10, 3, [&](size_t i, int) { sum += i; });
  EXPECT_EQ(sum.load(), 45u);
}

TEST(ParallelFor, ConcurrentCallersEachGetAllTheirItems) {
  std::vector<std::thread> callers;
  std::vector<std::atomic<size_t>> sums(4);
  for (size_t c = 0; c < sums.size(); ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 20; ++round)
        parallel_for(50, 2, [&](size_t i, int) { sums[c] += i; });
    });
  }
  for (auto& t : callers) t.join();
  for (const auto& s : sums) EXPECT_EQ(s.load(), 20u * 1225u);
}

}  // namespace
}  // namespace clbo::train
