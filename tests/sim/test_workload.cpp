// Workloads: per-tensor layouts match the architectures' parameter counts, V100 compute
// reproduces Table 1's columns, other GPUs and models follow the documented rules.
#include <gtest/gtest.h>

#include "clbo/core/error.hpp"
#include "clbo/sim/kernel_model.hpp"
#include "clbo/sim/presets.hpp"
#include "clbo/sim/workload.hpp"

using namespace clbo;
using namespace clbo::sim;

namespace {
// Independent closed forms of the reference implementations' parameter counts.
size_t bert_params(size_t L, size_t h, size_t I, size_t V, size_t P, size_t T) {
  const size_t emb = (V + P + T) * h + 2 * h;
  const size_t layer = 4 * (h * h + h) + 2 * h + (I * h + I) + (h * I + h) + 2 * h;
  const size_t pooler = h * h + h;
  const size_t heads = V + (h * h + h) + 2 * h + (2 * h + 2);
  return emb + L * layer + pooler + heads;
}
size_t gpt2_params(size_t L, size_t h, size_t V, size_t ctx) {
  return V * h + ctx * h +
         L * (4 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h)) +
         2 * h;
}
}  // namespace

TEST(Workload, AllPresetsLoad) {
  for (const auto& name : preset_names("workloads")) {
    const Workload w = resolve_workload(name, "t", "workload");
    EXPECT_GT(w.layout.total(), 0u) << name;
    EXPECT_GT(w.layout.num_tensors(), 10u) << name << ": per-tensor layout expected";
    EXPECT_FALSE(w.profiles.empty()) << name;
    EXPECT_FALSE(w.source.empty()) << name;
  }
}

TEST(Workload, LayoutsMatchTheArchitectures) {
  const Workload large = resolve_workload("bert-large-seq128", "t", "w");
  EXPECT_EQ(large.layout.total(), bert_params(24, 1024, 4096, 30522, 512, 2));
  EXPECT_NEAR(large.layout.total() / 1e6, 336, 1);  // the paper's "340M" (680 MB fp16)
  EXPECT_EQ(resolve_workload("bert-base-seq128", "t", "w").layout.total(),
            bert_params(12, 768, 3072, 30522, 512, 2));
  const Workload gpt = resolve_workload("gpt2-1.5b", "t", "w");
  EXPECT_EQ(gpt.layout.total(), gpt2_params(48, 1600, 50257, 1024));
  EXPECT_EQ(gpt.layout.total(), 1557611200u);  // Hugging Face gpt2-xl
  const Workload xl = resolve_workload("bert-xl", "t", "w");
  EXPECT_NEAR(xl.layout.total() / 1e9, 2.9, 0.05);
  const Workload swin = resolve_workload("swin-b", "t", "w");
  EXPECT_NEAR(swin.layout.total() / 1e6, 87.8, 0.2);  // Swin-B: 88M (Liu et al. 2021)
  // Shapes are kept, so SLAMB's 1-D / small-tensor rule sees them.
  EXPECT_EQ(large.layout[0].name, "embeddings.word_embeddings.weight");
  EXPECT_EQ(large.layout[0].shape, (std::vector<int64_t>{30522, 1024}));
  EXPECT_EQ(large.layout.ndim(3), 1u);  // embeddings LayerNorm weight
}

TEST(Workload, V100ProfilesReproduceTable1Compute) {
  const Workload w = resolve_workload("bert-large-seq128", "t", "w");
  const ComputeProfile ib = w.compute_for("V100-SXM2", "t", "gpu");
  const ComputeProfile eth = w.compute_for("V100-PCIe", "t", "gpu");
  // docs/reference/published.md §3.1: IB batch-16 fwd 32.74-33.45 ms, bwd 56.49-59.99 ms;
  // batch-1 25.36/23.25.
  EXPECT_NEAR(ib.fwd_s(16) * 1e3, 33.0, 0.6);
  EXPECT_NEAR(ib.bwd_s(16) * 1e3, 58.5, 2.0);
  EXPECT_NEAR(ib.fwd_s(1) * 1e3, 25.36, 1e-9);
  EXPECT_NEAR(ib.bwd_s(1) * 1e3, 23.25, 1e-9);
  EXPECT_NEAR(ib.optimizer_s * 1e3, 57.8, 1.0);
  EXPECT_NEAR(eth.fwd_s(16) * 1e3, 36.0, 1.0);
  EXPECT_NEAR(eth.bwd_s(16) * 1e3, 61.1, 2.0);
  EXPECT_NEAR(eth.optimizer_s * 1e3, 75.3, 1.5);
  EXPECT_NE(ib.origin.find("measured"), std::string::npos);
}

