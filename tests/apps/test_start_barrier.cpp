// bench/start_barrier.hpp: the barrier that makes copies of a kernel benchmark launched
// together start timing together (clbo validate's streaming contention).
#include "start_barrier.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace {

namespace fs = std::filesystem;
using clbo::bench::StartBarrier;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / (name + "." + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(StartBarrier, ParsesDirAndCountAndRejectsTheRestNamingTheValue) {
  EXPECT_TRUE(StartBarrier::parse("/tmp/x,4").enabled());
  EXPECT_TRUE(StartBarrier::parse("/tmp/a,b,2").enabled()) << "the last comma splits";
  for (const std::string bad : {"/tmp/x", "/tmp/x,", "/tmp/x,0", "/tmp/x,-2", ",3", "/tmp/x,2z"}) {
    try {
      StartBarrier::parse(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  StartBarrier off;
  EXPECT_FALSE(off.enabled());
  off.pass();  // a disabled barrier never waits
}

TEST(StartBarrier, TwoProcessesPassOnlyOnceBothAreReady) {
  const fs::path d = fresh_dir("clbo-barrier");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child arrives late: the parent must still be waiting for it.
    ::usleep(200000);
    StartBarrier b(d.string(), 2);
    b.pass(10.0);
    ::_exit(0);
  }
  StartBarrier b(d.string(), 2);
  const auto t0 = std::chrono::steady_clock::now();
  b.pass(10.0);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_GE(waited, 0.15) << "passed before the second process was ready";
  // Passed once: a later timed loop does not wait (no new ready file, no timeout).
  b.pass(0.0);
  fs::remove_all(d);
}

TEST(StartBarrier, AMissingPartyIsAnErrorNotAHang) {
  const fs::path d = fresh_dir("clbo-barrier-alone");
  StartBarrier b(d.string(), 2);
  try {
    b.pass(0.05);
    ADD_FAILURE() << "passed with 1 of 2 ready";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("1 of 2"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

}  // namespace
