// The one reader of JSON documents (configs, layouts, presets, results). It is strict where
// nlohmann's parser is lenient in ways that hide mistakes, and bounded where a hostile file
// could exhaust the stack or memory:
//   - a key given twice in one object is an error naming both occurrences (line, column and
//     value), instead of the last one silently winning;
//   - nesting deeper than max_depth is an error (clbo's deepest file nests about 8 levels;
//     the bound keeps every later recursive walk, such as dump(), far from the stack limit);
//   - numbers keep their kind: an integer literal is read as an integer (signed when negative,
//     unsigned otherwise, as nlohmann does), one beyond 64 bits as a double; a number outside
//     the double range (1e400) is an error, not infinity;
//   - strings must be valid UTF-8 (the results writer could not dump them otherwise);
//   - every error names the source, the dotted path of the value (`optimizer.params.lr`),
//     line and column, and quotes at most kMaxEchoedChars of the offending text.
// The result is an ordinary nlohmann::json, so readers downstream are unchanged.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace clbo {

struct JsonReadOptions {
  size_t max_depth = 64;                 // nested arrays and objects
  size_t max_bytes = size_t{256} << 20;  // a file larger than this is refused before reading
  // hjson's leniencies, which DeepSpeed's config reader accepts (its own tutorials' configs
  // carry them): `#`, `//` and `/* */` comments, and a ',' before a closing '}' or ']'.
  // Off for clbo's own files, so a stray comma there still names its line.
  bool comments = false;
  bool trailing_commas = false;
};

// The options DeepSpeed configs are read with.
inline JsonReadOptions deepspeed_json_options() {
  JsonReadOptions o;
  o.comments = true;
  o.trailing_commas = true;
  return o;
}

// Parses a whole document; `where` names the source (a path, "<preset x>") in errors.
nlohmann::json parse_json(std::string_view text, const std::string& where,
                          const JsonReadOptions& options = {});

// Reads a regular file (see input_file.hpp) and parses it.
nlohmann::json load_json_file(const std::string& path, const JsonReadOptions& options = {});

// A JSON file that a field of another file names (a kernel benchmark, a cluster, a profile):
// when the file cannot be read at all, the error names `where` and `field` too, so the user
// sees which setting points at it; errors inside the file name the file.
nlohmann::json load_json_file_named_by(const std::string& path, const std::string& where,
                                       const std::string& field,
                                       const JsonReadOptions& options = {});

// A short text form of a value for messages: at most max_chars characters, built without
// dumping the whole value (a huge array costs only the characters shown).
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = 120);

}  // namespace clbo
