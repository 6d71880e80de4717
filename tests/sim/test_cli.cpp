// `clbo simulate` end to end: results land atomically in the named file with a table on
// stdout; a bad experiment exits nonzero, names file, field and value, and writes nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "clbo/core/result_files.hpp"
#include "cli_harness.hpp"
#include "sim_test_util.hpp"

using clbo::test::CliTest;

class SimulateCli : public CliTest {};

TEST_F(SimulateCli, WritesResultsAndPrintsATable) {
  nlohmann::json s = {{"name", "cli"},
                      {"simulate",
                       {{"workload", "bert-base-seq128"},
                        {"clusters", {"paper-ib-v100"}},
                        {"gpus", {8, 16}},
                        {"micro_batch", 16},
                        {"total_steps", 10},
                        {"optimizers", {{{"label", "Adam"}, {"optimizer", {{"type", "Adam"}}}}}}}}};
  write_json("exp.json", s);
  const auto r = run({"simulate", path("exp.json"), "-o", path("out/res.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json res = nlohmann::json::parse(clbo::test::slurp(path("out/res.json")));
  EXPECT_EQ(res["runs"].size(), 2u);
  EXPECT_NE(r.out.find("samples_per_s"), std::string::npos);
  EXPECT_NE(r.out.find("paper-ib-v100"), std::string::npos);
  EXPECT_NE(r.err.find("2/2"), std::string::npos);  // progress
  EXPECT_EQ(r.err.find("[0.0"), std::string::npos) << "SimGrid log leaked: " << r.err;
}

TEST_F(SimulateCli, BadInputExitsNonzeroAndWritesNothing) {
  nlohmann::json s = {{"simulate",
                       {{"workload", "bert-base-seq128"},
                        {"clusters", {"paper-ib-v100"}},
                        {"gpus", {12}},
                        {"micro_batch", 16},
                        {"optimizers", {{{"label", "Adam"}, {"optimizer", {{"type", "Adam"}}}}}}}}};
  write_json("bad.json", s);
  const auto r = run({"simulate", path("bad.json"), "-o", path("res.json")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("simulate.gpus[0]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("12"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("res.json")));
}

// A 1-bit Adam config in the shape of DeepSpeed's tutorial: comments and trailing commas.
constexpr const char* kDsConfig = R"(// 1-bit Adam
{
  "train_batch_size": 256,
  "train_micro_batch_size_per_gpu": 16,
  "optimizer": {
    "type": "OneBitAdam",
    "params": {"lr": 4e-4, "freeze_step": 4, "cuda_aware": false, "comm_backend_name": "nccl",},
  },
  "gradient_clipping": 1.0,
  "fp16": {"enabled": true,},
})";

class SimulateDsConfig : public CliTest {
 protected:
  std::vector<std::string> ds_args(const std::string& ds) const {
    return {"simulate",
            "--ds-config",
            ds,
            "--workload",
            "bert-base-seq128",
            "--cluster",
            "paper-ib-v100",
            "--gpus",
            "8,16",
            "--steps",
            "10",
            "-q"};
  }
};

TEST_F(SimulateDsConfig, ProjectsTheConfigBesideItsUncompressedTwin) {
  const std::string ds = write_raw("ds.json", kDsConfig);
  auto args = ds_args(ds);
  args.insert(args.end(), {"-o", path("res.json"), "--format", "csv"});
  const auto r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json res = nlohmann::json::parse(clbo::test::slurp(path("res.json")));
  ASSERT_EQ(res["runs"].size(), 4u);  // 2 GPU counts × (Adam, OneBitAdam)
  for (size_t i = 0; i < 4; ++i) {
    const auto& run = res["runs"][i];
    EXPECT_EQ(run["optimizer"], i % 2 ? "OneBitAdam" : "Adam");
    EXPECT_EQ(run["batch_size"], 256);
    EXPECT_EQ(run["micro_batch"], 16);
    EXPECT_EQ(run["grad_acc"], run["gpus"] == 8 ? 2 : 1);  // DeepSpeed's rule per GPU count
    if (i % 2) {
      EXPECT_EQ(run["baseline"], "Adam");
      EXPECT_TRUE(run["simulated"]["speedup"].is_number());
    }
  }
  EXPECT_EQ(res["inputs"]["settings"]["grad_dtype"], "fp16");
  EXPECT_EQ(res["inputs"]["deepspeed"]["file"], ds);
  EXPECT_EQ(res["command_line"]["gpus"], nlohmann::json::array({8, 16}));
  // The unmodelled field is printed and recorded.
  EXPECT_NE(r.err.find("gradient_clipping = 1.0 is not modelled"), std::string::npos) << r.err;
  ASSERT_TRUE(res.contains("warnings"));
  EXPECT_NE(res["warnings"].dump().find("gradient_clipping"), std::string::npos);
  // The CSV is what was printed; every number column reads as a number.
  write_raw("out.csv", r.out);
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no python3 to read the CSV";
  const std::string script = write_raw("read.py", R"(import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == 4, rows
text = {"cluster", "gpu", "optimizer", "implementation"}
for row in rows:
    for key, cell in row.items():
        if key in text or cell == "":
            continue
        float(cell)  # raises on "12.3x", "45%" or "1.2 GB"
assert "warmup_ms" in rows[0] and "compression_ms" in rows[0], list(rows[0])
assert rows[0]["compression_ms"] == "" and rows[1]["compression_ms"] != ""
print("ok")
)");
  const auto py = std::system(("/usr/bin/python3 -B " + clbo::test::shell_quote(script) + " " +
                               clbo::test::shell_quote(path("out.csv")) + " > " +
                               clbo::test::shell_quote(path("py.txt")) + " 2>&1")
                                  .c_str());
  EXPECT_EQ(py, 0) << clbo::test::slurp(path("py.txt")) << r.out;
}

TEST_F(SimulateDsConfig, TheTableLabelsEveryStepKindColumnAndIsDeterministic) {
  const std::string ds = write_raw("ds.json", kDsConfig);
  auto a = ds_args(ds), b = ds_args(ds);
  a.insert(a.end(), {"-o", path("a.json")});
  b.insert(b.end(), {"-o", path("b.json"), "--format", "md"});
  const auto ra = run(a), rb = run(b);
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  for (const char* label : {"dense_ms", "warmup_ms", "compression_ms", "samples_per_s"})
    EXPECT_NE(ra.out.find(label), std::string::npos) << label << "\n" << ra.out;
  EXPECT_NE(rb.out.find("| cluster |"), std::string::npos) << rb.out;
  const auto ja = nlohmann::json::parse(clbo::test::slurp(path("a.json")));
  const auto jb = nlohmann::json::parse(clbo::test::slurp(path("b.json")));
  EXPECT_EQ(clbo::without_timing(ja).dump(), clbo::without_timing(jb).dump());
}

TEST_F(SimulateDsConfig, BadConfigsExitTwoBeforeAnythingRunsAndWriteNothing) {
  struct Case {
    const char* config;
    std::vector<const char*> says;
  };
  const std::vector<Case> cases = {
      // 4096 ≠ 16 × 2 × 8: DeepSpeed's consistency check at the first GPU count.
      {R"({"train_batch_size": 4096, "train_micro_batch_size_per_gpu": 16,
           "gradient_accumulation_steps": 2, "optimizer": {"type": "OneBitAdam"}})",
       {"train_batch_size", "4096", "16 × 2 × 8"}},
      {R"({"train_batch_size": 64, "zero_optimization": {"stage": 2},
           "optimizer": {"type": "OneBitAdam"}})",
       {"zero_optimization.stage", "not compatible with ZeRO"}},
      {R"({"train_batch_size": 64, "optimizer": {"type": "OneBitAdam",
           "params": {"amsgrad": true}}})",
       {"optimizer.params.amsgrad", "true"}},
      {R"({"train_batch_size": 64, "optimizer": {"type": "OneBitAdam"},})", {}},  // fine
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].config);
    const std::string ds = write_raw("ds.json", cases[i].config);
    auto args = ds_args(ds);
    args.insert(args.end(), {"-o", path("res.json"), "--check"});
    const auto r = run(args);
    if (cases[i].says.empty()) {
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find("ok (1 point"), std::string::npos) << r.out;
      continue;
    }
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(ds), std::string::npos) << r.err;
    for (const char* s : cases[i].says) EXPECT_NE(r.err.find(s), std::string::npos) << s;
    EXPECT_FALSE(std::filesystem::exists(path("res.json")));
  }
  // Without a run length: an error that says how to give one.
  const std::string ds = write_raw("ds.json", kDsConfig);
  const auto r = run({"simulate", "--ds-config", ds, "--workload", "bert-base-seq128", "--cluster",
                      "paper-ib-v100", "--gpus", "8", "-o", path("res.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--steps"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("res.json")));
}

