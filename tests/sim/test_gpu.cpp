// Any GPU: presets with their datasheet sources, figures given by the user, measured
// profiles, compute from FLOPs per sample, and the results recording where each came from.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "clbo/core/error.hpp"
#include "clbo/sim/gpu.hpp"
#include "clbo/sim/results_json.hpp"
#include "clbo/sim/spec.hpp"
#include "clbo/sim/workload.hpp"
#include "clbo_test/rejection.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;

namespace {

using clbo::test::contains;
using clbo::test::rejection_message;

// A 2-node cluster with one GPU per node, the GPU as given.
nlohmann::json cluster_with(nlohmann::json gpu) {
  nlohmann::json c = sim::test::small_cluster_json(2, 1);
  c["name"] = "two";
  c["gpu"] = std::move(gpu);
  return c;
}

// A tensors-list workload (as scripts/export_layout.py writes it) with `compute`.
nlohmann::json tensors_workload(nlohmann::json compute) {
  return {{"name", "mine"},
          {"fwd_flops_per_sample", 6e9},
          {"layout",
           {{"tensors",
             {{{"name", "a.weight"}, {"shape", {1000, 1000}}},
              {{"name", "a.bias"}, {"shape", {1000}}}}}}},
          {"compute", std::move(compute)}};
}

const nlohmann::json kProfile = {{"fwd_per_sample_ms", 1.0},
                                 {"bwd_per_sample_ms", 2.0},
                                 {"optimizer_ms", 3.0},
                                 {"source", "measured on my box"}};

nlohmann::json experiment_on(nlohmann::json cluster, nlohmann::json workload = "bert-base-seq128",
                             nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json e = sim::test::small_experiment(
      nlohmann::json::array({sim::test::opt("Adam", "Adam", {{"lr", 1e-4}})}), 1, 2, 1);
  e["simulate"]["clusters"] = nlohmann::json::array({std::move(cluster)});
  e["simulate"]["workload"] = std::move(workload);
  e["simulate"]["micro_batch"] = 4;
  e["simulate"].erase("batch_size");
  for (auto it = extra.begin(); it != extra.end(); ++it) e["simulate"][it.key()] = it.value();
  return e;
}

}  // namespace

TEST(Gpu, NewPresetsCarryDenseDatasheetFiguresAndTheirSources) {
  const GpuInfo& b = gpu_info("B200", "t", "gpu");
  EXPECT_DOUBLE_EQ(b.fp16_tflops, 2250);  // 4.5 PFLOPS with sparsity, halved
  EXPECT_DOUBLE_EQ(b.hbm_TBps, 7.7);
  EXPECT_EQ(b.hbm_source, "preset B200: docs/reference/published.md §5.6 row 7");
  EXPECT_TRUE(contains(b.fp16_source, "dense"));
  const GpuInfo& m = gpu_info("MI300X", "t", "gpu");
  EXPECT_DOUBLE_EQ(m.fp16_tflops, 1307.4);
  EXPECT_DOUBLE_EQ(m.hbm_TBps, 5.3);
  EXPECT_TRUE(contains(m.fp16_source, "§5.6 row 8"));
  EXPECT_FALSE(b.unrecorded_preset);
  EXPECT_TRUE(gpu_info("H100", "t", "gpu").unrecorded_preset);
  for (const std::string& n : gpu_names()) {
    const GpuInfo& g = gpu_info(n, "t", "gpu");
    EXPECT_GT(g.fp16_tflops, 0) << n;
    EXPECT_GT(g.hbm_TBps, 0) << n;
    EXPECT_TRUE(contains(g.hbm_source, "docs/reference/published.md §5.6 row ")) << n;
  }
  EXPECT_EQ(canonical_gpu_name("A100"), "A100-SXM4-80GB");
  EXPECT_EQ(canonical_gpu_name("L40S"), "L40S");
}

TEST(Gpu, AnUnknownNameSaysHowToGiveTheFigures) {
  const std::string m = rejection_message([] { gpu_info("B20O", "c.json", "gpu"); });
  EXPECT_TRUE(contains(m, "B200")) << m;  // the nearest preset
  EXPECT_TRUE(contains(m, "\"fp16_tflops\"")) << m;
  EXPECT_TRUE(contains(m, "\"hbm_TBps\"")) << m;
  EXPECT_TRUE(contains(m, "\"name\": \"L40S\"")) << m;  // an example
  // In an experiment: the cluster names the GPU, the check happens before anything runs.
  const std::string e = rejection_message(
      [] { parse_experiment_spec(experiment_on(cluster_with("RTX-9090")), "exp.json"); });
  EXPECT_TRUE(contains(e, "'gpu'") && contains(e, "RTX-9090") && contains(e, "unknown GPU type"))
      << e;
  EXPECT_TRUE(contains(e, "\"hbm_TBps\"")) << e;
}

