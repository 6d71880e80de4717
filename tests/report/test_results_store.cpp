// Loading a results folder: keys, ignored non-JSON files, and the refusals (unknown schema
// version, corrupt JSON, no schema, missing folder), each naming the file; raw/ folders skipped.
#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/report/results_store.hpp"
#include "report_test_util.hpp"

namespace clbo::report::test {
namespace {

class ResultsStoreTest : public TempDirTest {};

std::string load_error(const std::string& dir) {
  try {
    ResultsStore::load(dir);
  } catch (const clbo::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(ResultsStoreTest, KeysAreRelativePathsWithoutJsonAndOtherFilesAreIgnored) {
  write_json("sim/default-sweep.json", sim_results());
  write_json("convergence/adam_family.json", train_results());
  write_text("convergence/SUMMARY.md", "# not JSON, not read\n");
  write_text("plots/x.png", "\x89PNG");
  const ResultsStore s = ResultsStore::load(dir_.string());
  ASSERT_EQ(s.files().size(), 2u);
  ASSERT_NE(s.find("sim/default-sweep"), nullptr);
  EXPECT_EQ(s.find("sim/default-sweep")->schema, "clbo.simulate/1");
  EXPECT_EQ(s.find("convergence/adam_family")->schema, "clbo.train/1");
  EXPECT_EQ(s.find("sim/missing"), nullptr);
  EXPECT_EQ(s.with_schema("clbo.train/1").size(), 1u);
  EXPECT_EQ(s.path_of("paper/x"), (dir_ / "paper/x.json").string());
}

TEST_F(ResultsStoreTest, RawFoldersOfOtherToolsOutputAreNotRead) {
  write_json("gpu/raw/tests-cuda.json", {{"testsuites", 3}});  // GoogleTest's own JSON
  write_text("gpu/raw/broken.json", "{ not json");
  write_json("gpu/collectives-nccl-p1.json", {{"schema", "clbo.bench.collectives/1"}});
  const ResultsStore s = ResultsStore::load(dir_.string());
  ASSERT_EQ(s.files().size(), 1u);
  EXPECT_NE(s.find("gpu/collectives-nccl-p1"), nullptr);
  // Only a folder named exactly raw/ is skipped.
  write_json("gpu/rawish/tests.json", {{"testsuites", 3}});
  EXPECT_NE(load_error(dir_.string()).find("rawish/tests.json"), std::string::npos);
}

TEST_F(ResultsStoreTest, EveryKnownSchemaLoads) {
  for (const auto& schema : supported_schemas())
    write_json("all/" + schema + ".json", {{"schema", schema}});
  EXPECT_EQ(ResultsStore::load(dir_.string()).files().size(), supported_schemas().size());
}

TEST_F(ResultsStoreTest, AnotherSchemaVersionIsRefusedNamingTheFileAndWhatIsRead) {
  json doc = sim_results();
  doc["schema"] = "clbo.simulate/2";
  write_json("sim/x.json", doc);
  const std::string err = load_error(dir_.string());
  EXPECT_NE(err.find("sim/x.json"), std::string::npos) << err;
  EXPECT_NE(err.find("\"clbo.simulate/2\""), std::string::npos) << err;
  EXPECT_NE(err.find("is not supported by this clbo"), std::string::npos) << err;
  EXPECT_NE(err.find("clbo.simulate/1"), std::string::npos) << err;
  // The old demo name is refused too (it is clbo.demo/1 now).
  fs::remove(path("sim/x.json"));
  write_json("demo.json", {{"schema", "clbo.demo.v1"}});
  EXPECT_NE(load_error(dir_.string()).find("clbo.demo.v1"), std::string::npos);
}

TEST_F(ResultsStoreTest, CorruptJsonIsNamed) {
  write_json("sim/good.json", sim_results());
  write_text("sim/broken.json", "{\"schema\": \"clbo.simulate/1\", \"runs\": [");
  const std::string err = load_error(dir_.string());
  EXPECT_NE(err.find("sim/broken.json"), std::string::npos) << err;
  EXPECT_NE(err.find("invalid JSON"), std::string::npos) << err;
}

TEST_F(ResultsStoreTest, JsonWithoutSchemaOrNotAnObjectIsNamed) {
  write_json("bench/raw.json", {{"benchmarks", json::array()}});
  std::string err = load_error(dir_.string());
  EXPECT_NE(err.find("bench/raw.json"), std::string::npos) << err;
  EXPECT_NE(err.find("'schema'"), std::string::npos) << err;
  fs::remove(path("bench/raw.json"));
  write_json("list.json", json::array({1, 2}));
  err = load_error(dir_.string());
  EXPECT_NE(err.find("list.json"), std::string::npos) << err;
}

TEST_F(ResultsStoreTest, MissingFolderIsAnError) {
  const std::string err = load_error(path("nope"));
  EXPECT_NE(err.find("nope"), std::string::npos) << err;
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
}

}  // namespace
}  // namespace clbo::report::test
