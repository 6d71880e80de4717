#include "clbo/core/results.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "clbo/core/error.hpp"

#ifndef CLBO_VERSION
#define CLBO_VERSION "0.0.0"
#endif

namespace clbo {

std::string clbo_version() {
  return CLBO_VERSION;
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
