#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/sim/presets.hpp"
#include "clbo/sim/workload.hpp"

namespace clbo::sim {

namespace {

// Datasheet peaks: dense FP16 tensor-core TFLOPS and HBM bandwidth (docs/reference/published.md
// lists the HBM figures; the TFLOPS are NVIDIA's V100/A100/H100/H200 datasheets, dense, no
// sparsity).
const std::vector<std::pair<std::vector<std::string>, GpuInfo>>& gpu_table() {
  static const std::vector<std::pair<std::vector<std::string>, GpuInfo>> t = {
      {{"V100-SXM2", "V100"}, {"V100-SXM2", 125, 0.90}},
      {{"V100-PCIe"}, {"V100-PCIe", 112, 0.90}},
      {{"A100-SXM4-40GB", "A100-40GB"}, {"A100-SXM4-40GB", 312, 1.555}},
      {{"A100-SXM4-80GB", "A100"}, {"A100-SXM4-80GB", 312, 2.039}},
      {{"H100-SXM", "H100"}, {"H100-SXM", 989, 3.35}},
      {{"H200"}, {"H200", 989, 4.8}},
  };
  return t;
}

double ms(ConfigReader& r, const std::string& key, bool required) {
  if (required && !r.has(key)) r.fail(key, "required");
  return r.number_in(key, 0, 0, true, 1e9, true) * 1e-3;
}

// Matmul parameters: 2-D weights that are not lookup tables (embeddings).
double matmul_params(const ParamLayout& l) {
  double n = 0;
  for (size_t i = 0; i < l.num_tensors(); ++i) {
    const auto& t = l[i];
    if (t.shape.size() == 2 && t.name.find("embeddings") == std::string::npos &&
        t.name.find("wte") == std::string::npos && t.name.find("wpe") == std::string::npos)
      n += static_cast<double>(t.size);
  }
  return n;
}

int int_field(ConfigReader& r, const std::string& key, int def, int min) {
  return static_cast<int>(r.integer(key, def, min));
}

std::vector<int> int_list(const nlohmann::json& obj, ConfigReader& r, const std::string& key,
                          std::vector<int> def) {
  r.ignore(key);
  if (!obj.contains(key)) return def;
  std::vector<int> v;
  if (!obj[key].is_array()) r.fail(key, "expected an array of positive integers");
  for (const auto& x : obj[key]) {
    if (!x.is_number_integer() || x.get<int>() < 1)
      r.fail(key, "expected an array of positive integers");
    v.push_back(x.get<int>());
  }
  return v;
}

void parse_layout(Workload& w, const nlohmann::json& obj, const std::string& file,
                  const std::string& field) {
  if (!obj.is_object() || obj.size() != 1)
    throw InputError(file, field, obj.dump().substr(0, 200),
                     "expected one of {\"bert\": {...}}, {\"gpt2\": {...}}, {\"swin\": {...}}, "
                     "{\"tensors\": [...]}");
  const std::string kind = obj.begin().key();
  const nlohmann::json& a = obj.begin().value();
  if (kind == "tensors") {
    w.layout = ParamLayout::from_json(obj, file);
    return;
  }
  const std::vector<std::string> kinds = {"bert", "gpt2", "swin", "tensors"};
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
    throw InputError(file, field + "." + kind, a.dump().substr(0, 200),
                     "unknown layout generator" + did_you_mean(kind, kinds));
  ConfigReader r(a, file, field + "." + kind);
  if (kind == "bert") {
    w.layers = int_field(r, "layers", 0, 1);
    const int h = int_field(r, "hidden", 0, 1);
    w.layout = bert_layout(w.layers, h, int_field(r, "intermediate", 4 * h, 1),
                           int_field(r, "vocab", 30522, 1), int_field(r, "max_position", 512, 1),
                           int_field(r, "type_vocab", 2, 1), r.boolean("pretraining_heads", true));
    if (w.seq_len > 0 && w.fwd_flops_per_sample == 0)
      w.fwd_flops_per_sample =
          2 * matmul_params(w.layout) * w.seq_len + 4.0 * w.layers * w.seq_len * w.seq_len * h;
  } else if (kind == "gpt2") {
    w.layers = int_field(r, "layers", 0, 1);
    const int h = int_field(r, "hidden", 0, 1);
    const int vocab = int_field(r, "vocab", 50257, 1);
    w.layout = gpt2_layout(w.layers, h, vocab, int_field(r, "context", 1024, 1));
    // The tied LM head is a matmul over every token.
    if (w.seq_len > 0 && w.fwd_flops_per_sample == 0)
      w.fwd_flops_per_sample =
          2 * (matmul_params(w.layout) + static_cast<double>(vocab) * h) * w.seq_len +
          4.0 * w.layers * w.seq_len * w.seq_len * h;
  } else {
    const auto depths = int_list(a, r, "depths", {2, 2, 18, 2});
    const auto heads = int_list(a, r, "heads", {4, 8, 16, 32});
    if (heads.size() != depths.size()) r.fail("heads", "needs one entry per stage (depths)");
    w.layers = 0;
    for (int d : depths) w.layers += d;
    w.layout = swin_layout(int_field(r, "embed_dim", 128, 1), depths, heads,
                           int_field(r, "window", 7, 1), int_field(r, "patch", 4, 1),
                           int_field(r, "in_chans", 3, 1), int_field(r, "num_classes", 1000, 1));
  }
  r.finish();
}

// Profiles of `base` carried over to a model with other FLOPs, depth and size.
std::vector<ComputeProfile> derive_profiles(const Workload& base, const Workload& w) {
  std::vector<ComputeProfile> out;
  const double flops = w.fwd_flops_per_sample / base.fwd_flops_per_sample;
  const double depth = static_cast<double>(w.layers) / base.layers;
  const double size = static_cast<double>(w.layout.total()) / base.layout.total();
  for (const ComputeProfile& b : base.profiles) {
    ComputeProfile p = b;
    p.fwd_per_sample_s *= flops;
    p.bwd_per_sample_s *= flops;
    p.fwd_floor_s *= depth;
    p.bwd_floor_s *= depth;
    p.optimizer_s *= size;
    p.origin = fmt::format(
        "derived from {} ({}): per-sample time × FLOPs ratio {:.4f}, floor × layer ratio "
        "{:.4f}, optimizer × parameter ratio {:.4f}",
        base.name, b.origin, flops, depth, size);
    out.push_back(p);
  }
  return out;
}

}  // namespace

const GpuInfo& gpu_info(const std::string& name, const std::string& where,
                        const std::string& field) {
  for (const auto& [aliases, info] : gpu_table())
    for (const auto& a : aliases)
      if (a == name) return info;
  throw InputError(where, field, name, "unknown GPU type" + did_you_mean(name, gpu_names()));
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> n;
  for (const auto& [aliases, info] : gpu_table()) n.insert(n.end(), aliases.begin(), aliases.end());
  return n;
}

double ComputeProfile::fwd_s(int m) const {
  return std::max(fwd_floor_s, fwd_per_sample_s * m);
}
double ComputeProfile::bwd_s(int m) const {
  return std::max(bwd_floor_s, bwd_per_sample_s * m);
}

nlohmann::json ComputeProfile::to_json() const {
  return {{"gpu", gpu},
          {"fwd_floor_ms", fwd_floor_s * 1e3},
          {"fwd_per_sample_ms", fwd_per_sample_s * 1e3},
          {"bwd_floor_ms", bwd_floor_s * 1e3},
          {"bwd_per_sample_ms", bwd_per_sample_s * 1e3},
          {"optimizer_ms", optimizer_s * 1e3},
          {"origin", origin}};
}

ComputeProfile parse_profile(const nlohmann::json& obj, const std::string& gpu,
                             const std::string& file, const std::string& prefix) {
  ConfigReader r(obj, file, prefix);
  ComputeProfile p;
  p.gpu = gpu;
  p.fwd_floor_s = ms(r, "fwd_floor_ms", false);
  p.fwd_per_sample_s = ms(r, "fwd_per_sample_ms", true);
  p.bwd_floor_s = ms(r, "bwd_floor_ms", false);
  p.bwd_per_sample_s = ms(r, "bwd_per_sample_ms", true);
  p.optimizer_s = ms(r, "optimizer_ms", true);
  r.ignore("source");
  p.origin = "measured: " + (obj.contains("source") && obj["source"].is_string()
                                 ? obj["source"].get<std::string>()
                                 : file);
  r.finish();
  return p;
}

ComputeProfile Workload::compute_for(const std::string& gpu, const std::string& where,
                                     const std::string& field) const {
  const GpuInfo& target = gpu_info(gpu, where, field);
  for (const auto& p : profiles)
    if (gpu_info(p.gpu, file, "compute").name == target.name) return p;
  const ComputeProfile* ref = nullptr;
  for (const auto& p : profiles)
    if (p.gpu == reference_gpu) ref = &p;
  if (!ref) throw InputError(file, "compute.reference_gpu", reference_gpu, "no such profile");
  const GpuInfo& from = gpu_info(ref->gpu, file, "compute.reference_gpu");
  // Scaling rule: matmul-bound forward/backward time (floor included: it is many small
  // kernels) follows the dense FP16 tensor peak; the optimizer step streams its state and
  // follows HBM bandwidth. Both assume the same achieved fraction of peak as the reference.
  ComputeProfile p = *ref;
  const double c = from.fp16_tflops / target.fp16_tflops;
  const double m = from.hbm_TBps / target.hbm_TBps;
  p.gpu = target.name;
  p.fwd_floor_s *= c;
  p.fwd_per_sample_s *= c;
  p.bwd_floor_s *= c;
  p.bwd_per_sample_s *= c;
  p.optimizer_s *= m;
  p.origin = fmt::format(
      "scaled from {} ({}): compute × {:.4f} (FP16 tensor peak {} → {} TFLOPS), optimizer × "
      "{:.4f} (HBM {} → {} TB/s)",
      ref->gpu, ref->origin, c, from.fp16_tflops, target.fp16_tflops, m, from.hbm_TBps,
      target.hbm_TBps);
  return p;
}

nlohmann::json Workload::to_json() const {
  nlohmann::json profs = nlohmann::json::array();
  for (const auto& p : profiles) profs.push_back(p.to_json());
  return {{"name", name},
          {"file", file},
          {"source", source},
          {"params", layout.total()},
          {"tensors", layout.num_tensors()},
          {"seq_len", seq_len},
          {"layers", layers},
          {"fwd_flops_per_sample", fwd_flops_per_sample},
          {"reference_gpu", reference_gpu},
          {"profiles", profs}};
}

Workload parse_workload(const nlohmann::json& obj, const std::string& file,
                        const std::string& prefix) {
  ConfigReader r(obj, file, prefix);
  Workload w;
  w.file = file;
  r.ignore("name");
  if (!obj.contains("name") || !obj["name"].is_string()) r.fail("name", "required");
  w.name = obj["name"].get<std::string>();
  for (const char* k : {"description", "source"}) {
    r.ignore(k);
    if (obj.contains(k) && !obj[k].is_string()) r.fail(k, "expected a string");
  }
  w.description = obj.value("description", "");
  w.source = obj.value("source", "");
  w.seq_len = static_cast<int>(r.integer("seq_len", 0, 0));
  w.fwd_flops_per_sample = r.number_in("fwd_flops_per_sample", 0, 0, true, 1e18, true);
  r.ignore("fwd_flops_source");
  r.ignore("layout");
  if (!obj.contains("layout")) r.fail("layout", "required");
  parse_layout(w, obj["layout"], file, r.field("layout"));

  r.ignore("compute");
  if (!obj.contains("compute") || !obj["compute"].is_object())
    r.fail("compute",
           "required: {\"reference_gpu\": ..., \"profiles\": {...}} or "
           "{\"derive_from\": \"<workload>\"}");
  const nlohmann::json& c = obj["compute"];
  ConfigReader cr(c, file, r.field("compute"));
  if (c.contains("derive_from")) {
    const std::string base_name = cr.choice("derive_from", "", preset_names("workloads"));
    if (base_name == w.name) cr.fail("derive_from", "a workload cannot derive from itself");
    const Workload base = resolve_workload(base_name, file, cr.field("derive_from"));
    if (w.fwd_flops_per_sample <= 0)
      r.fail("fwd_flops_per_sample", "needed to derive compute from another workload");
    if (w.layers <= 0) r.fail("layout", "needs a generator (bert/gpt2/swin) to derive compute");
    w.profiles = derive_profiles(base, w);
    w.reference_gpu = base.reference_gpu;
  } else {
    w.reference_gpu = cr.choice("reference_gpu", "", gpu_names());
    if (w.reference_gpu.empty()) cr.fail("reference_gpu", "required");
    cr.ignore("profiles");
    if (!c.contains("profiles") || !c["profiles"].is_object() || c["profiles"].empty())
      cr.fail("profiles", "required: {\"<gpu>\": {\"fwd_per_sample_ms\": ..., ...}}");
    for (auto it = c["profiles"].begin(); it != c["profiles"].end(); ++it) {
      const std::string f = cr.field("profiles") + "." + it.key();
      gpu_info(it.key(), file, f);
      w.profiles.push_back(parse_profile(it.value(), it.key(), file, f));
    }
    bool found = false;
    for (const auto& p : w.profiles) found |= p.gpu == w.reference_gpu;
    if (!found) cr.fail("reference_gpu", "must name one of the profiles");
  }
  cr.finish();
  r.finish();
  return w;
}

Workload resolve_workload(const nlohmann::json& ref, const std::string& where,
                          const std::string& field) {
  if (ref.is_object()) return parse_workload(ref, where, field);
  if (!ref.is_string())
    throw InputError(where, field, ref.dump(),
                     "expected a workload name, a JSON path or an object");
  const std::string s = ref.get<std::string>();
  if (s.size() > 5 && s.substr(s.size() - 5) == ".json")
    return parse_workload(load_json_file(s), s);
  const nlohmann::json j = preset_json("workloads", s, where, field);
  return parse_workload(j, preset_path("workloads", s));
}

}  // namespace clbo::sim
