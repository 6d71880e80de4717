// Finding the first NaN or Inf in a large float array, in parallel. Replay scans its whole
// gradient file before any optimizer work, so a bad value is reported deterministically
// (the lowest index, whatever the thread timing) and nothing runs on data that would fail.
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace clbo::cli {

// Index of the first non-finite value in data[lo, hi), or hi when all are finite.
inline size_t first_nonfinite_serial(const float* data, size_t lo, size_t hi) {
  constexpr uint32_t kExp = 0x7f800000u;  // all exponent bits set: Inf or NaN
  constexpr size_t kBlock = 4096;
  for (size_t b = lo; b < hi; b += kBlock) {
    const size_t e = std::min(hi, b + kBlock);
    // A branch-free pass over the block (vectorisable), then the exact index if needed.
    uint32_t any = 0;
    for (size_t i = b; i < e; ++i) any |= (std::bit_cast<uint32_t>(data[i]) & kExp) == kExp;
    if (!any) continue;
    for (size_t i = b; i < e; ++i)
      if ((std::bit_cast<uint32_t>(data[i]) & kExp) == kExp) return i;
  }
  return hi;
}

// Index of the first non-finite value in data[0, count), or count when all are finite.
inline size_t first_nonfinite(const float* data, size_t count, unsigned threads = 0) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t min_per_thread = size_t{1} << 20;
  threads = static_cast<unsigned>(std::min<size_t>(threads, count / min_per_thread + 1));
  if (threads <= 1) return first_nonfinite_serial(data, 0, count);
  std::vector<size_t> found(threads, count);
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < threads; ++k) {
    const size_t lo = count * k / threads, hi = count * (k + 1) / threads;
    pool.emplace_back([&found, data, lo, hi, k, count] {
      const size_t i = first_nonfinite_serial(data, lo, hi);
      found[k] = i == hi ? count : i;
    });
  }
  for (auto& t : pool) t.join();
  return *std::min_element(found.begin(), found.end());
}

}  // namespace clbo::cli
