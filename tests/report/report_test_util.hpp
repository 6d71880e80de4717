// Small synthetic results folders and claim specs for the report tests: a temporary folder
// per test and helpers to write JSON into it.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace clbo::report::test {

using nlohmann::json;
namespace fs = std::filesystem;

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("clbo-report-") + info->test_suite_name() +
                                        "-" + info->name() + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& rel) const { return (dir_ / rel).string(); }
  void write_text(const std::string& rel, const std::string& text) const {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << text;
  }
  void write_json(const std::string& rel, const json& j) const { write_text(rel, j.dump(2)); }

  fs::path dir_;
};

// The "simulate" block of the synthetic spec "demo-claims"; its results file must carry the
// same block in config.simulate to be fresh.
inline json sim_block() {
  return {{"workload", "bert-large-seq128"}, {"clusters", {"paper-eth-v100"}}, {"gpus", {16, 64}}};
}

inline json sim_run(const std::string& opt, int gpus, double samples_per_s, double bytes,
                    json speedup = nullptr, json volume = nullptr) {
  return {{"optimizer", opt},
          {"cluster", "paper-eth-v100"},
          {"gpus", gpus},
          {"baseline", opt == "Adam" ? json(nullptr) : json("Adam")},
          {"batch_size", gpus * 16},
          {"step_kinds", json::array({{{"simulated", {{"time_ms", 100.0 + gpus}}}}})},
          {"simulated",
           {{"samples_per_s", samples_per_s},
            {"total_bytes_per_gpu", bytes},
            {"speedup", speedup},
            {"volume_reduction", volume}}}};
}

// A clbo.simulate/1 results document: Adam and 1-bit Adam at 16 and 64 GPUs.
inline json sim_results(const json& simulate = sim_block()) {
  return {{"schema", "clbo.simulate/1"},
          {"config", {{"name", "demo-claims"}, {"simulate", simulate}}},
          {"environment", {{"clbo_version", "0.1.0"}}},
          {"runs",
           {sim_run("Adam", 16, 100, 1000), sim_run("1-bit Adam", 16, 250, 200, 2.5, 5.0),
            sim_run("Adam", 64, 200, 1000), sim_run("1-bit Adam", 64, 640, 210, 3.2, 4.76)}},
          {"timing", {{"wall_s", 1.0}}}};
}

inline json train_results() {
  return {{"schema", "clbo.train/1"},
          {"kind", "measured"},
          {"config", {{"steps", 10}}},
          {"summary",
           {{{"label", "Adam"},
             {"optimizer_type", "Adam"},
             {"baseline", nullptr},
             {"seeds_run", 2},
             {"final_test_accuracy", {{"mean", 0.87}, {"std", 0.001}}},
             {"gap_to_baseline_points", nullptr},
             {"comm_relative_to_baseline", nullptr}},
            {{"label", "1-bit Adam"},
             {"optimizer_type", "OneBitAdam"},
             {"baseline", "Adam"},
             {"seeds_run", 2},
             {"final_test_accuracy", {{"mean", 0.868}, {"std", 0.002}}},
             {"final_train_set_loss", {{"mean", 0.25}, {"std", 0.0125}}},
             {"gap_to_baseline_points", {{"mean", -0.2}, {"std", 0.1}}},
             {"comm_relative_to_baseline", 0.2237}}}}};
}

inline json claim(const std::string& id, const json& metric, json paper_value = 3.3,
                  const std::string& kind = "speedup") {
  return {{"id", id},
          {"paper", "1-bit Adam"},
          {"table", "1-bit Adam: throughput"},
          {"setting", "BERT-Large, 64 V100, 40 GbE"},
          {"quantity", "speedup over Adam"},
          {"kind", kind},
          {"unit", "x"},
          {"paper_value", paper_value},
          {"source", "docs/reference/published.md §1"},
          {"metric", metric}};
}

// A vector, not a json: `{c}` of one json would copy c instead of making an array.
inline json spec_with(const std::vector<json>& claims, const std::string& name = "demo-claims") {
  return {{"name", name},
          {"description", "synthetic claims for tests"},
          {"source", "docs/reference/published.md §1"},
          {"simulate", sim_block()},
          {"claims", claims}};
}

inline json sel(const std::string& opt, int gpus, const std::string& field) {
  return {{"where", {{"optimizer", opt}, {"gpus", gpus}}}, {"field", field}};
}

}  // namespace clbo::report::test
