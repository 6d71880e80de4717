// The deepspeed implementation profile (implementation.hpp): its stage tables equal the
// documented ones (docs/implementations.md) row by row; the times follow from the byte counts
// and the host pipeline; DeepSpeed's per-group calls; the clbo profile is clbo's kernels;
// specs choose profiles per block and per optimizer entry, and bad names are input errors.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "clbo/core/error.hpp"
#include "clbo/plan/plan.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/sim/experiment.hpp"
#include "clbo/sim/implementation.hpp"
#include "clbo/sim/workload.hpp"
#include "sim_test_util.hpp"

using namespace clbo;
using namespace clbo::sim;
using nlohmann::json;

namespace {

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line.substr(1));
  std::string cell;
  while (std::getline(ss, cell, '|')) {
    const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  return out;
}

// The rows of every table in docs/implementations.md whose header starts with `first`.
std::vector<std::vector<std::string>> doc_rows(const std::string& first) {
  std::ifstream in(std::string(CLBO_SOURCE_DIR) + "/docs/implementations.md");
  EXPECT_TRUE(in.good()) << "docs/implementations.md";
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    const auto c = cells(line);
    if (!in_table) {
      in_table = !c.empty() && c[0] == first;
      continue;
    }
    if (c[0].rfind("---", 0) == 0 || c[0].rfind(":--", 0) == 0) continue;
    rows.push_back(c);
  }
  return rows;
}

std::string num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

KernelModel v100() {
  KernelModel k;
  k.hbm_Bps = 0.9e12;
  return k;
}

OptimizerConfig config(const std::string& type, json params) {
  return parse_optimizer_config({{"type", type}, {"params", params}}, "test");
}

}  // namespace

TEST(Implementation, OnebitStagesAreTheDocumentedTables) {
  // The two backends' tables follow each other in the document: NCCL's, then MPI's.
  const auto rows = doc_rows("part");
  size_t i = 0;
  for (Backend b : {Backend::kNccl, Backend::kMpi})
    for (OnebitPart part : {OnebitPart::kWorker, OnebitPart::kServer, OnebitPart::kUnpack})
      for (const DataflowStage& s : deepspeed_onebit_stages(b, part)) {
        ASSERT_LT(i, rows.size()) << "docs/implementations.md lacks " << s.name;
        const auto& r = rows[i++];
        ASSERT_EQ(r.size(), 8u);
        EXPECT_EQ(r[0], to_string(part)) << s.name;
        EXPECT_EQ(r[1], s.name);
        EXPECT_EQ(r[2], std::to_string(s.kernels)) << s.name;
        EXPECT_EQ(r[3], std::to_string(s.kernels_per_rank)) << s.name;
        EXPECT_EQ(r[4], num(s.bytes_padded)) << s.name;
        EXPECT_EQ(r[5], num(s.bytes_chunk)) << s.name;
        EXPECT_EQ(r[6], std::to_string(s.syncs)) << s.name;
        EXPECT_EQ(r[7], s.source) << s.name;
      }
  EXPECT_EQ(i, rows.size()) << "docs/implementations.md has rows the code does not";
}

TEST(Implementation, OptimizerStagesAreTheDocumentedTable) {
  const auto rows = doc_rows("step");
  size_t i = 0;
  for (DeepspeedStep step : deepspeed_steps())
    for (const StepStage& s : deepspeed_step_stages(step)) {
      ASSERT_LT(i, rows.size()) << "docs/implementations.md lacks " << to_string(step);
      const auto& r = rows[i++];
      ASSERT_EQ(r.size(), 7u);
      EXPECT_EQ(r[0], to_string(step));
      EXPECT_EQ(r[1], s.name);
      EXPECT_EQ(r[2], std::to_string(s.kernels)) << s.name;
      EXPECT_EQ(r[3], num(s.bytes)) << s.name;
      EXPECT_EQ(r[4], std::to_string(s.syncs)) << s.name;
      EXPECT_EQ(r[5], s.decay_only ? "yes" : "no") << s.name;
      EXPECT_EQ(r[6], s.source) << s.name;
    }
  EXPECT_EQ(i, rows.size());
}

