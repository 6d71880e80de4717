// Writing results and other output files. Every file clbo writes goes through
// write_file_atomic: the data lands in a temporary beside the target and is renamed over
// it, so a failed run never leaves a half-written file behind.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace clbo {

std::string clbo_version();
std::string clbo_git_hash();

// Creates the missing parent folders of `path` and returns the temporary name to write
// before renaming over it (unique per process). Shared by every atomic writer.
std::string prepare_atomic_temp(const std::string& path);

// Creates missing parent folders; throws clbo::Error naming the path on failure.
void write_file_atomic(const std::string& path, std::string_view data);

// JSON dumped with sorted keys and a fixed indent, so equal results are equal bytes.
void write_json_atomic(const std::string& path, const nlohmann::json& j);

// What produced a result: clbo version and git hash, host, GPU and driver (null when none),
// and the NCCL, MPI and SimGrid versions this binary was built with (null when off).
nlohmann::json environment_json();

}  // namespace clbo
