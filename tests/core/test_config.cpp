#include <gtest/gtest.h>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/results.hpp"

#include <filesystem>
#include <fstream>

namespace {

using clbo::ConfigReader;
using clbo::InputError;
using nlohmann::json;

TEST(Config, ReadsAndValidatesFields) {
  json j = {{"lr", 0.01}, {"betas", {0.9, 0.999}}, {"freeze_step", 10}, {"mode", "fp16"}};
  ConfigReader r(j, "opt.json", "params");
  EXPECT_DOUBLE_EQ(r.number_in("lr", 1, 0, false, 1e9, true), 0.01);
  EXPECT_EQ(r.betas("betas", {0, 0}).second, 0.999);
  EXPECT_EQ(r.integer("freeze_step", 0, 0, 1000), 10);
  EXPECT_EQ(r.choice("mode", "fp32", {"fp16", "fp32"}), "fp16");
  EXPECT_EQ(r.integer("absent", 7, 0, 1000), 7);
  EXPECT_NO_THROW(r.finish());
}

TEST(Config, ErrorNamesFileFieldAndValue) {
  json j = {{"lr", -1.0}};
  ConfigReader r(j, "opt.json", "params");
  try {
    r.number_in("lr", 1, 0, false, 1e9, true);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("opt.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("params.lr"), std::string::npos) << msg;
    EXPECT_NE(msg.find("-1"), std::string::npos) << msg;
  }
}

TEST(Config, UnknownKeySuggestsNearest) {
  json j = {{"freze_step", 3}};
  ConfigReader r(j, "opt.json", "params");
  r.integer("freeze_step", 0, 0, 1000);
  try {
    r.finish();
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'freeze_step'"), std::string::npos)
        << e.what();
  }
}

TEST(Config, BetasOutsideRangeRejected) {
  json j = {{"betas", {0.9, 1.0}}};
  ConfigReader r(j, "f", "params");
  EXPECT_THROW(r.betas("betas", {0.9, 0.999}), InputError);
}

TEST(Config, NonIntegerRejected) {
  json j = {{"n", 1.5}};
  ConfigReader r(j, "f");
  EXPECT_THROW(r.integer("n", 0, 0, 1000), InputError);
}

TEST(Results, AtomicWriteReplacesWholeFile) {
  const auto dir = std::filesystem::temp_directory_path() / "clbo_test_atomic";
  std::filesystem::remove_all(dir);
  const std::string path = (dir / "sub" / "x.json").string();
  clbo::write_json_atomic(path, json{{"a", 1}});
  clbo::write_json_atomic(path, json{{"b", 2}});
  std::ifstream in(path);
  json back = json::parse(in);
  EXPECT_EQ(back, (json{{"b", 2}}));
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir / "sub")) (void)e, ++files;
  EXPECT_EQ(files, 1u) << "no temporary left behind";
  std::filesystem::remove_all(dir);
}

TEST(Results, EnvironmentRecordsVersion) {
  const auto env = clbo::environment_json();
  EXPECT_FALSE(env["clbo_version"].get<std::string>().empty());
  EXPECT_TRUE(env.contains("git_hash"));
  EXPECT_TRUE(env["gpu"].is_null());
}

}  // namespace