TEST(Implementation, HostPipelineIsBoundByTheHostOrTheGpu) {
  // GPU-bound: one launch, then the kernels back to back.
  EXPECT_DOUBLE_EQ(host_pipeline_s({{1.0}, {1.0}}, 0.1, 0.0), 2.1);
  // Host-bound: tiny kernels wait for their launches.
  EXPECT_NEAR(host_pipeline_s(std::vector<Op>(100, Op{1e-9}), 1e-5, 0.0), 1e-3, 1e-6);
  // A sync drains the GPU, then the host needs a launch before the next kernel runs.
  EXPECT_DOUBLE_EQ(host_pipeline_s({{1.0, true}, {1.0}}, 0.5, 0.25), 0.5 + 1 + 0.25 + 0.5 + 1);
}

TEST(Implementation, DeepspeedKernelTimesAreTheTablesBytesAtHbmBandwidth) {
  const KernelModel km = v100();
  ExpandOptions o;
  o.implementation = Implementation::kDeepspeed;
  o.launch_s = o.host_sync_s = 0;
  const int p = 16;
  const size_t n = 336'226'108, np = onebit_padded_size(n, p);
  for (Backend b : {Backend::kNccl, Backend::kMpi}) {
    o.backend = b;
    for (OnebitPart part : {OnebitPart::kWorker, OnebitPart::kServer, OnebitPart::kUnpack}) {
      double bytes = 0;
      for (const DataflowStage& s : deepspeed_onebit_stages(b, part))
        bytes += s.bytes_padded * np + s.bytes_chunk * np / p;  // n < n': the pad runs
      EXPECT_NEAR(onebit_part_s(part, km, o, n, p), km.seconds(bytes), 1e-12) << to_string(part);
    }
  }
  // An unpadded call skips the pad.
  o.backend = Backend::kNccl;
  const size_t exact = onebit_padded_size(1'000'000, p);
  double bytes = 0;
  for (const DataflowStage& s : deepspeed_onebit_stages(Backend::kNccl, OnebitPart::kWorker))
    if (!s.only_if_padded) bytes += s.bytes_padded * exact;
  EXPECT_NEAR(onebit_part_s(OnebitPart::kWorker, km, o, exact, p), km.seconds(bytes), 1e-12);
  // DeepSpeed's dataflow moves several times clbo's fused bytes.
  o.implementation = Implementation::kClbo;
  EXPECT_DOUBLE_EQ(onebit_part_s(OnebitPart::kWorker, km, o, n, p), km.worker_compress_s(np));
  EXPECT_DOUBLE_EQ(onebit_part_s(OnebitPart::kServer, km, o, n, p), km.server_s(np, p));
  EXPECT_DOUBLE_EQ(onebit_part_s(OnebitPart::kUnpack, km, o, n, p), km.unpack_s(np));
}

// clbo's parts hand the kernel model the rank's working set: the collective's buffers
// (8 + 4/p + 3/8 bytes per padded element) plus what the caller keeps resident.
TEST(Implementation, ClboPartsTimeTheirKernelsAtTheCallsWorkingSet) {
  KernelModel km;
  km.compress_eps = 5e8;
  km.compress_cached = {2e9, 8e6};
  km.llc_bytes = 32e6;
  km.llc_sharers = 2;
  ExpandOptions o;
  const int p = 2;
  const size_t n = 1 << 18, np = onebit_padded_size(n, p);
  EXPECT_DOUBLE_EQ(onebit_working_set_bytes(np, p), np * 10.375);
  EXPECT_DOUBLE_EQ(onebit_part_s(OnebitPart::kWorker, km, o, n, p),
                   km.worker_compress_s(np, np * 10.375));
  EXPECT_LT(onebit_part_s(OnebitPart::kWorker, km, o, n, p), np / 5e8) << "2 x 2.7 MB fit";
  o.resident_bytes_per_rank = 16e6;  // a training step's state: the two ranks fill 32 MB
  EXPECT_DOUBLE_EQ(onebit_part_s(OnebitPart::kWorker, km, o, n, p), np / 5e8);
}

