// The command line's edits of an experiment (sweep.hpp): --set values and paths, the product
// of the axes, cluster and ds_config fields inlined before they are edited, and every point
// checked by the one parse path (validate_experiment), which names unknown fields and values
// of the wrong type. Nothing is simulated here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "clbo/core/error.hpp"
#include "clbo/sim/experiment.hpp"
#include "clbo/sim/spec.hpp"
#include "clbo/sim/sweep.hpp"
#include "clbo_test/rejection.hpp"

namespace clbo::sim {
namespace {

using clbo::test::contains;
using clbo::test::rejection_message;

nlohmann::json experiment() {
  return {{"name", "t"},
          {"simulate",
           {{"workload", "bert-base-seq128"},
            {"clusters", {"paper-ib-v100"}},
            {"gpus", {8, 16}},
            {"micro_batch", 16},
            {"total_steps", 10},
            {"optimizers", {{{"label", "Adam"}, {"optimizer", {{"type", "Adam"}}}}}}}}};
}

TEST(Sweep, ValuesAreJsonWhereTheyParseAndStringsOtherwise) {
  const auto v = parse_flag_values("8,1e-3,true,fp16,\"a,b\",[1,2],my/cluster.json", "--set");
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v[0], 8);
  EXPECT_EQ(v[1], 1e-3);
  EXPECT_EQ(v[2], true);
  EXPECT_EQ(v[3], "fp16");
  EXPECT_EQ(v[4], "a,b");
  EXPECT_EQ(v[5], nlohmann::json::array({1, 2}));
  EXPECT_EQ(v[6], "my/cluster.json");
  EXPECT_THROW(parse_flag_values("8,,16", "--set"), InputError);
  EXPECT_THROW(parse_set_flag("micro_batch"), InputError);
  EXPECT_THROW(parse_set_flag("micro_batch="), InputError);
  EXPECT_THROW(parse_set_flag("optimizers[x].label=a"), InputError);
  EXPECT_EQ(parse_set_flag("simulate.micro_batch=8").path, "simulate.micro_batch");
  EXPECT_EQ(parse_set_flag("clusters.nic.rate_Gbps=8").path, "cluster.nic.rate_Gbps");
}

TEST(Sweep, PointsAreTheProductOfTheAxesInOrder) {
  const std::vector<SetAxis> axes = {parse_set_flag("micro_batch=8,16,32"),
                                     parse_set_flag("bucket_mb=10,50")};
  const auto points = sweep_points(experiment(), axes, "exp.json");
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].doc["simulate"]["micro_batch"], 8);
  EXPECT_EQ(points[0].doc["simulate"]["bucket_mb"], 10);
  EXPECT_EQ(points[1].doc["simulate"]["bucket_mb"], 50);  // the last axis fastest
  EXPECT_EQ(points[5].doc["simulate"]["micro_batch"], 32);
  EXPECT_EQ(points[5].set, (nlohmann::json{{"micro_batch", 32}, {"bucket_mb", 50}}));
  EXPECT_EQ(points[5].label, "micro_batch=32 bucket_mb=50");
  for (const auto& p : points) EXPECT_NO_THROW(validate_experiment(p.doc, "exp.json"));
  EXPECT_EQ(sweep_points(experiment(), {}, "exp.json").size(), 1u);
  // One field twice is an error, not a silent product.
  EXPECT_THROW(
      sweep_points(experiment(),
                   {parse_set_flag("micro_batch=8"), parse_set_flag("micro_batch=16")}, "exp.json"),
      InputError);
}

TEST(Sweep, ClusterFieldsEditEveryClusterInlined) {
  const auto points =
      sweep_points(experiment(), {parse_set_flag("cluster.nic.count=1,2")}, "exp.json");
  ASSERT_EQ(points.size(), 2u);
  const nlohmann::json& c = points[1].doc["simulate"]["clusters"][0];
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["name"], "paper-ib-v100");
  EXPECT_EQ(c["nic"]["count"], 2);
  EXPECT_NO_THROW(validate_experiment(points[1].doc, "exp.json"));
}

