#include "clbo/core/json_reader.hpp"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <vector>

#include "clbo/core/error.hpp"
#include "clbo/core/input_file.hpp"

namespace clbo {

namespace {

using nlohmann::json;

// Bytes as a readable literal: printable ASCII kept, the rest \xNN, at most max_len bytes.
std::string quoted_bytes(std::string_view s, size_t max_len = 40) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < max_len; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > max_len) out += "...";
  return out + "'";
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& where, const JsonReadOptions& options)
      : s_(text), where_(where), options_(options) {}

  json document() {
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a UTF-8 byte order mark, as nlohmann
    skip_space();
    if (pos_ == s_.size()) fail_here("the document is empty");
    json v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail_here("unexpected text after the end of the JSON value");
    return v;
  }

 private:
  // ---- positions and errors ----
  std::pair<size_t, size_t> line_column(size_t offset) const {
    size_t line = 1, start = 0;
    for (size_t i = 0; i < offset && i < s_.size(); ++i)
      if (s_[i] == '\n') ++line, start = i + 1;
    return {line, offset - start + 1};
  }
  std::string position(size_t offset) const {
    const auto [line, column] = line_column(offset);
    return fmt::format("line {}, column {}", line, column);
  }
  std::string path() const {
    if (path_.empty()) return "(root)";
    std::string p;
    for (const auto& part : path_) p += (p.empty() && part[0] == '.') ? part.substr(1) : part;
    return p;
  }
  [[noreturn]] void fail_at(size_t offset, const std::string& why) const {
    const std::string value = offset >= s_.size() ? "end of file" : quoted_bytes(s_.substr(offset));
    throw InputError(where_, path(), value,
                     fmt::format("invalid JSON at {}: {}", position(offset), why));
  }
  [[noreturn]] void fail_here(const std::string& why) const { fail_at(pos_, why); }

  // ---- lexing ----
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  // JSON's four whitespace characters, and with options_.comments hjson's comments.
  void skip_space() {
    for (;;) {
      while (pos_ < s_.size() &&
             (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
        ++pos_;
      if (!options_.comments || !skip_comment()) return;
    }
  }
  // One `#` or `//` comment (to the end of the line) or `/* */` comment at pos_; false when
  // none starts there.
  bool skip_comment() {
    const char c = peek();
    const char next = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
    if (c == '#' || (c == '/' && next == '/')) {
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      return true;
    }
    if (c == '/' && next == '*') {
      const size_t end = s_.find("*/", pos_ + 2);
      if (end == std::string_view::npos) fail_here("the /* comment has no closing */");
      pos_ = end + 2;
      return true;
    }
    return false;
  }
  void expect(char c, const char* why) {
    if (peek() != c) fail_here(why);
    ++pos_;
  }
  void check_depth(size_t depth) const {
    if (depth > options_.max_depth)
      fail_here(fmt::format("arrays and objects nest deeper than {} levels", options_.max_depth));
  }

  // ---- values ----
  json value(size_t depth) {
    switch (peek()) {
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case '"':
        return json(string());
      case 't':
        literal("true");
        return json(true);
      case 'f':
        literal("false");
        return json(false);
      case 'n':
        literal("null");
        return json(nullptr);
      default:
        if (peek() == '-' || is_digit(peek())) return number();
        fail_here(pos_ == s_.size()
                      ? "the document ends where a value should be"
                      : "expected a value: an object, an array, a string, a number, true, false "
                        "or null");
    }
  }

  void literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word)
      fail_here(fmt::format("expected '{}' (JSON's literals are true, false and null)", word));
    pos_ += word.size();
  }

  json object(size_t depth) {
    check_depth(depth);
    ++pos_;  // '{'
    json obj = json::object();
    auto& members = obj.get_ref<json::object_t&>();
    std::map<std::string, size_t> key_offsets;
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return obj;
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail_here("expected a key in double quotes");
      const size_t key_offset = pos_;
      std::string key = string();
      skip_space();
      expect(':', "expected ':' after the key");
      skip_space();
      path_.push_back("." + key);
      json v = value(depth);
      const auto [first, fresh] = key_offsets.emplace(key, key_offset);
      if (!fresh) duplicate(key, first->second, key_offset, members.at(key), v);
      path_.pop_back();
      members.emplace(std::move(key), std::move(v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
        if (options_.trailing_commas && peek() == '}') {
          ++pos_;
          return obj;
        }
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return obj;
      }
      fail_here("expected ',' or '}' after a member of the object");
    }
  }

  [[noreturn]] void duplicate(const std::string& key, size_t first, size_t again,
                              const json& first_value, const json& again_value) const {
    throw InputError(where_, path(), json_excerpt(again_value),
                     fmt::format("key '{}' appears twice in one object: first at {} (= {}), "
                                 "again at {}; give each key once (JSON readers disagree on "
                                 "which one wins)",
                                 bounded_text(key), position(first), json_excerpt(first_value),
                                 position(again)));
  }

  json array(size_t depth) {
    check_depth(depth);
    ++pos_;  // '['
    json arr = json::array();
    auto& items = arr.get_ref<json::array_t&>();
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return arr;
    }
    for (;;) {
      skip_space();
      path_.push_back(fmt::format("[{}]", items.size()));
      items.push_back(value(depth));
      path_.pop_back();
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
        if (options_.trailing_commas && peek() == ']') {
          ++pos_;
          return arr;
        }
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return arr;
      }
      fail_here("expected ',' or ']' after an element of the array");
    }
  }

  json number() {
    const size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++pos_;
    } else {
      fail_here("expected a digit");
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!is_digit(peek())) fail_here("expected a digit after the decimal point");
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) fail_here("expected a digit in the exponent");
      while (is_digit(peek())) ++pos_;
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    if (integral) {
      // nlohmann's kinds: negative literals signed, the others unsigned; beyond 64 bits a
      // double, below.
      if (*first == '-') {
        int64_t v = 0;
        if (std::from_chars(first, last, v).ec == std::errc()) return json(v);
      } else {
        uint64_t v = 0;
        if (std::from_chars(first, last, v).ec == std::errc()) return json(v);
      }
    }
    double d = 0;
    const auto r = std::from_chars(first, last, d);
    if (r.ec != std::errc() || r.ptr != last)
      fail_at(start,
              "the number is outside the range of a double (magnitudes from about 2.2e-308 to "
              "1.8e308, or 0)");
    return json(d);
  }

  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  uint32_t hex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const int d = hex_digit(peek());
      if (d < 0) fail_here("expected four hex digits after \\u");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return v;
  }
  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  void escape(std::string& out) {
    ++pos_;  // '\\'
    const char c = peek();
    ++pos_;
    switch (c) {
      case '"':
        out += '"';
        return;
      case '\\':
        out += '\\';
        return;
      case '/':
        out += '/';
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'n':
        out += '\n';
        return;
      case 'r':
        out += '\r';
        return;
      case 't':
        out += '\t';
        return;
      case 'u': {
        const size_t at = pos_ - 2;
        uint32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          fail_at(at, "a low surrogate \\uDC00-\\uDFFF must follow a high one");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (peek() != '\\' || pos_ + 1 >= s_.size() || s_[pos_ + 1] != 'u')
            fail_at(at, "a high surrogate \\uD800-\\uDBFF must be followed by a low one");
          pos_ += 2;
          const uint32_t low = hex4();
          if (low < 0xDC00 || low > 0xDFFF)
            fail_at(at, "a high surrogate \\uD800-\\uDBFF must be followed by a low one");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, cp);
        return;
      }
      default:
        fail_at(pos_ - 2, "unknown escape; JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
    }
  }

  // One multi-byte UTF-8 character (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
  void utf8(std::string& out) {
    const auto b0 = static_cast<unsigned char>(s_[pos_]);
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    } else {
      fail_here("invalid UTF-8 in a string");
    }
    if (pos_ + len > s_.size()) fail_here("invalid UTF-8 in a string (cut short)");
    for (size_t i = 1; i < len; ++i) {
      const auto b = static_cast<unsigned char>(s_[pos_ + i]);
      if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF))
        fail_here("invalid UTF-8 in a string");
    }
    out.append(s_.substr(pos_, len));
    pos_ += len;
  }

  std::string string() {
    const size_t start = pos_;
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail_at(start, "the string has no closing quote");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '\\') {
        escape(out);
      } else if (c < 0x20) {
        fail_here("a control character inside a string (write it as an escape, e.g. \\n)");
      } else if (c < 0x80) {
        // A run of plain characters in one append.
        size_t end = pos_;
        while (end < s_.size()) {
          const auto x = static_cast<unsigned char>(s_[end]);
          if (x == '"' || x == '\\' || x < 0x20 || x >= 0x80) break;
          ++end;
        }
        out.append(s_.substr(pos_, end - pos_));
        pos_ = end;
      } else {
        utf8(out);
      }
    }
  }

  std::string_view s_;
  const std::string& where_;
  const JsonReadOptions& options_;
  size_t pos_ = 0;
  std::vector<std::string> path_;  // ".key" or "[i]" per level
};

