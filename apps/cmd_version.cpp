// `clbo version`: what this binary is and what it was built with, as JSON.
#include <iostream>

#include "clbo/core/results.hpp"
#include "cli.hpp"

namespace {
clbo::cli::Registrar reg("version", "Print the version and build environment as JSON",
                         [](CLI::App&) {
                           return [] {
                             std::cout << clbo::environment_json().dump(2) << std::endl;
                             return 0;
                           };
                         });
}  // namespace
