// The JSON document reader and every config reader on top of it: optimizer blocks, tensor
// layouts, `clbo train` experiments and (when built) the simulator's experiments, clusters and
// workloads. Any InputError is the expected rejection; anything else (a crash, a sanitizer
// report, another exception type, a hang) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "clbo/core/error.hpp"
#include "clbo/core/json_reader.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/schedule/schedule.hpp"
#ifdef CLBO_FUZZ_TRAIN
#include "clbo/train/trainer.hpp"
#endif
#ifdef CLBO_FUZZ_SIM
#include "clbo/sim/cluster.hpp"
#include "clbo/sim/experiment.hpp"
#include "clbo/sim/workload.hpp"
#endif

namespace {

template <class F>
void expect_input_error_only(F&& f) {
  try {
    f();
  } catch (const clbo::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json doc;
  try {
    doc = clbo::parse_json(text, "fuzz.json");
  } catch (const clbo::InputError&) {
    return 0;
  }
  (void)clbo::json_excerpt(doc);
  (void)doc.dump();  // every accepted document must be writable back (valid UTF-8, bounded depth)
  expect_input_error_only([&] {
    const clbo::OptimizerConfig c = clbo::parse_optimizer_config(doc, "fuzz.json");
    (void)clbo::to_json(c);
    (void)clbo::phase_warnings(c, 1000);
  });
  expect_input_error_only([&] { (void)clbo::ParamLayout::from_json(doc, "fuzz.json"); });
#ifdef CLBO_FUZZ_TRAIN
  expect_input_error_only([&] { (void)clbo::train::parse_experiment(doc, "fuzz.json"); });
#endif
#ifdef CLBO_FUZZ_SIM
  expect_input_error_only([&] { (void)clbo::sim::validate_experiment(doc, "fuzz.json"); });
  expect_input_error_only([&] { (void)clbo::sim::parse_cluster(doc, "fuzz.json", ""); });
  expect_input_error_only([&] { (void)clbo::sim::parse_workload(doc, "fuzz.json", ""); });
#endif
  return 0;
}