TEST(Gpu, FiguresGivenByTheUserAreRecordedAsTheirs) {
  const GpuInfo g = parse_gpu(
      {{"name", "L40S"}, {"fp16_tflops", 362}, {"hbm_TBps", 0.864}, {"source", "L40S sheet"}},
      "c.json", "gpu");
  EXPECT_EQ(g.name, "L40S");
  EXPECT_EQ(g.fp16_source, "user: L40S sheet");
  EXPECT_EQ(g.hbm_source, "user: L40S sheet");
  // A preset with one figure replaced keeps the other, each with its own source.
  const GpuInfo h = parse_gpu({{"name", "H100"}, {"hbm_TBps", 3.0}}, "c.json", "gpu");
  EXPECT_EQ(h.name, "H100-SXM");
  EXPECT_DOUBLE_EQ(h.fp16_tflops, 989);
  EXPECT_TRUE(contains(h.fp16_source, "preset H100-SXM"));
  EXPECT_EQ(h.hbm_source, "user: c.json");
  EXPECT_FALSE(h.unrecorded_preset);
  EXPECT_EQ(h.to_json()["hbm_TBps_source"], "user: c.json");
}

TEST(Gpu, BadFiguresNameTheFieldAndValue) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"name", "X"}, {"hbm_TBps", -1}}, "gpu.hbm_TBps"},
      {{{"name", "X"}, {"hbm_TBps", 0}}, "gpu.hbm_TBps"},
      {{{"name", "X"}, {"hbm_TBps", 3350}}, "gpu.hbm_TBps"},  // GB/s written as TB/s
      {{{"name", "X"}, {"hbm_TBps", 1}, {"fp16_tflops", "lots"}}, "gpu.fp16_tflops"},
      {{{"name", "X"}, {"hbm_TBps", 1}, {"fp16_tflop", 5}}, "gpu.fp16_tflop"},
      {{{"hbm_TBps", 1}}, "gpu.name"},
      {nlohmann::json(5), "gpu"},
  };
  for (const auto& [j, field] : cases) {
    try {
      parse_gpu(j, "c.json", "gpu");
      ADD_FAILURE() << j.dump();
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "c.json") << j.dump();
      EXPECT_EQ(e.field(), field) << j.dump() << ": " << e.what();
    }
  }
  // A user GPU without HBM bandwidth cannot time the compression kernels.
  const std::string m = rejection_message([] {
    parse_experiment_spec(experiment_on(cluster_with({{"name", "X"}, {"fp16_tflops", 100}})),
                          "exp.json");
  });
  EXPECT_TRUE(contains(m, "HBM bandwidth")) << m;
}

TEST(Gpu, ScalingToANewGpuFollowsItsDatasheetFigures) {
  const Workload w = resolve_workload("bert-large-seq128", "t", "w");
  const ComputeProfile v = w.compute_for("V100-SXM2", "t", "gpu");
  const ComputeProfile b = w.compute_for("B200", "t", "gpu");
  EXPECT_NEAR(b.fwd_per_sample_s / v.fwd_per_sample_s, 125.0 / 2250.0, 1e-12);
  EXPECT_NEAR(b.bwd_floor_s / v.bwd_floor_s, 125.0 / 2250.0, 1e-12);
  EXPECT_NEAR(b.optimizer_s / v.optimizer_s, 0.90 / 7.7, 1e-12);
  EXPECT_TRUE(contains(b.origin, "125 → 2250 TFLOPS")) << b.origin;
  // A user's GPU scales the same way from its own figures.
  const ComputeProfile u = w.compute_for(
      parse_gpu({{"name", "L40S"}, {"fp16_tflops", 362}, {"hbm_TBps", 0.864}}, "c.json", "gpu"),
      "c.json", "gpu");
  EXPECT_NEAR(u.fwd_per_sample_s / v.fwd_per_sample_s, 125.0 / 362.0, 1e-12);
  EXPECT_EQ(u.gpu, "L40S");
  // Without a peak and without a profile of its own there is nothing to scale by.
  const GpuInfo bare = parse_gpu({{"name", "Mystery"}, {"hbm_TBps", 1.0}}, "c.json", "gpu");
  const std::string m = rejection_message([&] { w.compute_for(bare, "c.json", "gpu"); });
  EXPECT_TRUE(contains(m, "fp16_tflops") && contains(m, "scaled from V100-SXM2")) << m;
}

