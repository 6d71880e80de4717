// `clbo demo`: a small end-to-end run of all six optimizers on one synthetic problem, over
// the real local collectives, counting every byte each rank sends. It stands in for the
// paper-scale experiments until the simulator exists, and it is a quick smoke test of the
// whole stack: real gradients (demo_problem.hpp), real optimizers, real communication.
//
// Output: a table on stdout and a JSON result (config, environment, numbers tagged
// "measured"). With the same arguments the JSON is byte-identical between runs except the
// "timing" object, whose keys all end in _s.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/collectives/counting.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/output_file.hpp"
#include "clbo/core/results.hpp"
#include "clbo/optim/optimizer.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "cli.hpp"
#include "cli_integer.hpp"
#include "demo_problem.hpp"

namespace clbo::cli {
namespace {

using nlohmann::json;

struct DemoArgs {
  int ranks = 4;
  int64_t steps = 60;
  size_t n = 65536;
  size_t batch = 16;
  std::string out = "results/demo.json";
  uint64_t seed = 0;
};

constexpr double kLabelNoise = 0.1;  // σ of the regression targets

struct RunResult {
  json config;  // the canonical block, every default filled in
  std::string type, baseline;
  double initial_loss = 0, final_loss = 0, wall_s = 0;
  std::vector<uint64_t> bytes_per_rank;
  std::map<std::string, uint64_t> phase_bytes;  // per phase, the largest over ranks
  std::map<std::string, int64_t> phase_steps;
};

json measured(const json& value) {
  return {{"value", value}, {"provenance", "measured"}};
}

// Configs chosen so every optimizer passes through all its phases within the run:
// compression starts a quarter of the way in, 0/1 Adam reaches its local steps, and SLAMB
// syncs its parameters several times.
std::vector<json> demo_blocks(const DemoArgs& a) {
  const int64_t freeze = std::max<int64_t>(1, a.steps / 4);
  // β2 = 0.99 rather than 0.999: the 1-bit optimizers freeze v without bias correction, and
  // after a warmup of a few dozen steps v would still be far below its scale at 0.999.
  const json betas = {0.9, 0.99};
  const double adam_lr = 1e-2, lamb_lr = 5e-2;
  return {
      {{"type", "Adam"}, {"params", {{"lr", adam_lr}, {"betas", betas}}}},
      {{"type", "Lamb"}, {"params", {{"lr", lamb_lr}, {"betas", betas}}}},
      {{"type", "OneBitAdam"},
       {"params", {{"lr", adam_lr}, {"betas", betas}, {"freeze_step", freeze}}}},
      {{"type", "OneBitLamb"},
       {"params", {{"lr", lamb_lr}, {"betas", betas}, {"freeze_step", freeze}}}},
      {{"type", "ZeroOneAdam"},
       {"params",
        {{"lr", adam_lr},
         {"betas", betas},
         {"var_freeze_step", freeze},
         {"var_update_scaler", 4},
         {"local_step_scaler", std::max<int64_t>(1, a.steps / 8)},
         {"local_step_clipper", 4}}}},
      {{"type", "Slamb"},
       {"params",
        {{"lr", lamb_lr},
         {"betas", betas},
         {"compress_ratio", 0.1},
         {"local_steps", std::max<int64_t>(2, a.steps / 6)}}}},
  };
}

RunResult run_one(const json& block, const demo::RegressionProblem& problem, const DemoArgs& a) {
  RunResult res;
  const OptimizerConfig parsed = parse_optimizer_config(block, "<demo>");
  res.config = to_json(parsed);
  res.type = parsed.type_name();
  const auto twin = uncompressed_twin(parsed);
  res.baseline = twin ? twin->type_name() : "";
  const std::vector<float> theta0 = problem.initial_params();
  res.initial_loss = problem.loss(theta0.data());
  const size_t p = static_cast<size_t>(a.ranks);
  res.bytes_per_rank.assign(p, 0);
  std::vector<std::map<std::string, uint64_t>> phase_bytes(p);
  std::vector<std::map<std::string, int64_t>> phase_steps(p);
  std::vector<float> final_params;

  const auto start = std::chrono::steady_clock::now();
  run_local(a.ranks, [&](Communicator& inner) {
    const size_t r = static_cast<size_t>(inner.rank());
    CountingCommunicator comm(inner);
    auto opt = make_optimizer(parsed, problem.layout(), a.ranks, inner.rank());
    std::vector<float> params = theta0, grad(problem.n());
    for (int64_t t = 1; t <= a.steps; ++t) {
      const std::string phase = to_string(opt->comm_schedule(opt->steps_taken() + 1).phase);
      const uint64_t before = comm.bytes_sent();
      problem.gradient(params.data(), t, inner.rank(), grad.data());
      if (!opt->step(comm, params.data(), grad.data()))
        throw Error(fmt::format("demo: {} skipped step {} on rank {}", res.type, t, r));
      phase_bytes[r][phase] += comm.bytes_sent() - before;
      ++phase_steps[r][phase];
    }
    res.bytes_per_rank[r] = comm.bytes_sent();
    if (r == 0) final_params = std::move(params);
  });
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  res.final_loss = problem.loss(final_params.data());
  res.phase_steps = phase_steps[0];  // the schedule is the same on every rank
  for (const auto& per_rank : phase_bytes)
    for (const auto& [phase, bytes] : per_rank)
      res.phase_bytes[phase] = std::max(res.phase_bytes[phase], bytes);
  return res;
}

uint64_t total_bytes(const RunResult& r) {
  uint64_t s = 0;
  for (auto b : r.bytes_per_rank) s += b;
  return s;
}

std::string human_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

void print_table(const std::vector<RunResult>& runs,
                 const std::map<std::string, const RunResult*>& by_type, const DemoArgs& a,
                 size_t n) {
  fmt::print(
      "clbo demo: {} ranks, {} steps, n = {} parameters, seed {} (bytes: largest per "
      "rank, over the whole run)\n\n",
      a.ranks, a.steps, n, a.seed);
  fmt::print("{:<12} {:>11} {:>11} {:>9} {:>11} {:>12}  {:>7}  {}\n", "optimizer", "loss0",
             "loss_final", "ratio", "bytes/rank", "vs baseline", "wall_s", "bytes/rank by phase");
  for (const auto& r : runs) {
    std::string vs = "-";
    if (!r.baseline.empty()) {
      const double ratio = static_cast<double>(total_bytes(r)) /
                           static_cast<double>(total_bytes(*by_type.at(r.baseline)));
      vs = fmt::format("{:.3f}x {}", ratio, r.baseline);
    }
    std::string phases;
    for (const auto& [phase, bytes] : r.phase_bytes)
      phases += fmt::format("{}{} {} ({} step{})", phases.empty() ? "" : ", ", phase,
                            human_bytes(static_cast<double>(bytes)), r.phase_steps.at(phase),
                            r.phase_steps.at(phase) == 1 ? "" : "s");
    const uint64_t max_rank = *std::max_element(r.bytes_per_rank.begin(), r.bytes_per_rank.end());
    fmt::print("{:<12} {:>11.4g} {:>11.4g} {:>9.4f} {:>11} {:>12}  {:>7.2f}  {}\n", r.type,
               r.initial_loss, r.final_loss, r.final_loss / r.initial_loss,
               human_bytes(static_cast<double>(max_rank)), vs, r.wall_s, phases);
  }
  fmt::print(
      "\nloss: the population loss ½‖θ − θ*‖² (noise floor excluded); ratio = final / "
      "initial. vs baseline: total bytes relative to Adam (1-bit Adam, 0/1 Adam) or "
      "LAMB (1-bit LAMB, SLAMB).\n");
}

json result_json(const std::vector<RunResult>& runs,
                 const std::map<std::string, const RunResult*>& by_type, const DemoArgs& a,
                 const demo::RegressionProblem& problem, double total_s) {
  json cfg = {{"ranks", a.ranks},
              {"steps", a.steps},
              {"n_requested", a.n},
              {"n", problem.n()},
              {"batch_per_rank", a.batch},
              {"label_noise", kLabelNoise},
              {"seed", a.seed},
              {"problem", "multi-head linear regression, population loss ½‖θ − θ*‖²"},
              {"backend", "local"},
              {"layout", problem.layout().to_json()},
              {"optimizers", json::array()}};
  json results = json::array(), timing = {{"total_wall_s", total_s}};
  for (const auto& r : runs) {
    cfg["optimizers"].push_back(r.config);
    json phases = json::object(), steps = json::object();
    for (const auto& [phase, bytes] : r.phase_bytes) phases[phase] = measured(bytes);
    for (const auto& [phase, count] : r.phase_steps) steps[phase] = count;
    json entry = {
        {"optimizer", r.type},
        {"initial_loss", measured(r.initial_loss)},
        {"final_loss", measured(r.final_loss)},
        {"loss_ratio", measured(r.final_loss / r.initial_loss)},
        {"bytes_sent_per_rank", measured(r.bytes_per_rank)},
        {"bytes_sent_max_rank_by_phase", phases},
        {"steps_by_phase", steps},
        {"baseline", r.baseline.empty() ? json(nullptr) : json(r.baseline)},
        {"volume_vs_baseline", nullptr},
    };
    if (!r.baseline.empty())
      entry["volume_vs_baseline"] =
          measured(static_cast<double>(total_bytes(r)) /
                   static_cast<double>(total_bytes(*by_type.at(r.baseline))));
    results.push_back(entry);
    timing[r.type + "_wall_s"] = r.wall_s;
  }
  return {{"schema", "clbo.demo/1"},
          {"config", cfg},
          {"environment", environment_json()},
          {"results", results},
          {"timing", timing}};
}

int run_demo(const DemoArgs& a) {
  if (a.ranks < 1 || a.ranks > 64)
    throw InputError("<command line>", "--ranks", std::to_string(a.ranks), "must be in [1, 64]");
  if (a.steps < 1 || a.steps > 1'000'000)
    throw InputError("<command line>", "--steps", std::to_string(a.steps),
                     "must be in [1, 1000000]");
  if (a.n > (size_t{1} << 26))
    throw InputError("<command line>", "--n", std::to_string(a.n), "must be <= 2^26");
  check_output_path(a.out, "--out");
  const auto start = std::chrono::steady_clock::now();
  const demo::RegressionProblem problem(a.n, a.seed, a.batch, static_cast<float>(kLabelNoise));
  std::vector<RunResult> runs;
  for (const json& block : demo_blocks(a)) {
    runs.push_back(run_one(block, problem, a));
    progress(fmt::format("demo: {} done in {:.2f} s", runs.back().type, runs.back().wall_s));
  }
  std::map<std::string, const RunResult*> by_type;
  for (const auto& r : runs) by_type[r.type] = &r;
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_table(runs, by_type, a, problem.n());
  write_json_atomic(a.out, result_json(runs, by_type, a, problem, total_s));
  fmt::print("wrote {}\n", a.out);
  return 0;
}

Registrar reg("demo",
              "Run all six optimizers on a synthetic regression over local ranks and compare "
              "loss and bytes sent",
              [](CLI::App& sub) {
                auto a = std::make_shared<DemoArgs>();
                sub.add_option("--ranks", a->ranks, "data-parallel ranks (threads)")
                    ->transform(decimal_integer<int>())
                    ->capture_default_str();
                sub.add_option("--steps", a->steps, "optimizer steps per run")
                    ->transform(decimal_integer<int64_t>())
                    ->capture_default_str();
                sub.add_option("--n", a->n,
                               "approximate parameter count (rounded to whole matrix rows)")
                    ->transform(decimal_integer<size_t>())
                    ->capture_default_str();
                sub.add_option("--batch", a->batch, "samples per rank per step")
                    ->transform(decimal_integer<size_t>())
                    ->capture_default_str();
                sub.add_option("-o,--out", a->out, "JSON result path")->capture_default_str();
                sub.add_option("--seed", a->seed, "seed of the problem and its samples")
                    ->transform(decimal_integer<uint64_t>())
                    ->capture_default_str();
                sub.footer(
                    "The JSON result holds the config (with every optimizer's full canonical "
                    "block), the environment, and per optimizer: initial and final loss, bytes "
                    "sent per rank in total and per phase, and the volume relative to the "
                    "baseline (Adam for 1-bit Adam and 0/1 Adam, LAMB for 1-bit LAMB and "
                    "SLAMB). Wall times live in the \"timing\" object (keys ending in _s), the "
                    "only part that differs between runs with the same arguments.");
                return [a] { return run_demo(*a); };
              });

}  // namespace
}  // namespace clbo::cli