// A workload named by a preset or a file is edited in a copy of the object it stands for; the
// file's relative layout path is kept pointing at the same file.
TEST(Sweep, WorkloadFieldsEditACopyOfThePresetOrFile) {
  auto points = sweep_points(
      experiment(), {parse_set_flag("workload.compute.memory_bound_fraction=0.1,0.2")}, "exp.json");
  ASSERT_EQ(points.size(), 2u);
  const nlohmann::json& w = points[1].doc["simulate"]["workload"];
  ASSERT_TRUE(w.is_object());
  EXPECT_EQ(w["name"], "bert-base-seq128");
  EXPECT_EQ(w["compute"]["memory_bound_fraction"], 0.2);
  EXPECT_EQ(w["compute"]["derive_from"], "bert-large-seq128");
  EXPECT_EQ(w["seq_len"], 128);
  EXPECT_NO_THROW(validate_experiment(points[1].doc, "exp.json"));
  std::string msg = rejection_message([&] {
    validate_experiment(
        sweep_points(experiment(), {parse_set_flag("workload.seq_lem=256")}, "exp.json")[0].doc,
        "exp.json");
  });
  EXPECT_TRUE(contains(msg, "simulate.workload.seq_lem")) << msg;
  EXPECT_TRUE(contains(msg, "did you mean 'seq_len'")) << msg;

  const auto dir = std::filesystem::temp_directory_path() / "clbo_sweep_workload";
  std::filesystem::create_directories(dir / "model");
  std::ofstream(dir / "model" / "tensors.json")
      << R"({"tensors": [{"name": "w", "shape": [64, 64]}]})";
  nlohmann::json wl = {{"name", "mine"},
                       {"layout", "tensors.json"},
                       {"fwd_flops_per_sample", 1e9},
                       {"compute", {{"from_flops", {{"efficiency", 0.4}}}}}};
  std::ofstream((dir / "model" / "mine.json").string()) << wl.dump();
  nlohmann::json doc = experiment();
  doc["simulate"]["workload"] = (dir / "model" / "mine.json").string();
  EXPECT_NO_THROW(validate_experiment(doc, "exp.json")) << "the file itself is valid";
  points = sweep_points(doc, {parse_set_flag("workload.seq_len=64,128")}, "exp.json");
  const nlohmann::json& mine = points[0].doc["simulate"]["workload"];
  ASSERT_TRUE(mine.is_object());
  EXPECT_EQ(mine["layout"], (dir / "model" / "tensors.json").string());
  EXPECT_NO_THROW(validate_experiment(points[0].doc, "exp.json"));
  std::filesystem::remove_all(dir);
}

TEST(Sweep, UnknownFieldsSuggestTheNearestAndWrongTypesNameTheValue) {
  auto points = sweep_points(experiment(), {parse_set_flag("micro_bach=8")}, "exp.json");
  std::string msg = rejection_message([&] { validate_experiment(points[0].doc, "exp.json"); });
  EXPECT_TRUE(contains(msg, "simulate.micro_bach")) << msg;
  EXPECT_TRUE(contains(msg, "did you mean 'micro_batch'")) << msg;
  points = sweep_points(experiment(), {parse_set_flag("micro_batch=abc")}, "exp.json");
  msg = rejection_message([&] { validate_experiment(points[0].doc, "exp.json"); });
  EXPECT_TRUE(contains(msg, "simulate.micro_batch")) << msg;
  EXPECT_TRUE(contains(msg, "abc")) << msg;
  points = sweep_points(experiment(), {parse_set_flag("cluster.nic.cout=2")}, "exp.json");
  msg = rejection_message([&] { validate_experiment(points[0].doc, "exp.json"); });
  EXPECT_TRUE(contains(msg, "simulate.clusters[0].nic.cout")) << msg;
  EXPECT_TRUE(contains(msg, "did you mean 'count'")) << msg;
  // A path through a value that is not an object is refused when the point is built.
  msg = rejection_message(
      [&] { sweep_points(experiment(), {parse_set_flag("total_steps.x=1")}, "exp.json"); });
  EXPECT_TRUE(contains(msg, "--set")) << msg;
  EXPECT_TRUE(contains(msg, "total_steps.x=1")) << msg;
}