TEST(Implementation, LaunchCostsGrowWithTheWorldThroughThePerRankOps) {
  const KernelModel km = v100();
  ExpandOptions o;
  o.implementation = Implementation::kDeepspeed;
  const size_t n = 1000;  // latency-bound: every op costs its launch
  const double at16 = onebit_part_s(OnebitPart::kUnpack, km, o, n, 16);
  const double at1024 = onebit_part_s(OnebitPart::kUnpack, km, o, n, 1024);
  // 8 + 2p ops of 10 µs.
  EXPECT_NEAR(at16, (8 + 2 * 16) * 10e-6, 2e-6);
  EXPECT_NEAR(at1024, (8 + 2 * 1024) * 10e-6, 2e-5);
}

TEST(Implementation, OptimizerExtraIsTheUnfusedStepMinusOneFusedPass) {
  const Workload w = resolve_workload("bert-large-seq128", "test", "workload");
  const KernelModel km = v100();
  ExpandOptions o;
  o.implementation = Implementation::kDeepspeed;
  o.launch_s = o.host_sync_s = 0;
  const double n = static_cast<double>(w.layout.total());
  const auto groups = deepspeed_param_groups(w.layout);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0] + groups[1], w.layout.total());
  EXPECT_LT(groups[1], groups[0] / 100);  // biases and LayerNorm
  const OptimizerConfig onebit = config("OneBitAdam", {{"weight_decay", 0.01}});
  // Compression stage: 88 bytes in the decay group, 68 without, minus 28 everywhere.
  const double expect =
      km.seconds(88.0 * groups[0] + 68.0 * groups[1]) - km.seconds(kFusedStepBytes * n);
  EXPECT_NEAR(optimizer_extra_s(onebit, Phase::kCompression, w.layout, km, o), expect, 1e-12);
  EXPECT_EQ(optimizer_extra_s(config("Adam", json::object()), Phase::kDense, w.layout, km, o), 0);
  o.implementation = Implementation::kClbo;
  EXPECT_EQ(optimizer_extra_s(onebit, Phase::kCompression, w.layout, km, o), 0);
  // 1-bit LAMB loops over every tensor and blocks the host per tensor: with host costs on,
  // its compression step costs far more than the bytes alone.
  o.implementation = Implementation::kDeepspeed;
  o.launch_s = o.host_sync_s = 10e-6;
  const OptimizerConfig lamb = config("OneBitLamb", {{"weight_decay", 0.01}});
  const double with_host = optimizer_extra_s(lamb, Phase::kCompression, w.layout, km, o);
  o.launch_s = o.host_sync_s = 0;
  const double bytes_only = optimizer_extra_s(lamb, Phase::kCompression, w.layout, km, o);
  EXPECT_GT(with_host, bytes_only + w.layout.num_tensors() * 2 * 10e-6);
}

TEST(Implementation, DeepspeedMakesOneCompressedCallPerParameterGroup) {
  const Workload w = resolve_workload("bert-base-seq128", "test", "workload");
  CommSchedule s;
  s.phase = Phase::kCompression;
  s.calls = {{CollKind::kAllreduce, 1, DType::kF32, "nonfinite_flag"},
             {CollKind::kCompressedAllreduce, w.layout.total(), DType::kF32, "momentum"}};
  const auto groups = deepspeed_param_groups(w.layout);
  const auto ds = implementation_calls(s, config("OneBitAdam", json::object()), w.layout,
                                       Implementation::kDeepspeed);
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds[0].what, "nonfinite_flag");
  EXPECT_EQ(ds[1].count, groups[0]);
  EXPECT_EQ(ds[2].count, groups[1]);
  // 1-bit LAMB keeps its fused momentum; clbo makes the schedule's calls.
  EXPECT_EQ(implementation_calls(s, config("OneBitLamb", json::object()), w.layout,
                                 Implementation::kDeepspeed)
                .size(),
            2u);
  EXPECT_EQ(
      implementation_calls(s, config("OneBitAdam", json::object()), w.layout, Implementation::kClbo)
          .size(),
      2u);
}

