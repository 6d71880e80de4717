// Running the built `clbo` binary from tests: a temporary folder per test, helpers to write
// its input files, and the exit status and both output streams of one invocation.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "clbo/core/npy.hpp"

namespace clbo::test {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Single-quotes an argument for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q.append(c == '\'' ? "'\\''" : std::string(1, c));
  return q.append("'");
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("clbo_cli_") + std::to_string(::getpid()) + "_" + info->test_suite_name() +
            "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  CliResult run(const std::vector<std::string>& args) const {
    std::string cmd = shell_quote(CLBO_BIN);
    // Appended piecewise: `" " + std::string` trips a GCC 12 -Wrestrict false positive.
    for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
    const std::string out = path(".stdout"), err = path(".stderr");
    cmd.append(" >").append(shell_quote(out)).append(" 2>").append(shell_quote(err));
    const int status = std::system(cmd.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return r;
  }

  std::string write_json(const std::string& name, const nlohmann::json& j) const {
    std::ofstream(path(name)) << j.dump(2);
    return path(name);
  }
  std::string write_npy(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<float>& data) const {
    clbo::write_npy_f32(path(name), shape, data.data());
    return path(name);
  }
  std::string write_raw(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  // Names in the test folder (the harness's own capture files excluded).
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::filesystem::path dir_;
};

}  // namespace clbo::test