TEST(Sweep, FlagsReplaceWhatTheySetAndTheRecordSaysSo) {
  CommandLineFlags f;
  f.ds_config = "ds.json";
  f.clusters = {"paper-eth-v100", "paper-ib-v100"};
  f.gpus = "16,64";
  f.steps = "100";
  f.sets = {"bucket_mb=10,50"};
  const nlohmann::json doc = apply_flags(experiment(), f, "exp.json");
  const nlohmann::json& s = doc["simulate"];
  EXPECT_EQ(s["ds_config"], "ds.json");
  EXPECT_FALSE(s.contains("optimizers"));
  EXPECT_FALSE(s.contains("micro_batch"));
  EXPECT_EQ(s["clusters"].size(), 2u);
  EXPECT_EQ(s["gpus"], nlohmann::json::array({16, 64}));
  EXPECT_EQ(s["total_steps"], 100);
  const auto rec = flags_record(f, {parse_set_flag(f.sets[0])});
  EXPECT_EQ(rec["gpus"], nlohmann::json::array({16, 64}));
  EXPECT_EQ(rec["set"][0]["values"], nlohmann::json::array({10, 50}));
  // Rows fix their own clusters and GPU counts.
  nlohmann::json rows = experiment();
  rows["simulate"].erase("clusters");
  rows["simulate"].erase("gpus");
  rows["simulate"]["rows"] = {{{"cluster", "paper-ib-v100"}, {"gpus", 8}}};
  CommandLineFlags g;
  g.gpus = "16";
  EXPECT_THROW(apply_flags(rows, g, "exp.json"), InputError);
}

TEST(Sweep, DsConfigFieldsAreEditedInACopyOfTheConfig) {
  const auto dir = std::filesystem::temp_directory_path() / "clbo_sweep_ds";
  std::filesystem::create_directories(dir);
  const std::string ds = (dir / "ds.json").string();
  std::ofstream(ds) << R"({"train_batch_size": 256, // global
    "optimizer": {"type": "OneBitAdam", "params": {"freeze_step": 5,},},})";
  CommandLineFlags f;
  f.ds_config = ds;
  const nlohmann::json doc = apply_flags(experiment(), f, "exp.json");
  const auto points =
      sweep_points(doc, {parse_set_flag("ds_config.optimizer.params.freeze_step=2,4")}, "exp.json");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].doc["simulate"]["ds_config"]["optimizer"]["params"]["freeze_step"], 4);
  EXPECT_EQ(points[1].doc["simulate"]["ds_config"]["train_batch_size"], 256);
  EXPECT_NO_THROW(validate_experiment(points[1].doc, "exp.json"));
  // A field DeepSpeed reads may be set where the config has none (fp16 here)...
  EXPECT_EQ(
      sweep_points(doc, {parse_set_flag("ds_config.fp16.enabled=true,false")}, "exp.json").size(),
      2u);
  // ...but a misspelt one would give identical points: an error naming it, before any run.
  // (Not a structured binding: clang 14 cannot capture one in the lambda.)
  for (const auto& typo : std::vector<std::pair<std::string, std::string>>{
           {"ds_config.fp16.enabeld=true,false", "did you mean 'enabled'"},
           {"ds_config.train_batch_sise=128,256", "did you mean 'train_batch_size'"},
           {"ds_config.zero_optimization.stag=0,1", "did you mean 'stage'"}}) {
    const std::string msg =
        rejection_message([&] { sweep_points(doc, {parse_set_flag(typo.first)}, "exp.json"); });
    EXPECT_TRUE(contains(msg, "--set")) << msg;
    EXPECT_TRUE(contains(msg, typo.second)) << msg;
  }
  std::filesystem::remove_all(dir);
}

