#include "clbo/report/results_store.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"

namespace clbo::report {

namespace fs = std::filesystem;

const std::vector<std::string>& supported_schemas() {
  static const std::vector<std::string> s = {
      "clbo.simulate/1",          "clbo.train/1",
      "clbo.bench.collectives/1", "clbo.bench.kernels/1",
      "clbo.bench.kernels/2",     "clbo.demo/1",
      "clbo.validate/1",          "clbo.validate.repeatability/1"};
  return s;
}

std::string check_schema(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object())
    throw InputError(path, "(root)", doc.dump().substr(0, 60),
                     "expected a clbo results object with a \"schema\" field");
  const auto it = doc.find("schema");
  if (it == doc.end())
    throw InputError(path, "schema", "missing",
                     std::string("not a clbo results file (every results file names its schema; "
                                 "see results/SCHEMA.md)") +
                         (doc.contains("simulate") || doc.contains("optimizers")
                              ? "; it looks like an experiment file: `clbo simulate` or `clbo "
                                "train` it"
                              : ""));
  if (!it->is_string()) throw InputError(path, "schema", it->dump(), "expected a string");
  const std::string schema = it->get<std::string>();
  const auto& known = supported_schemas();
  if (std::find(known.begin(), known.end(), schema) != known.end()) return schema;
  throw InputError(path, "schema", it->dump(),
                   fmt::format("is not supported by this clbo (it reads {}){}",
                               fmt::join(known, ", "), did_you_mean(schema, known)));
}

ResultsStore ResultsStore::load(const std::string& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) {
    // One results file: its key is its name without .json.
    ResultsStore store;
    store.dir_ = dir;
    ResultsFile f;
    f.path = dir;
    f.key = fs::path(dir).stem().string();
    f.doc = load_json_file(f.path);
    f.schema = check_schema(f.doc, f.path);
    store.files_.emplace(f.key, std::move(f));
    return store;
  }
  if (!fs::is_directory(dir, ec))
    throw InputError(dir, "(results folder)", dir,
                     fs::exists(dir, ec) ? "is neither a folder nor a file" : "does not exist");
  ResultsStore store;
  store.dir_ = dir;
  std::vector<fs::path> paths;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    // raw/ folders keep other tools' own output verbatim (GoogleTest, Google Benchmark,
    // the reference-path script): recorded evidence, not clbo results (results/SCHEMA.md).
    if (it->is_directory() && it->path().filename() == "raw") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".json") paths.push_back(it->path());
  }
  if (ec) throw Error(fmt::format("{}: cannot list the results folder: {}", dir, ec.message()));
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    ResultsFile f;
    f.path = p.string();
    f.key = fs::path(p).lexically_relative(dir).replace_extension().generic_string();
    f.doc = load_json_file(f.path);
    f.schema = check_schema(f.doc, f.path);
    store.files_.emplace(f.key, std::move(f));
  }
  return store;
}

const ResultsFile* ResultsStore::find(const std::string& key) const {
  const auto it = files_.find(key);
  return it == files_.end() ? nullptr : &it->second;
}

std::vector<const ResultsFile*> ResultsStore::with_schema(const std::string& schema) const {
  std::vector<const ResultsFile*> out;
  for (const auto& [key, f] : files_)
    if (f.schema == schema) out.push_back(&f);
  return out;
}

std::string ResultsStore::path_of(const std::string& key) const {
  return (fs::path(dir_) / (key + ".json")).string();
}

}  // namespace clbo::report
