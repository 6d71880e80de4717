// Subcommand registry for the `clbo` binary. Each cmd_*.cpp registers itself with a static
// Registrar, so adding a subcommand touches one file only.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace clbo::cli {

// setup adds the subcommand's options to `sub` and returns the action to run when chosen.
using Setup = std::function<std::function<int()>(CLI::App& sub)>;

struct Registrar {
  Registrar(std::string name, std::string description, Setup setup);
};

// Prints "[clbo] message" to stderr; used for progress on long runs.
void progress(const std::string& message);

}  // namespace clbo::cli
