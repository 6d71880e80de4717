// The measurements `clbo calibrate` fits to (calibration.hpp): read, validated and
// expanded (an nccl-tests file or a `clbo bench collectives` file gives one allreduce per
// row), each with the setting that identifies it, so two values of one setting are caught.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/core/schedule.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/sim/workload.hpp"

namespace clbo::sim {

struct Measurement {
  enum class Kind { kStep, kAllreduce };
  Kind kind = Kind::kAllreduce;
  std::string field;    // where it was given, e.g. "measurements[3]" or "measurements[3] row 7"
  std::string label;    // the setting, for residual tables
  std::string setting;  // identifies the setting: equal settings must agree
  int p = 1;
  std::string quantity;  // "step_ms", "samples_per_s" or "time_ms"
  double measured = 0;   // in the quantity's unit
  // kStep
  std::shared_ptr<const Workload> workload;
  OptimizerConfig optimizer;
  int64_t micro_batch = 1, grad_acc = 1;
  // kAllreduce
  CommCall call;
  nlohmann::json as_given;  // recorded in the fitted preset
};

// Reads input["measurements"]; `file` locates it in errors and anchors relative paths.
std::vector<Measurement> parse_measurements(const nlohmann::json& input, const std::string& file);

// The simulated value of `m` in its quantity's unit, from a step or program time.
double measured_quantity_from_seconds(const Measurement& m, double seconds);

}  // namespace clbo::sim
