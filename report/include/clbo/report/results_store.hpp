// Every results file under a folder, loaded once and checked against the schemas this clbo
// reads (results/SCHEMA.md). Files are keyed by their path relative to the folder without
// ".json" ("sim/default-sweep", "paper/x"), the names claim selectors use.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::report {

struct ResultsFile {
  std::string key;     // "sim/default-sweep"
  std::string path;    // as shown in errors: "<dir>/sim/default-sweep.json"
  std::string schema;  // "clbo.simulate/1"
  nlohmann::json doc;
};

// The schema names and versions this clbo reads, in the order error messages list them.
const std::vector<std::string>& supported_schemas();

// Throws clbo::InputError naming `path` when `doc` is not an object with a supported schema.
std::string check_schema(const nlohmann::json& doc, const std::string& path);

class ResultsStore {
 public:
  // Loads every *.json under `dir` recursively; other files (SUMMARY.md, figures) are ignored.
  // `dir` may also be one results file, keyed by its name without .json.
  // A missing folder, a file that is not valid JSON, a JSON file without "schema" or with an
  // unsupported one is an error naming it.
  static ResultsStore load(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const ResultsFile* find(const std::string& key) const;
  // Files in key order (deterministic report order).
  const std::map<std::string, ResultsFile>& files() const { return files_; }
  std::vector<const ResultsFile*> with_schema(const std::string& schema) const;
  // The path a key would have, for errors about files that do not exist.
  std::string path_of(const std::string& key) const;

 private:
  std::string dir_;
  std::map<std::string, ResultsFile> files_;
};

}  // namespace clbo::report