void excerpt_into(const json& v, std::string& out, size_t budget, size_t depth) {
  if (out.size() > budget) return;
  const auto dump = [](const json& x) {
    return x.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  if (v.is_object() || v.is_array()) {
    const bool obj = v.is_object();
    if (depth >= 16) {
      out += obj ? "{...}" : "[...]";
      return;
    }
    out += obj ? '{' : '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= budget; ++it) {
      if (!first) out += ',';  // separators as dump() writes them
      first = false;
      if (obj) {
        const std::string& k = it.key();
        out += dump(json(k.size() > budget ? k.substr(0, budget) : k));
        out += ':';
      }
      excerpt_into(*it, out, budget, depth + 1);
    }
    out += obj ? '}' : ']';
  } else if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    out += dump(json(s.size() > budget ? s.substr(0, budget + 1) : s));
  } else {
    out += dump(v);
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& where,
                          const JsonReadOptions& options) {
  if (text.size() > options.max_bytes)
    throw InputError(where, "(file)", where,
                     fmt::format("is {} bytes; clbo reads JSON documents of at most {} bytes",
                                 text.size(), options.max_bytes));
  return Parser(text, where, options).document();
}

nlohmann::json load_json_file(const std::string& path, const JsonReadOptions& options) {
  return parse_json(read_input_file(path, options.max_bytes), path, options);
}

nlohmann::json load_json_file_named_by(const std::string& path, const std::string& where,
                                       const std::string& field, const JsonReadOptions& options) {
  std::string text;
  try {
    text = read_input_file(path, options.max_bytes);
  } catch (const InputError& e) {
    throw InputError(where, field, json(path).dump(), e.why());
  }
  return parse_json(text, path, options);
}

std::string json_excerpt(const nlohmann::json& value, size_t max_chars) {
  std::string out;
  excerpt_into(value, out, max_chars, 0);
  if (out.size() <= max_chars) return out;
  size_t cut = max_chars;  // at a UTF-8 character boundary
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  return out.substr(0, cut) + "...";
}

}  // namespace clbo