TEST(Gpu, TheRooflineSplitScalesTheMemoryBoundShareByBandwidth) {
  nlohmann::json j = {{"name", "split"},
                      {"layout", {{"bert", {{"layers", 2}, {"hidden", 64}}}}},
                      {"compute",
                       {{"reference_gpu", "V100-SXM2"},
                        {"memory_bound_fraction", 0.25},
                        {"profiles", {{"V100-SXM2", kProfile}}}}}};
  const Workload w = parse_workload(j, "w.json");
  const ComputeProfile b = w.compute_for("B200", "t", "gpu");
  const double c = 125.0 / 2250.0, m = 0.90 / 7.7;
  EXPECT_NEAR(b.fwd_per_sample_s, 1e-3 * (0.75 * c + 0.25 * m), 1e-15);
  EXPECT_NEAR(b.optimizer_s, 3e-3 * m, 1e-15);
  EXPECT_TRUE(contains(b.origin, "0.25 × ")) << b.origin;
  EXPECT_DOUBLE_EQ(w.to_json()["memory_bound_fraction"], 0.25);
  j["compute"]["memory_bound_fraction"] = 1.5;
  EXPECT_THROW(parse_workload(j, "w.json"), InputError);
  // Left out, the workload summary is the one committed results hold.
  EXPECT_FALSE(
      resolve_workload("bert-large-seq128", "t", "w").to_json().contains("memory_bound_fraction"));
}

TEST(Gpu, AMeasuredProfileServesAGpuWithoutAPeak) {
  const Workload w = parse_workload(
      tensors_workload({{"reference_gpu", "V100-SXM2"},
                        {"profiles", {{"V100-SXM2", kProfile}, {"Mystery", kProfile}}}}),
      "w.json");
  const GpuInfo bare = parse_gpu({{"name", "Mystery"}, {"hbm_TBps", 1.0}}, "c.json", "gpu");
  const ComputeProfile p = w.compute_for(bare, "c.json", "gpu");
  EXPECT_DOUBLE_EQ(p.fwd_per_sample_s, 1e-3);
  EXPECT_EQ(p.origin, "measured: measured on my box");
  // The experiment's own profile for a user's GPU; its results say where each figure is from.
  nlohmann::json exp = experiment_on(cluster_with({{"name", "Mystery"}, {"hbm_TBps", 1.0}}),
                                     "bert-base-seq128", {{"compute", {{"Mystery", kProfile}}}});
  const ExperimentSpec s = parse_experiment_spec(exp, "exp.json");
  EXPECT_EQ(s.profile_for(s.clusters[0]).origin, "measured: measured on my box");
  const nlohmann::json doc =
      results_document(exp, "exp.json", s, nlohmann::json::array(), nlohmann::json::array(), 0);
  const nlohmann::json& g = doc["inputs"]["clusters"]["two"]["gpu_figures"];
  EXPECT_EQ(g["name"], "Mystery");
  EXPECT_EQ(g["hbm_TBps_source"], "user: exp.json");
  EXPECT_EQ(g["fp16_tflops"], nullptr);
  EXPECT_EQ(g["fp16_tflops_source"], "not given");
  EXPECT_EQ(g["compute_profile"], "measured: measured on my box");
  // A profile for a GPU that no cluster has and no preset is: a typo.
  exp["simulate"]["compute"] = {{"Mystry", kProfile}};
  const std::string m = rejection_message([&] { parse_experiment_spec(exp, "exp.json"); });
  EXPECT_TRUE(contains(m, "simulate.compute.Mystry") && contains(m, "Mystery")) << m;
}

TEST(Gpu, ResultsOfTheEarlierPresetsKeepTheirCommittedForm) {
  nlohmann::json exp = experiment_on(cluster_with("H100"));
  ExperimentSpec s = parse_experiment_spec(exp, "exp.json");
  nlohmann::json doc =
      results_document(exp, "exp.json", s, nlohmann::json::array(), nlohmann::json::array(), 0);
  EXPECT_FALSE(doc["inputs"]["clusters"]["two"].contains("gpu_figures"));
  EXPECT_EQ(doc["inputs"]["clusters"]["two"]["gpu"], "H100");
  exp = experiment_on(cluster_with("B200"));
  s = parse_experiment_spec(exp, "exp.json");
  doc = results_document(exp, "exp.json", s, nlohmann::json::array(), nlohmann::json::array(), 0);
  const nlohmann::json& g = doc["inputs"]["clusters"]["two"]["gpu_figures"];
  EXPECT_EQ(g["hbm_TBps_source"], "preset B200: docs/reference/published.md §5.6 row 7");
  EXPECT_TRUE(contains(g["compute_profile"].get<std::string>(), "scaled from V100-SXM2"));
}

