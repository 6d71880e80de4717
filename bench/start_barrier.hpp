// A start barrier between benchmark processes launched together (clbo validate's streaming
// contention runs p copies of one kernel benchmark at once and divides by one copy's rate).
//
// Why: the copies build their buffers before their first timed loop, and with more copies
// than cores the scheduler can finish some copies' setup long before others'. Copies that
// then time their loops while the rest still set up measure a machine shared by fewer
// kernels than p (on 2 cores, 4 copies once gave two copies the 2-copy rate and a factor of
// 1.56, below the 2.0 that time-sharing the cores alone implies). With the barrier every copy
// starts its first timed loop once all p have built their buffers.
//
// Protocol: --start_barrier=DIR,N. Each process creates DIR/ready.<pid> when it reaches the
// barrier and waits (polling every millisecond) until N such files exist; a process passes
// the barrier once, and later timed loops start at once. DIR must exist and be empty of
// other ready files; it is the launcher's to create and remove. A barrier that does not
// open within `timeout_s` is an error: a copy that died during setup must not leave the
// others waiting forever.
#pragma once
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace clbo::bench {

class StartBarrier {
 public:
  StartBarrier() = default;
  StartBarrier(std::string dir, int parties) : dir_(std::move(dir)), parties_(parties) {}

  // "DIR,N" -> a barrier; throws std::invalid_argument naming the value when malformed.
  static StartBarrier parse(const std::string& value) {
    const size_t comma = value.rfind(',');
    int n = 0;
    try {
      size_t used = 0;
      if (comma != std::string::npos) n = std::stoi(value.substr(comma + 1), &used);
      if (comma == std::string::npos || comma == 0 || used != value.size() - comma - 1) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1)
      throw std::invalid_argument("--start_barrier=" + value +
                                  ": expected DIR,N with N >= 1 processes");
    return StartBarrier(value.substr(0, comma), n);
  }

  bool enabled() const { return parties_ > 0; }

  // Marks this process ready and waits for the others; a no-op once passed or when disabled.
  void pass(double timeout_s = 300.0) {
    if (!enabled() || passed_) return;
    namespace fs = std::filesystem;
    const fs::path mine = fs::path(dir_) / ("ready." + std::to_string(::getpid()));
    if (!std::ofstream(mine))
      throw std::runtime_error("start barrier: cannot create " + mine.string());
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (ready() < parties_) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("start barrier " + dir_ + ": " + std::to_string(ready()) + " of " +
                                 std::to_string(parties_) + " processes ready after " +
                                 std::to_string(timeout_s) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    passed_ = true;
  }

 private:
  int ready() const {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      if (e.path().filename().string().rfind("ready.", 0) == 0) ++n;
    return n;
  }

  std::string dir_;
  int parties_ = 0;
  bool passed_ = false;
};

}  // namespace clbo::bench
