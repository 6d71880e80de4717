// Writing results: JSON through the atomic writer (output_file.hpp), and the environment
// every result records.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "clbo/core/output_file.hpp"

namespace clbo {

std::string clbo_version();
std::string clbo_git_hash();

// JSON dumped with sorted keys and a fixed indent, so equal results are equal bytes.
void write_json_atomic(const std::string& path, const nlohmann::json& j);

// What produced a result: clbo version and git hash, host, GPU and driver (null when none),
// and the NCCL, MPI and SimGrid versions this binary was built with (null when off).
nlohmann::json environment_json();

}  // namespace clbo