TEST(Implementation, SpecsRunEveryListedProfileAndEntriesMayFixTheirOwn) {
  json spec =
      test::small_experiment({test::opt("Adam", "Adam", json::object()),
                              test::opt("1-bit Adam", "OneBitAdam", {{"freeze_step", 2}}, "Adam")},
                             4, 2, 4, {{"implementation", {"deepspeed", "clbo"}}});
  spec["simulate"]["optimizers"].push_back(
      {{"label", "fixed"},
       {"implementation", "clbo"},
       {"optimizer", {{"type", "OneBitAdam"}, {"params", {{"freeze_step", 2}}}}}});
  const json r = simulate_experiment(spec, "t.json");
  ASSERT_EQ(r["runs"].size(), 5u);  // Adam ×2, 1-bit Adam ×2, fixed ×1
  std::map<std::string, const json*> by;
  for (const auto& run : r["runs"])
    by[run["optimizer"].get<std::string>() + "/" + run["implementation"].get<std::string>()] = &run;
  ASSERT_TRUE(by.count("fixed/clbo"));
  EXPECT_FALSE(by.count("fixed/deepspeed"));
  // Adam is the same under both; 1-bit Adam's compression step is slower under DeepSpeed.
  EXPECT_EQ((*by["Adam/deepspeed"])["simulated"]["time_s"],
            (*by["Adam/clbo"])["simulated"]["time_s"]);
  const auto step = [&](const std::string& k) {
    return (*by[k])["step_kinds"][1]["simulated"]["time_ms"].get<double>();
  };
  EXPECT_GT(step("1-bit Adam/deepspeed"), step("1-bit Adam/clbo"));
  EXPECT_EQ(step("fixed/clbo"), step("1-bit Adam/clbo"));
  // Each speedup is against the baseline under the same implementation.
  for (const char* im : {"deepspeed", "clbo"}) {
    const json& run = *by[std::string("1-bit Adam/") + im];
    const json& base = *by[std::string("Adam/") + im];
    EXPECT_DOUBLE_EQ(
        run["simulated"]["speedup"].get<double>(),
        base["simulated"]["time_s"].get<double>() / run["simulated"]["time_s"].get<double>());
  }
  EXPECT_EQ(r["inputs"]["settings"]["implementation"], json({"deepspeed", "clbo"}));
}

TEST(Implementation, UnknownImplementationsAreInputErrors) {
  const json opts = json::array({test::opt("Adam", "Adam", json::object())});
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"simulate.implementation", "fused"},
           {"simulate.implementation[1]", json({"clbo", "clbo"})},
           {"simulate.implementation", json::array()}}) {
    json spec = test::small_experiment(opts, 1);
    spec["simulate"]["implementation"] = value;
    try {
      validate_experiment(spec, "bad.json");
      ADD_FAILURE() << "accepted " << value.dump();
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "bad.json");
      EXPECT_EQ(e.field(), field) << e.what();
    }
  }
  json spec = test::small_experiment(opts, 1);
  spec["simulate"]["optimizers"][0]["implementation"] = "deepspeeed";
  try {
    validate_experiment(spec, "bad.json");
    ADD_FAILURE() << "accepted a misspelt entry implementation";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "simulate.optimizers[0].implementation");
    EXPECT_NE(std::string(e.what()).find("did you mean 'deepspeed'"), std::string::npos);
  }
}