TEST(Gpu, ATensorsListWorkloadComputesFromFlopsPerSample) {
  const Workload w = parse_workload(
      tensors_workload({{"from_flops", {{"efficiency", 0.4}, {"source", "MFU measured"}}}}),
      "w.json");
  EXPECT_EQ(w.layout.total(), 1001000u);
  const ComputeProfile p = w.compute_for("MI300X", "t", "gpu");
  EXPECT_DOUBLE_EQ(p.fwd_per_sample_s, 6e9 / (1307.4e12 * 0.4));
  EXPECT_DOUBLE_EQ(p.bwd_per_sample_s, 2 * p.fwd_per_sample_s);
  EXPECT_DOUBLE_EQ(p.fwd_floor_s, 0);
  EXPECT_DOUBLE_EQ(p.optimizer_s, 28.0 * 1001000 / (5.3e12 * 0.85));
  EXPECT_TRUE(contains(p.origin, "from FLOPs (MFU measured)")) << p.origin;
  EXPECT_EQ(w.to_json()["from_flops"]["efficiency"], 0.4);
  // A measured profile still wins for its GPU.
  const Workload m = parse_workload(
      tensors_workload({{"from_flops", {{"efficiency", 0.4}}}, {"profiles", {{"B200", kProfile}}}}),
      "w.json");
  EXPECT_DOUBLE_EQ(m.compute_for("B200", "t", "gpu").fwd_per_sample_s, 1e-3);
  EXPECT_TRUE(contains(m.compute_for("H200", "t", "gpu").origin, "from FLOPs"));
}

TEST(Gpu, BadFlopsSettingsNameTheFieldBeforeAnythingRuns) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {{{"from_flops", {{"efficiency", 0}}}}, "compute.from_flops.efficiency"},
      {{{"from_flops", {{"efficiency", 1.5}}}}, "compute.from_flops.efficiency"},
      {{{"from_flops", nlohmann::json::object()}}, "compute.from_flops.efficiency"},
      {{{"from_flops", {{"efficiency", 0.5}, {"bwd_over_fwd", -1}}}},
       "compute.from_flops.bwd_over_fwd"},
      {{{"from_flops", {{"efficiency", 0.5}, {"eficiency", 0.5}}}}, "compute.from_flops.eficiency"},
      {{{"from_flops", {{"efficiency", 0.5}}}, {"reference_gpu", "V100-SXM2"}},
       "compute.reference_gpu"},
  };
  for (const auto& [compute, field] : cases) {
    try {
      parse_workload(tensors_workload(compute), "w.json");
      ADD_FAILURE() << compute.dump();
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), field) << compute.dump() << ": " << e.what();
    }
  }
  nlohmann::json no_flops = tensors_workload({{"from_flops", {{"efficiency", 0.5}}}});
  no_flops.erase("fwd_flops_per_sample");
  const std::string m = rejection_message([&] { parse_workload(no_flops, "w.json"); });
  EXPECT_TRUE(contains(m, "'fwd_flops_per_sample'") && contains(m, "from_flops")) << m;
  // A GPU without a peak cannot turn FLOPs into time.
  const Workload w =
      parse_workload(tensors_workload({{"from_flops", {{"efficiency", 0.5}}}}), "w.json");
  const GpuInfo bare = parse_gpu({{"name", "Mystery"}, {"hbm_TBps", 1.0}}, "c.json", "gpu");
  const std::string g = rejection_message([&] { w.compute_for(bare, "c.json", "gpu"); });
  EXPECT_TRUE(contains(g, "fp16_tflops") && contains(g, "FLOPs per sample")) << g;
}

TEST(Gpu, ALayoutCanBeATensorsFileBesideTheWorkload) {
  const auto dir = std::filesystem::temp_directory_path() / "clbo-test-gpu-layout";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "layout.json")
      << R"({"tensors": [{"name": "w", "shape": [4, 8], "size": 32}, {"name": "s", "shape": [],
             "size": 1}]})";
  nlohmann::json j = tensors_workload({{"from_flops", {{"efficiency", 0.5}}}});
  j["layout"] = "layout.json";
  const Workload w = parse_workload(j, (dir / "w.json").string());
  EXPECT_EQ(w.layout.total(), 33u);
  EXPECT_EQ(w.layout[0].shape, (std::vector<int64_t>{4, 8}));
  j["layout"] = "missing.json";
  const std::string m = rejection_message([&] { parse_workload(j, (dir / "w.json").string()); });
  EXPECT_TRUE(contains(m, "missing.json")) << m;
  std::filesystem::remove_all(dir);
}
