// The JSON document reader (json_reader.hpp) and the integer and fp32 accessors of the config
// reader: strict where nlohmann is lenient, bounded where a hostile file could hurt.
#include <gtest/gtest.h>

#include <cfloat>
#include <string>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/json_reader.hpp"
#include "clbo_test/rejection.hpp"

namespace {

using clbo::ConfigReader;
using clbo::InputError;
using clbo::parse_json;
using clbo::test::contains;
using clbo::test::rejection_message;
using nlohmann::json;

TEST(JsonReader, ReadsWhatNlohmannReads) {
  const char* doc =
      R"({"a": [1, -2, 3.5, 1e3, 18446744073709551615, 18446744073709551616, -9223372036854775808],
          "s": "caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t", "t": true, "f": false, "n": null,
          "o": {"x": {}, "y": []}})";
  const json mine = parse_json(doc, "d.json");
  EXPECT_EQ(mine, json::parse(doc));
  EXPECT_EQ(mine.dump(), json::parse(doc).dump());
  EXPECT_TRUE(mine["a"][0].is_number_unsigned());
  EXPECT_TRUE(mine["a"][1].is_number_integer());
  EXPECT_TRUE(mine["a"][5].is_number_float());  // beyond 64 bits
  EXPECT_EQ(parse_json("\xEF\xBB\xBF[1]", "bom.json"), json::array({1}));
}

TEST(JsonReader, DuplicateKeysNameBothOccurrences) {
  const std::string msg =
      rejection_message([] { parse_json("{\"p\": {\"k\": 1,\n  \"k\": 2}}", "dup.json"); });
  EXPECT_TRUE(contains(msg, "dup.json: field 'p.k' = 2")) << msg;
  EXPECT_TRUE(contains(msg, "first at line 1, column 8 (= 1), again at line 2, column 3")) << msg;
}

TEST(JsonReader, NestingIsBounded) {
  EXPECT_NO_THROW(parse_json(std::string(64, '[') + std::string(64, ']'), "ok.json"));
  const std::string msg =
      rejection_message([] { parse_json(std::string(100000, '['), "deep.json"); });
  EXPECT_TRUE(contains(msg, "nest deeper than 64 levels")) << msg;
  EXPECT_LT(msg.size(), 1000u);
  clbo::JsonReadOptions shallow;
  shallow.max_depth = 2;
  EXPECT_THROW(parse_json("[[[1]]]", "x", shallow), InputError);
}

TEST(JsonReader, SyntaxErrorsNamePathLineAndColumn) {
  const std::string msg = rejection_message([] { parse_json("{\"a\": [1,\n 2 3]}", "s.json"); });
  EXPECT_TRUE(contains(msg, "s.json: field 'a' = '3]}': invalid JSON at line 2, column 4")) << msg;
  for (const char* bad : {"",
                          "  ",
                          "[1,]",
                          "{\"a\" 1}",
                          "{\"a\": 1,}",
                          "[1] x",
                          "01",
                          "1.",
                          "1e",
                          "-",
                          "tru",
                          "\"unterminated",
                          "\"\\x\"",
                          "\"\\ud800\"",
                          "\"\\udc00\"",
                          "\"\x01\"",
                          "\"\xff\"",
                          "\"\xc0\xaf\"",
                          "\"\xed\xa0\x80\"",
                          "1e400",
                          "-1e400",
                          "{1: 2}",
                          "[1 2]"})
    EXPECT_THROW(parse_json(bad, "bad.json"), InputError) << bad;
}

// DeepSpeed reads configs with hjson: comments and trailing commas pass with those options
// and only with them; everything else stays strict.
TEST(JsonReader, DeepSpeedLeniencyTakesCommentsAndTrailingCommas) {
  const char* doc = R"(# a DeepSpeed config
{
  // the batch
  "train_batch_size": 4096, /* global */
  "betas": [0.9, 0.999,],
  "fp16": {"enabled": true,},
  "url": "http://x/#not-a-comment",
})";
  const auto lenient = clbo::deepspeed_json_options();
  const json j = parse_json(doc, "ds.json", lenient);
  EXPECT_EQ(j["train_batch_size"], 4096);
  EXPECT_EQ(j["betas"].size(), 2u);
  EXPECT_EQ(j["fp16"]["enabled"], true);
  EXPECT_EQ(j["url"], "http://x/#not-a-comment");
  EXPECT_THROW(parse_json(doc, "ds.json"), InputError);  // clbo's own files stay strict
  EXPECT_THROW(parse_json("[1,]", "t.json"), InputError);
  EXPECT_THROW(parse_json("{\"a\": 1} // c", "t.json"), InputError);
  for (const char* bad : {"[1,,]", "[,]", "{,}", "{\"a\": 1,,}", "[1 /* open", "/ 1", "[1] x"})
    EXPECT_THROW(parse_json(bad, "bad.json", lenient), InputError) << bad;
  EXPECT_TRUE(contains(rejection_message([&] { parse_json("{\"a\": 1, /* x", "c.json", lenient); }),
                       "no closing */"));
}

TEST(JsonReader, ExcerptsAreBounded) {
  json big = json::array();
  for (int i = 0; i < 100000; ++i) big.push_back(i);
  const std::string e = clbo::json_excerpt(big, 50);
  EXPECT_LE(e.size(), 53u);
  EXPECT_EQ(e.substr(0, 7), "[0,1,2,");
  const json small = {{"a", {1, 2}}, {"b", "x"}};
  EXPECT_EQ(clbo::json_excerpt(small), small.dump());
  EXPECT_EQ(clbo::json_excerpt(json("short")), "\"short\"");
  const InputError err("f", "k", std::string(10000, 'v'), "why");
  EXPECT_LT(std::string(err.what()).size(), clbo::kMaxEchoedChars + 100);
  EXPECT_TRUE(contains(err.what(), "(10000 bytes in all)"));
}

