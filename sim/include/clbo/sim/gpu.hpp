// GPU types: the two datasheet figures the simulator uses, and where each came from.
//
// A cluster's "gpu" is a preset name ("H100-SXM", "B200", "MI300X", ...), a JSON file, or an
// object with the figures themselves:
//   "gpu": {"name": "L40S", "fp16_tflops": 362, "hbm_TBps": 0.864, "source": "..."}
// An object naming a preset takes the preset's figures for the fields it leaves out. Dense
// FP16/BF16 tensor TFLOPS scale a reference GPU's compute (Workload::compute_for) or turn
// FLOPs per sample into time; HBM bandwidth times the compression kernels, DeepSpeed's
// dataflow and scaled optimizer steps (docs/simulator.md, "GPUs").
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clbo::sim {

struct GpuInfo {
  std::string name;
  double fp16_tflops = 0;  // dense FP16/BF16 tensor-core peak; 0: not given
  double hbm_TBps = 0;     // HBM bandwidth; 0: not given
  // Where each figure came from: "preset <name>: <datasheet>" or "user: <source>".
  std::string fp16_source, hbm_source;
  // Results of experiments whose GPUs all have this set keep the form they were committed
  // in, without an inputs.gpus block (tests/reproduce regenerates them byte for byte).
  bool unrecorded_preset = false;

  nlohmann::json to_json() const;  // figures with their sources
};

// The preset called `name` (or an alias such as "H100"), or nullptr.
const GpuInfo* find_gpu_preset(const std::string& name);
// The preset; an unknown name throws InputError(where, field, name) that suggests the
// nearest preset and says how to give the figures instead.
const GpuInfo& gpu_info(const std::string& name, const std::string& where,
                        const std::string& field);
// Preset names and aliases.
std::vector<std::string> gpu_names();
// The canonical name of a preset or alias; any other name is its own.
std::string canonical_gpu_name(const std::string& name);

// A cluster's "gpu" field: a preset name, a path ending in .json, or an object (see above).
// Any other name is kept without figures: what a GPU needs depends on the experiment.
GpuInfo parse_gpu(const nlohmann::json& ref, const std::string& file, const std::string& field);

// Every simulated GPU needs hbm_TBps; fp16_tflops only where its compute is scaled or comes
// from FLOPs (`fp16`, and `why_fp16` says which). Throws InputError(where, field, name) with
// the nearest preset and how to give the figures.
void require_gpu_figures(const GpuInfo& g, bool fp16, const std::string& where,
                         const std::string& field, const std::string& why_fp16 = "");

// How to state a GPU's figures, for error messages.
std::string gpu_figures_help(const std::string& name);

}  // namespace clbo::sim