TEST_F(SimulateDsConfig, ADeepSpeedConfigInTheExperimentsPlaceIsTheSame) {
  const std::string ds = write_raw("ds.json", kDsConfig);
  const auto r =
      run({"simulate", ds, "--workload", "bert-base-seq128", "--cluster", "paper-ib-v100", "--gpus",
           "8,16", "--steps", "10", "--check", "-o", path("res.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok (1 point"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("gradient_clipping"), std::string::npos) << r.err;
}

class SimulateSweep : public CliTest {
 protected:
  std::string experiment() const {
    return write_json(
        "exp.json", {{"name", "sweep"},
                     {"simulate",
                      {{"workload", "bert-base-seq128"},
                       {"clusters", {"paper-ib-v100"}},
                       {"gpus", {8}},
                       {"micro_batch", 16},
                       {"total_steps", 10},
                       {"optimizers", {{{"label", "Adam"}, {"optimizer", {{"type", "Adam"}}}}}}}}});
  }
};

TEST_F(SimulateSweep, TheSweepIsTheProductOfEverySetAndIsRecorded) {
  const std::string exp = experiment();
  const auto check = run({"simulate", exp, "--set", "micro_batch=8,16,32", "--set",
                          "cluster.nic.count=1,2", "--cluster", "paper-ib-v100", "--cluster",
                          "paper-eth-v100", "--check", "-o", path("res.json")});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("6 points"), std::string::npos) << check.out;
  EXPECT_FALSE(std::filesystem::exists(path("res.json")));

  const auto r = run({"simulate", exp, "--set", "micro_batch=8,16", "--gpus", "8,16", "-q", "-o",
                      path("res.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json res = nlohmann::json::parse(clbo::test::slurp(path("res.json")));
  ASSERT_EQ(res["runs"].size(), 4u);  // 2 micro-batches × 2 GPU counts
  EXPECT_EQ(res["runs"][0]["micro_batch"], 8);
  EXPECT_EQ(res["runs"][0]["set"]["micro_batch"], 8);
  EXPECT_EQ(res["runs"][3]["micro_batch"], 16);
  EXPECT_EQ(res["runs"][3]["gpus"], 16);
  EXPECT_EQ(res["sweep"]["points"].size(), 2u);
  EXPECT_EQ(res["command_line"]["set"][0]["field"], "micro_batch");
  EXPECT_EQ(res["command_line"]["set"][0]["values"], nlohmann::json::array({8, 16}));
  EXPECT_EQ(res["config"]["simulate"]["micro_batch"], 16);           // before the --set edits
  EXPECT_NE(r.out.find("micro_batch"), std::string::npos) << r.out;  // the set column
}

TEST_F(SimulateSweep, BadSetsExitTwoNamingFieldAndValueBeforeAnythingRuns) {
  const std::string exp = experiment();
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"--set", "micro_bach=8"}, {"simulate.micro_bach", "did you mean 'micro_batch'"}},
      {{"--set", "micro_batch=8,abc"}, {"simulate.micro_batch", "abc", "--set micro_batch=abc"}},
      {{"--set", "cluster.nic.cout=2"}, {"nic.cout", "did you mean 'count'"}},
      {{"--set", "micro_batch"}, {"--set", "FIELD=V1,V2"}},
      {{"--gpus", "8,x"}, {"simulate.gpus[1]", "x"}},
      {{"--format", "xml"}, {"--format"}},
  };
  for (const auto& [flags, says] : cases) {
    for (const bool check : {false, true}) {
      std::vector<std::string> args = {"simulate", exp, "-o", path("res.json")};
      args.insert(args.end(), flags.begin(), flags.end());
      if (check) args.push_back("--check");
      const auto r = run(args);
      SCOPED_TRACE(flags.back() + (check ? " --check" : ""));
      EXPECT_EQ(r.exit_code, 2) << r.err;
      for (const auto& s : says) EXPECT_NE(r.err.find(s), std::string::npos) << s << "\n" << r.err;
      EXPECT_FALSE(std::filesystem::exists(path("res.json")));
    }
  }
}

TEST_F(SimulateSweep, HelpDescribesTheFlags) {
  const auto r = run({"simulate", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--ds-config", "--workload", "--cluster", "--gpus", "--steps", "--set",
                        "--format", "train_batch_size", "cluster.nic.rate_Gbps", "ZeRO"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}
