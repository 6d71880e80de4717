// The atomic writer and the output preflight (output_file.hpp): non-regular targets refused,
// symbolic links written through, stale temporaries swept, and the preflight's rules.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "clbo/core/error.hpp"
#include "clbo/core/output_file.hpp"

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("clbo_output_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  size_t entries() const {
    size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) (void)e, ++n;
    return n;
  }
  std::string why(const std::string& out, const std::vector<clbo::NamedPath>& inputs = {}) const {
    try {
      clbo::check_output_path(out, "--out", inputs);
    } catch (const clbo::InputError& e) {
      EXPECT_EQ(e.field(), "--out");
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(OutputFile, WritesAtomicallyAndKeepsPermissions) {
  clbo::write_file_atomic(path("sub/a.txt"), "one");
  ::chmod(path("sub/a.txt").c_str(), 0600);
  clbo::write_file_atomic(path("sub/a.txt"), "two");
  EXPECT_EQ(slurp(path("sub/a.txt")), "two");
  struct stat st {};
  ASSERT_EQ(::stat(path("sub/a.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(entries(), 2u) << "a temporary was left";
}

TEST_F(OutputFile, AnUncommittedOutputLeavesNothing) {
  {
    clbo::AtomicOutput out(path("x.bin"));
    out.write("partial");
    EXPECT_TRUE(fs::exists(out.temp()));
  }
  EXPECT_EQ(entries(), 0u);
}

TEST_F(OutputFile, SymlinksAreWrittenThroughAndNonRegularTargetsRefused) {
  fs::create_directory(path("real"));
  std::ofstream(path("real/t.txt")) << "old";
  fs::create_symlink("real/t.txt", path("link"));   // relative to the link's folder
  fs::create_symlink(path("link"), path("link2"));  // a chain
  clbo::write_file_atomic(path("link2"), "new");
  EXPECT_TRUE(fs::is_symlink(path("link")));
  EXPECT_TRUE(fs::is_symlink(path("link2")));
  EXPECT_EQ(slurp(path("real/t.txt")), "new");
  EXPECT_EQ(clbo::output_target(path("link2"), "--out"), path("real/t.txt"));

  fs::create_directory(path("d"));
  EXPECT_THROW(clbo::AtomicOutput(path("d"), "--out"), clbo::InputError);
  ASSERT_EQ(::mkfifo(path("f").c_str(), 0644), 0);
  EXPECT_THROW(clbo::AtomicOutput(path("f"), "--out"), clbo::InputError);
  fs::create_symlink(path("loop1"), path("loop2"));
  fs::create_symlink(path("loop2"), path("loop1"));
  EXPECT_NE(why(path("loop1")).find("loop"), std::string::npos);
}

TEST_F(OutputFile, StaleTemporariesOfDeadProcessesAreSwept) {
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  std::ofstream(path("r.json.tmp." + std::to_string(dead))) << "left by a SIGKILL";
  std::ofstream(path("r.json.tmp.1")) << "pid 1 runs: kept";
  std::ofstream(path("other.json.tmp." + std::to_string(dead))) << "another target: kept";
  clbo::write_file_atomic(path("r.json"), "{}");
  EXPECT_FALSE(fs::exists(path("r.json.tmp." + std::to_string(dead))));
  EXPECT_TRUE(fs::exists(path("r.json.tmp.1")));
  EXPECT_TRUE(fs::exists(path("other.json.tmp." + std::to_string(dead))));
}

TEST_F(OutputFile, PreflightRules) {
  EXPECT_EQ(why(path("new/deeper/x.json")), "") << "missing folders are fine";
  EXPECT_EQ(entries(), 0u) << "the preflight created something";
  std::ofstream(path("file")) << "x";
  EXPECT_NE(why(path("file/x.json")).find("is a regular file, but the output needs a folder"),
            std::string::npos);
  EXPECT_NE(why("/proc/x.json").find("/proc"), std::string::npos);
  EXPECT_NE(why("/sys/x.json").find("/sys"), std::string::npos);
  EXPECT_NE(why(path(std::string(250, 'a'))).find("temporary suffix"), std::string::npos);
  EXPECT_NE(why(path(std::string(300, 'b') + "/x")).find("may have at most"), std::string::npos);
  EXPECT_NE(why(path("x/")).find("names a folder"), std::string::npos);
  EXPECT_NE(why("").find("cannot be empty"), std::string::npos);
  std::ofstream(path("in.json")) << "{}";
  fs::create_symlink(path("in.json"), path("alias.json"));
  EXPECT_NE(why(path("alias.json"), {{"EXPERIMENT", path("in.json")}})
                .find("is also the input EXPERIMENT"),
            std::string::npos);
  EXPECT_NE(why(path("./in.json"), {{"--grads", path("in.json")}}).find("--grads"),
            std::string::npos);
  EXPECT_EQ(why(path("out.json"), {{"--grads", path("in.json")}}), "");
  EXPECT_EQ(entries(), 3u);
}

}  // namespace