TEST(Workload, OtherGpusScaleByPeakAndBandwidth) {
  const Workload w = resolve_workload("bert-large-seq128", "t", "w");
  const ComputeProfile v = w.compute_for("V100-SXM2", "t", "gpu");
  const ComputeProfile h = w.compute_for("H100", "t", "gpu");
  EXPECT_EQ(h.gpu, "H100-SXM");
  EXPECT_NEAR(h.fwd_per_sample_s / v.fwd_per_sample_s, 125.0 / 989.0, 1e-12);
  EXPECT_NEAR(h.optimizer_s / v.optimizer_s, 0.90 / 3.35, 1e-12);
  EXPECT_NE(h.origin.find("scaled"), std::string::npos);
}

TEST(Workload, DerivedModelsScaleByFlopsDepthAndSize) {
  const Workload base = resolve_workload("bert-large-seq128", "t", "w");
  const Workload w512 = resolve_workload("bert-large-seq512", "t", "w");
  const ComputeProfile a = base.compute_for("V100-SXM2", "t", "g");
  const ComputeProfile b = w512.compute_for("V100-SXM2", "t", "g");
  const double flops = w512.fwd_flops_per_sample / base.fwd_flops_per_sample;
  EXPECT_GT(flops, 4.0);  // 4× the tokens plus the quadratic attention term
  EXPECT_LT(flops, 4.5);
  EXPECT_NEAR(b.fwd_per_sample_s / a.fwd_per_sample_s, flops, 1e-12);
  EXPECT_NEAR(b.fwd_floor_s, a.fwd_floor_s, 1e-15);  // same depth
  EXPECT_NEAR(b.optimizer_s, a.optimizer_s, 1e-15);  // same parameters
  EXPECT_NE(b.origin.find("derived"), std::string::npos);
}

TEST(Workload, UnknownWorkloadAndGpuAreRejected) {
  try {
    resolve_workload("bert-large-seq129", "exp.json", "simulate.workload");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "simulate.workload");
    EXPECT_EQ(e.value(), "bert-large-seq129");
    EXPECT_NE(std::string(e.what()).find("bert-large-seq128"), std::string::npos);
  }
  EXPECT_THROW(gpu_info("V200", "c.json", "gpu"), InputError);
}

TEST(Workload, KernelRooflineUsesPublishedBytesPerElement) {
  KernelModel k;
  k.hbm_Bps = 1e12;
  k.efficiency = 1.0;
  EXPECT_DOUBLE_EQ(k.worker_compress_s(1000000), 20.125e6 / 1e12);
  EXPECT_DOUBLE_EQ(k.unpack_s(1000000), 4.125e6 / 1e12);
}

TEST(Workload, KernelTimesCanComeFromClboBenchKernels) {
  // The shape `clbo bench kernels --out` writes (Google Benchmark JSON).
  const nlohmann::json bench = {
      {"benchmarks",
       {{{"name", "BM_compress_fused/4096"}, {"run_type", "iteration"}, {"items_per_second", 1e9}},
        {{"name", "BM_compress_fused/16777216"},
         {"run_type", "iteration"},
         {"items_per_second", 2e9}},
        {{"name", "BM_Unpack/16777216"}, {"run_type", "iteration"}, {"items_per_second", 8e9}}}}};
  KernelModel k;
  k.hbm_Bps = 1e12;
  load_kernel_bench(k, bench, "k.json");
  EXPECT_DOUBLE_EQ(k.worker_compress_s(4000000), 4000000 / 2e9);  // the largest size wins
  EXPECT_DOUBLE_EQ(k.unpack_s(8000000), 1e-3);
  EXPECT_DOUBLE_EQ(k.server_s(1000000, 10), (1e6 / 8 + 1e5 * 20.125) / (1e12 * 0.85));  // roofline
  EXPECT_EQ(k.to_json()["measured"]["file"], "k.json");
  EXPECT_THROW(
      load_kernel_bench(k, nlohmann::json{{"benchmarks", nlohmann::json::array()}}, "k.json"),
      InputError);
}

TEST(Workload, KernelTimesReadTheClboBenchKernelsEnvelope) {
  // `clbo bench kernels -o DIR` wraps the Google Benchmark JSON (results/SCHEMA.md).
  const nlohmann::json raw = {{"benchmarks",
                               {{{"name", "BM_compress_fused/16777216"},
                                 {"run_type", "iteration"},
                                 {"items_per_second", 2e9}}}}};
  const nlohmann::json wrapped = {{"schema", "clbo.bench.kernels/1"},
                                  {"measured", true},
                                  {"config", {{"binary", "bench_kernels_cpu"}}},
                                  {"benchmark", raw}};
  KernelModel k;
  k.hbm_Bps = 1e12;
  load_kernel_bench(k, wrapped, "k.json");
  EXPECT_DOUBLE_EQ(k.worker_compress_s(4000000), 4000000 / 2e9);
}
