#include "clbo/sim/gpu.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"

namespace clbo::sim {

namespace {

struct Preset {
  std::vector<std::string> aliases;  // the first is the canonical name
  double fp16_tflops, hbm_TBps;
  int row;  // docs/reference/published.md §5.6 row: document, date and place of each figure
  bool unrecorded;
};

// Dense FP16/BF16 tensor peaks (no 2:4 sparsity: vendors print the sparse figure, twice
// this) and HBM bandwidth.
const std::vector<Preset>& presets() {
  static const std::vector<Preset> t = {
      {{"V100-SXM2", "V100"}, 125, 0.90, 1, true},
      {{"V100-PCIe"}, 112, 0.90, 2, true},
      {{"A100-SXM4-40GB", "A100-40GB"}, 312, 1.555, 3, true},
      {{"A100-SXM4-80GB", "A100"}, 312, 2.039, 4, true},
      {{"H100-SXM", "H100"}, 989, 3.35, 5, true},
      {{"H200"}, 989, 4.8, 6, true},
      {{"B200"}, 2250, 7.7, 7, false},
      {{"MI300X"}, 1307.4, 5.3, 8, false},
  };
  return t;
}

const std::vector<GpuInfo>& preset_infos() {
  static const std::vector<GpuInfo> infos = [] {
    std::vector<GpuInfo> out;
    for (const Preset& p : presets()) {
      GpuInfo g;
      g.name = p.aliases.front();
      g.fp16_tflops = p.fp16_tflops;
      g.hbm_TBps = p.hbm_TBps;
      const std::string src =
          fmt::format("preset {}: docs/reference/published.md §5.6 row {}", g.name, p.row);
      g.fp16_source = src + " (dense, without sparsity)";
      g.hbm_source = src;
      g.unrecorded_preset = p.unrecorded;
      out.push_back(g);
    }
    return out;
  }();
  return infos;
}

std::string preset_list() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.aliases.front());
  return fmt::format("{}", fmt::join(names, ", "));
}

double figure(ConfigReader& r, const std::string& key, double hi) {
  return r.number_in(key, 0, 0, false, hi, true);
}

}  // namespace

nlohmann::json GpuInfo::to_json() const {
  auto fig = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  auto src = [](double v, const std::string& s) {
    return v > 0 ? nlohmann::json(s) : nlohmann::json("not given");
  };
  return {{"name", name},
          {"fp16_tflops", fig(fp16_tflops)},
          {"fp16_tflops_source", src(fp16_tflops, fp16_source)},
          {"hbm_TBps", fig(hbm_TBps)},
          {"hbm_TBps_source", src(hbm_TBps, hbm_source)}};
}

const GpuInfo* find_gpu_preset(const std::string& name) {
  const auto& t = presets();
  for (size_t i = 0; i < t.size(); ++i)
    for (const auto& a : t[i].aliases)
      if (a == name) return &preset_infos()[i];
  return nullptr;
}

std::string gpu_figures_help(const std::string& name) {
  return fmt::format(
      "give its datasheet figures in the cluster instead of the name: \"gpu\": {{\"name\": "
      "\"{}\", \"fp16_tflops\": <dense FP16/BF16 tensor TFLOPS, without sparsity>, \"hbm_TBps\": "
      "<HBM TB/s>, \"source\": \"<datasheet>\"}}, e.g. {{\"name\": \"L40S\", \"fp16_tflops\": "
      "362, \"hbm_TBps\": 0.864, \"source\": \"NVIDIA L40S datasheet\"}}; a measured compute "
      "profile (the experiment's \"compute\": {{\"{}\": {{...}}}}) replaces fp16_tflops, not "
      "hbm_TBps (docs/simulator.md, GPUs)",
      name, name);
}

const GpuInfo& gpu_info(const std::string& name, const std::string& where,
                        const std::string& field) {
  if (const GpuInfo* g = find_gpu_preset(name)) return *g;
  throw InputError(where, field, name,
                   "unknown GPU type" + did_you_mean(name, gpu_names()) +
                       " (presets: " + preset_list() + "); " + gpu_figures_help(name));
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> n;
  for (const auto& p : presets()) n.insert(n.end(), p.aliases.begin(), p.aliases.end());
  return n;
}

std::string canonical_gpu_name(const std::string& name) {
  const GpuInfo* g = find_gpu_preset(name);
  return g ? g->name : name;
}

GpuInfo parse_gpu(const nlohmann::json& ref, const std::string& file, const std::string& field) {
  if (ref.is_string()) {
    const std::string s = ref.get<std::string>();
    if (s.size() > 5 && s.substr(s.size() - 5) == ".json")
      return parse_gpu(load_json_file_named_by(s, file, field), s, "");
    if (const GpuInfo* g = find_gpu_preset(s)) return *g;
    GpuInfo g;  // no figures: the experiment says which it needs (require_gpu_figures)
    g.name = s;
    return g;
  }
  if (!ref.is_object())
    throw InputError(file, field, json_excerpt(ref),
                     "expected a GPU preset name, a JSON path or {\"name\": ..., \"fp16_tflops\": "
                     "..., \"hbm_TBps\": ...}");
  ConfigReader r(ref, file, field);
  const std::string name = r.string("name", "");
  if (name.empty()) r.fail("name", "required: the GPU's name, e.g. \"L40S\"");
  const std::string source = r.string("source", "");
  const GpuInfo* preset = find_gpu_preset(name);
  GpuInfo g = preset ? *preset : GpuInfo{};
  g.name = preset ? preset->name : name;
  const std::string user = "user: " + (source.empty() ? file : source);
  // Petaflops-class GPUs are a few thousand TFLOPS and HBM a few TB/s: the bounds catch a
  // unit slip (GB/s for TB/s), not a future GPU.
  if (r.has("fp16_tflops")) {
    g.fp16_tflops = figure(r, "fp16_tflops", 1e6);
    g.fp16_source = user;
  }
  if (r.has("hbm_TBps")) {
    g.hbm_TBps = figure(r, "hbm_TBps", 1e3);
    g.hbm_source = user;
  }
  r.finish();
  // A preset with a figure replaced is no longer the committed preset.
  if (r.has("fp16_tflops") || r.has("hbm_TBps")) g.unrecorded_preset = false;
  return g;
}

void require_gpu_figures(const GpuInfo& g, bool fp16, const std::string& where,
                         const std::string& field, const std::string& why_fp16) {
  if (!(g.hbm_TBps > 0))
    throw InputError(where, field, g.name,
                     fmt::format("{}: the compression kernels and optimizer steps are timed by "
                                 "its HBM bandwidth, which is not known; {}",
                                 find_gpu_preset(g.name)
                                     ? "GPU without hbm_TBps"
                                     : "unknown GPU type" + did_you_mean(g.name, gpu_names()) +
                                           " (presets: " + preset_list() + ")",
                                 gpu_figures_help(g.name)));
  if (fp16 && !(g.fp16_tflops > 0))
    throw InputError(
        where, field, g.name,
        fmt::format("GPU without fp16_tflops: {}; {}", why_fp16, gpu_figures_help(g.name)));
}

}  // namespace clbo::sim
