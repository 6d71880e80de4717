// The clbo command line: one subcommand per engine (see `clbo --help`).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"
#include "cli.hpp"

namespace clbo::cli {

namespace {
struct Entry {
  std::string name, description;
  Setup setup;
};
std::vector<Entry>& registry() {
  static std::vector<Entry> r;
  return r;
}
}  // namespace

Registrar::Registrar(std::string name, std::string description, Setup setup) {
  registry().push_back({std::move(name), std::move(description), std::move(setup)});
}

void progress(const std::string& message) {
  std::cerr << "[clbo] " << message << std::endl;
}

}  // namespace clbo::cli

int main(int argc, char** argv) {
  using namespace clbo;
  const std::string version = fmt::format("clbo {} ({})", clbo_version(), clbo_git_hash());
  CLI::App app{"clbo: compressed large-batch optimizers (1-bit Adam, 1-bit LAMB, 0/1 Adam, SLAMB)"};
  app.set_version_flag("--version", version);
  app.require_subcommand(1);
  std::function<int()> action;
  auto entries = cli::registry();
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.name < b.name; });
  for (auto& e : entries) {
    CLI::App* sub = app.add_subcommand(e.name, e.description);
    sub->set_version_flag("--version", version);
    auto act = e.setup(*sub);
    sub->callback([&action, act] { action = act; });
  }
  // A mistyped subcommand: CLI11 would only say the argument was not expected.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto& e : entries) names.push_back(e.name);
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string near = nearest_name(argv[1], names);
      const std::string list = fmt::format("{}", fmt::join(names, ", "));
      std::cerr << "clbo: error: "
                << InputError("<command line>", "subcommand", bounded_text(argv[1]),
                              (near.empty() ? std::string("unknown subcommand")
                                            : "unknown subcommand; did you mean '" + near + "'?") +
                                  " (subcommands: " + list + "; see clbo --help)")
                       .what()
                << std::endl;
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every other parse error is an input error.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "clbo: error: <command line>: " << e.what()
              << "\nRun with --help for more information." << std::endl;
    return 2;
  }
  try {
    return action ? action() : 0;
  } catch (const InputError& e) {
    std::cerr << "clbo: error: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "clbo: error: " << exception_text(e) << std::endl;
    return 1;
  } catch (...) {
    std::cerr << "clbo: error: an unknown exception stopped the command" << std::endl;
    return 1;
  }
}
