#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/sim/implementation.hpp"
#include "clbo/sim/presets.hpp"
#include "clbo/sim/workload.hpp"

namespace clbo::sim {

namespace {

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

// A model dimension. The bounds keep every generated layout below kMaxLayoutElements.
int int_field(ConfigReader& r, const std::string& key, int def, int min) {
  static const std::map<std::string, int> kMax = {
      {"layers", 1 << 12},  {"hidden", 1 << 16},       {"intermediate", 1 << 18},
      {"vocab", 1 << 22},   {"max_position", 1 << 20}, {"type_vocab", 1 << 16},
      {"context", 1 << 20}, {"embed_dim", 1 << 14},    {"window", 1 << 10},
      {"patch", 1 << 10},   {"in_chans", 1 << 10},     {"num_classes", 1 << 22}};
  return r.integer<int>(key, def, min, kMax.at(key));
}

// A tensors file named by a workload file: relative to the workload file when it is there,
// else to the working directory.
std::string layout_path(const std::string& path, const std::string& file) {
  const std::filesystem::path base = std::filesystem::path(file).parent_path();
  if (std::filesystem::path(path).is_relative() && !base.empty() &&
      std::filesystem::exists(base / path))
    return (base / path).string();
  return path;
}

void parse_layout(Workload& w, const nlohmann::json& obj, const std::string& file,
                  const std::string& field) {
  // A tensors file (scripts/export_layout.py writes one).
  if (obj.is_string()) {
    const std::string path = layout_path(obj.get<std::string>(), file);
    w.layout = ParamLayout::from_json(load_json_file_named_by(path, file, field), path);
    return;
  }
  if (!obj.is_object() || obj.size() != 1)
    throw InputError(file, field, obj.dump().substr(0, 200),
                     "expected one of {\"bert\": {...}}, {\"gpt2\": {...}}, {\"swin\": {...}}, "
                     "{\"tensors\": [...]} or the path of a tensors JSON file");
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
    const auto depths = r.integers<int>("depths", {2, 2, 18, 2}, 1, 4096);
    const auto heads = r.integers<int>("heads", {4, 8, 16, 32}, 1, 4096);
    if (heads.size() != depths.size()) r.fail("heads", "needs one entry per stage (depths)");
    w.layers = 0;
    for (int d : depths) w.layers += d;
    // Each stage halves the resolution and doubles the width: a few stages at most.
    if (depths.size() > 16) r.fail("depths", "at most 16 stages");
    if (w.layers > (1 << 12)) r.fail("depths", "at most 4096 blocks in all");
    w.layout = swin_layout(int_field(r, "embed_dim", 128, 1), depths, heads,
                           int_field(r, "window", 7, 1), int_field(r, "patch", 4, 1),
                           int_field(r, "in_chans", 3, 1), int_field(r, "num_classes", 1000, 1));
  }
  if (w.layout.total() > kMaxLayoutElements)
    throw InputError(file, field + "." + kind, std::to_string(w.layout.total()) + " parameters",
                     fmt::format("a layout may hold at most {} elements", kMaxLayoutElements));
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

bool Workload::has_profile(const std::string& gpu) const {
  const std::string want = canonical_gpu_name(gpu);
  for (const auto& p : profiles)
    if (canonical_gpu_name(p.gpu) == want) return true;
  return false;
}

ComputeProfile Workload::compute_for(const std::string& gpu, const std::string& where,
                                     const std::string& field) const {
  return compute_for(gpu_info(gpu, where, field), where, field);
}

ComputeProfile Workload::compute_for(const GpuInfo& target, const std::string& where,
                                     const std::string& field) const {
  for (const auto& p : profiles)
    if (canonical_gpu_name(p.gpu) == target.name) return p;
  if (from_flops.enabled()) {
    require_gpu_figures(target, true, where, field,
                        fmt::format("workload '{}' computes its time from FLOPs per sample at a "
                                    "fraction of the dense FP16 peak",
                                    name));
    const FlopsCompute& f = from_flops;
    ComputeProfile p;
    p.gpu = target.name;
    p.fwd_per_sample_s = fwd_flops_per_sample / (target.fp16_tflops * 1e12 * f.efficiency);
    p.bwd_per_sample_s = p.fwd_per_sample_s * f.bwd_over_fwd;
    p.optimizer_s = f.optimizer_bytes_per_param * static_cast<double>(layout.total()) /
                    (target.hbm_TBps * 1e12 * f.memory_efficiency);
    p.origin = fmt::format(
        "from FLOPs ({}): forward {:.6g} FLOPs per sample at {} of {} TFLOPS dense FP16, "
        "backward {} × forward, no launch floor; optimizer {} B per parameter at {} of {} TB/s "
        "HBM",
        f.source.empty() ? file : f.source, fwd_flops_per_sample, f.efficiency, target.fp16_tflops,
        f.bwd_over_fwd, f.optimizer_bytes_per_param, f.memory_efficiency, target.hbm_TBps);
    return p;
  }
  const ComputeProfile* ref = nullptr;
  for (const auto& p : profiles)
    if (p.gpu == reference_gpu) ref = &p;
  if (!ref) throw InputError(file, "compute.reference_gpu", reference_gpu, "no such profile");
  const GpuInfo* from_preset = find_gpu_preset(ref->gpu);
  if (!from_preset)
    throw InputError(file, "compute.reference_gpu", ref->gpu,
                     fmt::format("is not a GPU preset, so GPU '{}' cannot be scaled from it: give "
                                 "a measured profile for '{}' or compute.from_flops",
                                 target.name, target.name));
  const GpuInfo& from = *from_preset;
  require_gpu_figures(target, true, where, field,
                      fmt::format("workload '{}' has no profile for it, so its compute is "
                                  "scaled from {} by the ratio of dense FP16 peaks",
                                  name, ref->gpu));
  // Scaling rule: matmul-bound forward/backward time (floor included: it is many small
  // kernels) follows the dense FP16 tensor peak, and its memory-bound share
  // (memory_bound_fraction, a roofline split) HBM bandwidth; the optimizer step streams its
  // state and follows HBM bandwidth. Both assume the same achieved fraction of peak as the
  // reference.
  ComputeProfile p = *ref;
  const double c = from.fp16_tflops / target.fp16_tflops;
  const double m = from.hbm_TBps / target.hbm_TBps;
  const double f = memory_bound_fraction;
  const double fb = (1 - f) * c + f * m;
  p.gpu = target.name;
  p.fwd_floor_s *= fb;
  p.fwd_per_sample_s *= fb;
  p.bwd_floor_s *= fb;
  p.bwd_per_sample_s *= fb;
  p.optimizer_s *= m;
  const std::string compute =
      f > 0 ? fmt::format(
                  "compute × {:.4f} ({} of it × {:.4f}, FP16 tensor peak {} → {} TFLOPS; "
                  "{} × {:.4f}, HBM)",
                  fb, 1 - f, c, from.fp16_tflops, target.fp16_tflops, f, m)
            : fmt::format("compute × {:.4f} (FP16 tensor peak {} → {} TFLOPS)", c, from.fp16_tflops,
                          target.fp16_tflops);
  p.origin = fmt::format("scaled from {} ({}): {}, optimizer × {:.4f} (HBM {} → {} TB/s)", ref->gpu,
                         ref->origin, compute, m, from.hbm_TBps, target.hbm_TBps);
  return p;
}

nlohmann::json Workload::to_json() const {
  nlohmann::json profs = nlohmann::json::array();
  for (const auto& p : profiles) profs.push_back(p.to_json());
  nlohmann::json j = {{"name", name},
                      {"file", file},
                      {"source", source},
                      {"params", layout.total()},
                      {"tensors", layout.num_tensors()},
                      {"seq_len", seq_len},
                      {"layers", layers},
                      {"fwd_flops_per_sample", fwd_flops_per_sample},
                      {"reference_gpu", reference_gpu},
                      {"profiles", profs}};
  if (memory_bound_fraction > 0) j["memory_bound_fraction"] = memory_bound_fraction;
  if (from_flops.enabled())
    j["from_flops"] = {{"efficiency", from_flops.efficiency},
                       {"bwd_over_fwd", from_flops.bwd_over_fwd},
                       {"optimizer_bytes_per_param", from_flops.optimizer_bytes_per_param},
                       {"memory_efficiency", from_flops.memory_efficiency},
                       {"source", from_flops.source}};
  return j;
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
  w.seq_len = r.integer<int>("seq_len", 0, 0, 1 << 22);
  w.fwd_flops_per_sample = r.number_in("fwd_flops_per_sample", 0, 0, true, 1e18, true);
  r.ignore("fwd_flops_source");
  r.ignore("layout");
  if (!obj.contains("layout")) r.fail("layout", "required");
  parse_layout(w, obj["layout"], file, r.field("layout"));

  r.ignore("compute");
  if (!obj.contains("compute") || !obj["compute"].is_object())
    r.fail("compute",
           "required: {\"reference_gpu\": ..., \"profiles\": {...}}, {\"derive_from\": "
           "\"<workload>\"} or {\"from_flops\": {\"efficiency\": ...}}");
  const nlohmann::json& c = obj["compute"];
  ConfigReader cr(c, file, r.field("compute"));
  // Measured profiles, by GPU; any GPU name, since a measured profile is how a GPU without
  // a preset gets its compute.
  auto read_profiles = [&](bool required) {
    cr.ignore("profiles");
    if (!c.contains("profiles") && !required) return;
    if (!c.contains("profiles") || !c["profiles"].is_object() ||
        (required && c["profiles"].empty()))
      cr.fail("profiles", "required: {\"<gpu>\": {\"fwd_per_sample_ms\": ..., ...}}");
    for (auto it = c["profiles"].begin(); it != c["profiles"].end(); ++it) {
      const std::string f = cr.field("profiles") + "." + it.key();
      w.profiles.push_back(parse_profile(it.value(), it.key(), file, f));
    }
  };
  if (c.contains("derive_from")) {
    if (c.contains("from_flops")) cr.fail("from_flops", "give derive_from or from_flops, not both");
    const std::string base_name = cr.choice("derive_from", "", preset_names("workloads"));
    if (base_name == w.name) cr.fail("derive_from", "a workload cannot derive from itself");
    const Workload base = resolve_workload(base_name, file, cr.field("derive_from"));
    if (base.from_flops.enabled())
      cr.fail("derive_from", "that workload computes from FLOPs; give this one from_flops too");
    if (w.fwd_flops_per_sample <= 0)
      r.fail("fwd_flops_per_sample", "needed to derive compute from another workload");
    if (w.layers <= 0) r.fail("layout", "needs a generator (bert/gpt2/swin) to derive compute");
    w.profiles = derive_profiles(base, w);
    w.reference_gpu = base.reference_gpu;
    w.memory_bound_fraction =
        cr.number_in("memory_bound_fraction", base.memory_bound_fraction, 0, true, 1, true);
  } else if (c.contains("from_flops")) {
    if (w.fwd_flops_per_sample <= 0)
      r.fail("fwd_flops_per_sample",
             "required by compute.from_flops: the forward FLOPs of one sample (about 2 × "
             "matmul parameters × tokens, plus attention)");
    ConfigReader fr(cr.object("from_flops", true), file, cr.field("from_flops"));
    if (!fr.has("efficiency"))
      fr.fail("efficiency",
              "required: the fraction of the dense FP16 peak that forward and backward reach, "
              "e.g. 0.4 (model FLOPs achieved / peak)");
    FlopsCompute& f = w.from_flops;
    f.efficiency = fr.number_in("efficiency", 0, 0, false, 1, true);
    f.bwd_over_fwd = fr.number_in("bwd_over_fwd", 2, 0, false, 100, true);
    f.optimizer_bytes_per_param =
        fr.number_in("optimizer_bytes_per_param", kFusedStepBytes, 0, true, 1e4, true);
    f.memory_efficiency = fr.number_in("memory_efficiency", 0.85, 0, false, 1, true);
    f.source = fr.string("source", "");
    fr.finish();
    read_profiles(false);
    if (c.contains("reference_gpu"))
      cr.fail("reference_gpu",
              "not used with from_flops: a measured profile serves its own GPU, every other "
              "GPU's compute comes from the FLOPs");
  } else {
    // Any profile's GPU; scaling from it needs it to be a preset (compute_for).
    w.reference_gpu = cr.string("reference_gpu", "");
    if (w.reference_gpu.empty()) cr.fail("reference_gpu", "required: the GPU of one profile");
    w.memory_bound_fraction = cr.number_in("memory_bound_fraction", 0, 0, true, 1, true);
    read_profiles(true);
    bool found = false;
    for (const auto& p : w.profiles) found |= p.gpu == w.reference_gpu;
    if (!found) cr.fail("reference_gpu", "must name one of the profiles");
  }
  cr.finish();
  r.finish();
  return w;
}

nlohmann::json workload_json(const nlohmann::json& ref, const std::string& where,
                             const std::string& field, std::string* from) {
  if (ref.is_object()) {
    if (from) *from = where;
    return ref;
  }
  if (!ref.is_string())
    throw InputError(where, field, ref.dump(),
                     "expected a workload name, a JSON path or an object");
  const std::string s = ref.get<std::string>();
  if (s.size() > 5 && s.substr(s.size() - 5) == ".json") {
    nlohmann::json j = load_json_file_named_by(s, where, field);
    if (from) *from = s;
    // Resolved here, so the object no longer depends on where its file is.
    if (j.is_object() && j.contains("layout") && j["layout"].is_string())
      j["layout"] = layout_path(j["layout"].get<std::string>(), s);
    return j;
  }
  if (from) *from = preset_path("workloads", s);
  return preset_json("workloads", s, where, field);
}

Workload resolve_workload(const nlohmann::json& ref, const std::string& where,
                          const std::string& field) {
  if (ref.is_object()) return parse_workload(ref, where, field);
  std::string from;
  const nlohmann::json j = workload_json(ref, where, field, &from);
  return parse_workload(j, from);
}

}  // namespace clbo::sim
