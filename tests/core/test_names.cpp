#include <gtest/gtest.h>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/names.hpp"
#include "clbo_test/rejection.hpp"

namespace {

using clbo::ConfigReader;
using clbo::InputError;
using clbo::test::rejection_message;
using nlohmann::json;

enum class Color { kRed, kGreen, kBlue, kInternal };
constexpr auto kColorNames = clbo::name_table<Color>({{Color::kRed, "red"},
                                                      {Color::kGreen, "green"},
                                                      {Color::kBlue, "blue"},
                                                      {Color::kInternal, "internal"}});

TEST(Names, PrintAndFindAreInverse) {
  static_assert(kColorNames.name(Color::kBlue) == std::string_view("blue"));
  static_assert(kColorNames.find("green") == Color::kGreen);
  for (const auto& e : kColorNames.entries) EXPECT_EQ(kColorNames.find(e.name), e.value);
  EXPECT_FALSE(kColorNames.find("Red").has_value()) << "spellings are case-sensitive";
  EXPECT_EQ(kColorNames.names(), (std::vector<std::string>{"red", "green", "blue", "internal"}));
  EXPECT_STREQ(kColorNames.name(static_cast<Color>(42)), "?");
}

TEST(Names, ConfigChoiceReadsAnEnum) {
  json j = {{"a", "blue"}, {"b", "internal"}};
  ConfigReader r(j, "c.json", "p");
  EXPECT_EQ(r.choice("a", Color::kRed, kColorNames), Color::kBlue);
  EXPECT_EQ(r.choice("absent", Color::kGreen, kColorNames), Color::kGreen);
  EXPECT_EQ(r.choice("b", Color::kRed, kColorNames), Color::kInternal);
  EXPECT_EQ(r.required_choice("a", kColorNames), Color::kBlue);
}

TEST(Names, AllowedSubsetHidesInternalValues) {
  json j = {{"a", "internal"}};
  ConfigReader r(j, "c.json", "p");
  const std::string msg = rejection_message([&] {
    r.choice("a", Color::kRed, kColorNames, {Color::kRed, Color::kBlue});
  });
  EXPECT_NE(msg.find("p.a"), std::string::npos) << msg;
  EXPECT_NE(msg.find("red, blue"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("green"), std::string::npos) << msg;
}

TEST(Names, UnknownSpellingSuggestsTheNearest) {
  json j = {{"a", "gren"}};
  ConfigReader r(j, "c.json", "p");
  const std::string msg = rejection_message([&] { r.choice("a", Color::kRed, kColorNames); });
  EXPECT_NE(msg.find("c.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gren"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'green'"), std::string::npos) << msg;
}

TEST(Names, RequiredChoiceNamesTheChoices) {
  json j = {{"a", nullptr}};
  ConfigReader r(j, "c.json", "p");
  const std::string absent = rejection_message([&] { r.required_choice("missing", kColorNames); });
  EXPECT_NE(absent.find("p.missing"), std::string::npos) << absent;
  EXPECT_NE(absent.find("required: one of red, green, blue, internal"), std::string::npos)
      << absent;
  const std::string null = rejection_message([&] {
    r.required_choice("a", kColorNames, {Color::kGreen, Color::kBlue});
  });
  EXPECT_NE(null.find("required: one of green, blue"), std::string::npos) << null;
}

}  // namespace