TEST(JsonReader, FilesThatAreNotRegularAreRefused) {
  EXPECT_TRUE(contains(rejection_message([] { clbo::load_json_file("/"); }), "is a directory"));
  EXPECT_TRUE(
      contains(rejection_message([] { clbo::load_json_file("/dev/null"); }), "a character device"));
  EXPECT_TRUE(contains(rejection_message([] { clbo::load_json_file("/nonexistent/x.json"); }),
                       "cannot open: No such file or directory"));
  const std::string named = rejection_message([] {
    clbo::load_json_file_named_by("/nonexistent/k.json", "exp.json", "simulate.kernel_bench");
  });
  EXPECT_TRUE(contains(named, "exp.json: field 'simulate.kernel_bench' = \"/nonexistent/k.json\""))
      << named;
}

TEST(ConfigReaderIntegers, AreReadAsWrittenAndRangeChecked) {
  const json j = {{"wraps", 4294967300}, {"neg", -1},       {"big", 18446744073709551615ull},
                  {"float_int", 1e6},    {"fraction", 1.5}, {"huge_float", 1e30},
                  {"text", "7"}};
  ConfigReader r(j, "c.json");
  EXPECT_EQ(r.integer<int64_t>("wraps", 0, 0, int64_t{1} << 40), 4294967300);
  EXPECT_TRUE(contains(rejection_message([&] { r.integer<int>("wraps", 0, 0, 1 << 20); }),
                       "field 'wraps' = 4294967300: must be in [0, 1048576]"));
  EXPECT_TRUE(contains(rejection_message([&] { r.integer<uint64_t>("neg", 0, 0, UINT64_MAX); }),
                       "field 'neg' = -1: must be in [0, 18446744073709551615]"));
  EXPECT_EQ(r.integer<uint64_t>("big", 0, 0, UINT64_MAX), UINT64_MAX);
  EXPECT_TRUE(contains(rejection_message([&] { r.integer<int64_t>("big", 0, 0, INT64_MAX); }),
                       "must be in"));
  EXPECT_EQ(r.integer<int>("float_int", 0, 0, 1 << 20), 1000000);
  EXPECT_TRUE(contains(rejection_message([&] { r.integer<int>("fraction", 0, 0, 10); }),
                       "expected an integer"));
  EXPECT_TRUE(
      contains(rejection_message([&] { r.integer<int64_t>("huge_float", 0, 0, INT64_MAX); }),
               "field 'huge_float' = 1e+30: must be in"));
  EXPECT_TRUE(contains(rejection_message([&] { r.integer<int>("text", 0, 0, 10); }),
                       "expected an integer"));
  EXPECT_EQ(r.integers<int>("absent", {3, 4}, 1, 9), (std::vector<int>{3, 4}));
  const json arr = {{"gpus", {1, 8, 4294967300}}};
  ConfigReader a(arr, "c.json", "simulate");
  EXPECT_TRUE(contains(rejection_message([&] { a.integers<int>("gpus", {}, 1, 1 << 20); }),
                       "field 'simulate.gpus[2]' = 4294967300"));
}

TEST(ConfigReaderFp32, RejectsValuesThatOverflowOrVanishInFloat) {
  const json j = {{"big", 1e39},
                  {"tiny", 1e-50},
                  {"ok", 1e-30},
                  {"zero", 0.0},
                  {"max", static_cast<double>(FLT_MAX)},
                  {"betas", {0.9, 0.99999999999}}};
  ConfigReader r(j, "c.json", "params");
  EXPECT_TRUE(contains(rejection_message([&] { r.fp32_number("big", 0); }),
                       "params.big' = 1e+39: overflows fp32"));
  EXPECT_TRUE(
      contains(rejection_message([&] { r.fp32_number("tiny", 0); }), "smallest normal fp32"));
  EXPECT_EQ(r.fp32_number("ok", 0), 1e-30);
  EXPECT_EQ(r.fp32_number("zero", 1), 0.0);
  EXPECT_EQ(r.fp32_number("max", 0), static_cast<double>(FLT_MAX));
  EXPECT_TRUE(contains(rejection_message([&] {
                         r.betas("betas", {0.9, 0.999});
                       }),
                       "rounds to 1 in fp32"));
}

TEST(ConfigReaderStrings, StringArrayAndObjectAccessors) {
  const json j = {{"s", "x"}, {"n", 5}, {"a", {1}}, {"e", json::array()}, {"o", {{"k", 1}}}};
  ConfigReader r(j, "c.json");
  EXPECT_EQ(r.string("s", ""), "x");
  EXPECT_EQ(r.string("absent", "d"), "d");
  EXPECT_TRUE(contains(rejection_message([&] { r.string("n", ""); }), "expected a string"));
  EXPECT_EQ(r.array("a", true).size(), 1u);
  EXPECT_TRUE(
      contains(rejection_message([&] { r.array("e", false); }), "expected a non-empty array"));
  EXPECT_TRUE(contains(rejection_message([&] { r.array("missing", true); }), "required"));
  EXPECT_EQ(r.object("o", true)["k"], 1);
  EXPECT_TRUE(r.object("absent_object", false).empty());
  EXPECT_TRUE(contains(rejection_message([&] { r.object("s", false); }), "expected an object"));
}

}  // namespace
