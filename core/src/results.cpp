#include "clbo/core/results.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "clbo/core/error.hpp"

#ifndef CLBO_VERSION
#define CLBO_VERSION "0.0.0"
#endif
#ifndef CLBO_GIT_HASH
#define CLBO_GIT_HASH "unknown"
#endif

namespace clbo {

std::string clbo_version() {
  return CLBO_VERSION;
}
std::string clbo_git_hash() {
  return CLBO_GIT_HASH;
}

std::string prepare_atomic_temp(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec)
    throw Error(fmt::format("{}: cannot create folder {}: {}", path, target.parent_path().string(),
                            ec.message()));
  return fmt::format("{}.tmp.{}", path, ::getpid());
}

void write_file_atomic(const std::string& path, std::string_view data) {
  namespace fs = std::filesystem;
  const std::string tmp = prepare_atomic_temp(path);
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(fmt::format("{}: cannot open {} for writing", path, tmp));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw Error(fmt::format("{}: write failed", path));
    }
  }
  fs::rename(tmp, fs::path(path), ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("{}: cannot rename {} into place: {}", path, tmp, ec.message()));
  }
}

void write_json_atomic(const std::string& path, const nlohmann::json& j) {
  write_file_atomic(path, j.dump(2) + "\n");
}

nlohmann::json environment_json() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = 0;
  nlohmann::json env;
  env["clbo_version"] = clbo_version();
  env["git_hash"] = clbo_git_hash();
  env["host"] = host;
  env["gpu"] = nullptr;
  env["gpu_driver"] = nullptr;
#ifdef CLBO_NCCL_VERSION
  env["nccl"] = CLBO_NCCL_VERSION;
#else
  env["nccl"] = nullptr;
#endif
#ifdef CLBO_MPI_VERSION
  env["mpi"] = CLBO_MPI_VERSION;
#else
  env["mpi"] = nullptr;
#endif
#ifdef CLBO_SIMGRID_VERSION
  env["simgrid"] = CLBO_SIMGRID_VERSION;
#else
  env["simgrid"] = nullptr;
#endif
  env["compiler"] = fmt::format("{} {}", "g++", __VERSION__);
  return env;
}

}  // namespace clbo