// simulate.ds_config stands for the optimizers (with the twin as baseline), the batch at
// each GPU count, the backend, the gradient dtype and the scheduler's run length.
TEST(Sweep, ADsConfigSetsOptimizersBatchBackendDtypeAndLength) {
  nlohmann::json doc = experiment();
  for (const char* k : {"optimizers", "micro_batch", "total_steps"}) doc["simulate"].erase(k);
  doc["simulate"]["ds_config"] = nlohmann::json::parse(R"({"train_batch_size": 256,
      "optimizer": {"type": "ZeroOneAdam", "params": {"comm_backend_name": "mpi",
                                                      "cuda_aware": true}},
      "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 77}}})");
  const ExperimentSpec s = parse_experiment_spec(doc, "exp.json");
  ASSERT_EQ(s.optimizers.size(), 2u);
  EXPECT_EQ(s.optimizers[0].label, "Adam");
  EXPECT_EQ(s.optimizers[1].label, "ZeroOneAdam");
  EXPECT_EQ(s.optimizers[1].baseline, "Adam");
  EXPECT_EQ(s.expand.backend, Backend::kMpi);
  EXPECT_TRUE(s.expand.mpi_cuda_aware);
  EXPECT_EQ(s.grad_dtype, DType::kF32);  // no fp16 block: DeepSpeed runs fp32
  // ...and fp32 compute is not modelled: a warning, never silence.
  std::string warned;
  for (const auto& w : s.warnings) warned += w + "\n";
  EXPECT_TRUE(contains(warned, "fp32 compute is not modelled")) << warned;
  EXPECT_EQ(s.total_steps, 77);
  ASSERT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.points[0].micro_batch, 32);  // 256 / 8 GPUs, one accumulation step
  EXPECT_EQ(s.points[1].micro_batch, 16);
  // Stating what the config sets is an error naming the field.
  doc["simulate"]["backend"] = "nccl";
  EXPECT_TRUE(contains(rejection_message([&] { parse_experiment_spec(doc, "exp.json"); }),
                       "simulate.backend"));
}

TEST(Sweep, MergedResultsKeepEveryPointsRunsAndSettings) {
  const std::vector<SetAxis> axes = {parse_set_flag("micro_batch=8,16")};
  const auto points = sweep_points(experiment(), axes, "exp.json");
  std::vector<nlohmann::json> results;
  for (size_t k = 0; k < 2; ++k)
    results.push_back({{"config", points[k].doc},
                       {"inputs", {{"k", k}}},
                       {"runs", {{{"gpus", 8}}, {{"gpus", 16}}}},
                       {"warnings", {"w"}},
                       {"timing", {{"wall_s", 1.5}, {"groups", {{{"cluster", "c"}}}}}}});
  const auto m = merge_sweep_results(experiment(), points, results);
  ASSERT_EQ(m["runs"].size(), 4u);
  EXPECT_EQ(m["runs"][3]["sweep_point"], 1);
  EXPECT_EQ(m["runs"][3]["set"]["micro_batch"], 16);
  EXPECT_EQ(m["sweep"]["points"][1]["config"]["simulate"]["micro_batch"], 16);
  EXPECT_EQ(m["sweep"]["points"][1]["inputs"]["k"], 1);
  EXPECT_EQ(m["warnings"], nlohmann::json::array({"w"}));
  EXPECT_EQ(m["timing"]["wall_s"], 3.0);
  EXPECT_EQ(m["config"], experiment());
}

}  // namespace
}  // namespace clbo::sim
