// Google Benchmark's command-line flags as clbo reads them before Google Benchmark does: the
// kernel benchmark binaries (did the user list the benchmarks, so nothing is measured first;
// did they choose a minimum time, so clbo's default does not override it) and `clbo bench
// kernels` (where does the user's --benchmark_out go). Flags are read as Google Benchmark
// 1.7.1 reads them (src/commandlineflags.cc): `--name` or `--name=value`, the last occurrence
// wins, and a boolean is false only for 0, f, n, false, no or off (any case).
#pragma once
#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace clbo::bench {

inline std::vector<std::string> gbench_args(int argc, char** argv) {
  return std::vector<std::string>(argv + std::min(argc, 1), argv + argc);
}

// The value of the last `--name` or `--name=value` ("" for a bare `--name`); none if absent.
inline std::optional<std::string> gbench_flag(const std::vector<std::string>& args,
                                              const std::string& name) {
  const std::string flag = "--" + name;
  std::optional<std::string> value;
  for (const auto& a : args) {
    if (a == flag)
      value = "";
    else if (a.rfind(flag + "=", 0) == 0)
      value = a.substr(flag.size() + 1);
  }
  return value;
}

inline bool gbench_bool_flag(const std::vector<std::string>& args, const std::string& name) {
  const auto v = gbench_flag(args, name);
  if (!v) return false;
  if (v->size() == 1)
    return std::isalnum(static_cast<unsigned char>((*v)[0])) &&
           std::strchr("0fFnN", (*v)[0]) == nullptr;
  std::string t = *v;
  std::transform(t.begin(), t.end(), t.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return !(t == "false" || t == "no" || t == "off");
}

// argv with `--benchmark_min_time=<seconds>` added when the user gave none: clbo's default
// minimum time per benchmark, which a user's own flag always replaces (a MinTime() on the
// benchmark would override the flag instead).
class ArgsWithDefaultMinTime {
 public:
  ArgsWithDefaultMinTime(int argc, char** argv, const char* seconds) {
    for (int i = 0; i < argc; ++i) args_.emplace_back(argv[i]);
    if (!gbench_flag(gbench_args(argc, argv), "benchmark_min_time"))
      args_.push_back(std::string("--benchmark_min_time=") + seconds);
    for (auto& a : args_) ptrs_.push_back(a.data());
    ptrs_.push_back(nullptr);
    argc_ = static_cast<int>(args_.size());
  }
  int* argc() { return &argc_; }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> ptrs_;
  int argc_ = 0;
};

}  // namespace clbo::bench
