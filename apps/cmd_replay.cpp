// `clbo replay`: runs an optimizer on recorded gradients, p ranks as threads over the local
// backend, and records every rank's parameters after every step. It is the bridge to
// outside implementations (DeepSpeed, a NumPy reference): feed both the same gradients and
// compare the trajectories.
//
// Inputs are validated completely (configs, shapes, layout, every gradient value) before
// any optimizer work, and the output is streamed into a temporary that is renamed into
// place only after the last step, so a failed replay leaves no output file.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "clbo/collectives/counting.hpp"
#include "clbo/collectives/local.hpp"
#include "clbo/core/config.hpp"
#include "clbo/core/error.hpp"
#include "clbo/core/layout.hpp"
#include "clbo/core/npy.hpp"
#include "clbo/core/output_file.hpp"
#include "clbo/optim/optimizer.hpp"
#include "clbo/schedule/config.hpp"
#include "clbo/schedule/deepspeed_config.hpp"
#include "clbo/schedule/schedule.hpp"
#include "cli.hpp"
#include "nonfinite_scan.hpp"

namespace clbo::cli {
namespace {

struct ReplayArgs {
  std::string optimizer, params0, grads, layout, out;
};

// Everything a replay needs, validated.
struct ReplayInputs {
  std::unique_ptr<NpyMappedF32> grads;  // [T, p, n], mapped, never copied whole
  std::vector<float> theta0;            // [n]
  ParamLayout layout;
  std::vector<std::unique_ptr<Optimizer>> optimizers;  // one per rank, built up front
  size_t T = 0, n = 0;
  int p = 0;
  bool skip_nonfinite = false;
};

std::string value_text(float v) {
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

ReplayInputs load_inputs(const ReplayArgs& a) {
  // The output first: a replay never fails at its end for a reason known at its start.
  check_output_path(a.out, "--out",
                    {{"--optimizer", a.optimizer},
                     {"--params0", a.params0},
                     {"--grads", a.grads},
                     {"--layout", a.layout}});
  ReplayInputs in;
  // Shapes first: they are cheap and everything else depends on them.
  in.grads = std::make_unique<NpyMappedF32>(a.grads);
  const auto& gshape = in.grads->shape();
  require_npy_rank(gshape, 3, a.grads, "[T, p, n] (steps, ranks, parameters)");
  in.T = static_cast<size_t>(gshape[0]);
  in.n = static_cast<size_t>(gshape[2]);
  if (gshape[1] < 1 || gshape[1] > 4096)
    throw InputError(a.grads, "shape", npy_shape_string(gshape),
                     "the rank count p (second dimension) must be in [1, 4096]");
  if (in.n == 0)
    throw InputError(a.grads, "shape", npy_shape_string(gshape),
                     "the parameter count n (last dimension) must be positive");
  in.p = static_cast<int>(gshape[1]);

  {
    NpyMappedF32 theta(a.params0);
    require_npy_rank(theta.shape(), 1, a.params0, "[n]");
    if (theta.count() != in.n)
      throw InputError(a.params0, "shape", npy_shape_string(theta.shape()),
                       fmt::format("must be ({},) to match the last dimension of {} {}", in.n,
                                   a.grads, npy_shape_string(gshape)));
    const size_t bad = first_nonfinite(theta.data(), in.n);
    if (bad != in.n)
      throw InputError(a.params0, fmt::format("params0[{}]", bad), value_text(theta.data()[bad]),
                       "initial parameters must be finite");
    in.theta0.assign(theta.data(), theta.data() + in.n);
  }

  if (a.layout.empty()) {
    in.layout = ParamLayout::single(in.n);
  } else {
    in.layout = ParamLayout::load(a.layout);
    in.layout.require_total(in.n, a.layout);
  }

  // A block or a whole DeepSpeed config, both in DeepSpeed's syntax (hjson's comments and
  // trailing commas). A whole config goes through the one DeepSpeed reader, which refuses
  // what DeepSpeed refuses and names what replay does not model.
  const nlohmann::json doc = load_json_file(a.optimizer, deepspeed_json_options());
  OptimizerConfig config;
  // {"optimizer": {...}} alone is a block in DeepSpeed's wrapper, not a config to check.
  const bool block_alone = doc.is_object() && doc.size() == 1 && doc.contains("optimizer");
  if (is_whole_deepspeed_config(doc) && !block_alone) {
    const DeepSpeedConfig ds = parse_deepspeed_config(doc, a.optimizer);
    config = ds.optimizer;
    // The batch and the transport do not change a replay's numbers (the gradients are given).
    std::vector<std::string> warnings = ds.warnings;
    for (const std::string& w :
         deepspeed_fields_ignored_by(ds, {"batch", "backend"}, "clbo replay"))
      warnings.push_back(w);
    for (const std::string& w : warnings)
      std::cerr << "clbo: warning: " << a.optimizer << ": " << w << std::endl;
  } else {
    config = block_alone ? parse_optimizer_config(doc["optimizer"], a.optimizer, "optimizer")
                         : parse_optimizer_config(doc, a.optimizer);
  }
  for (int r = 0; r < in.p; ++r)
    in.optimizers.push_back(make_optimizer(config, in.layout, in.p, r));
  // With "nonfinite": "skip" the optimizers agree among ranks to skip bad steps themselves.
  in.skip_nonfinite = in.optimizers[0]->config().common.nonfinite == NonfinitePolicy::kSkip;
  for (const std::string& w :
       phase_warnings(in.optimizers[0]->config(), static_cast<int64_t>(in.T)))
    std::cerr << "clbo: warning: " << w << std::endl;

  // The gradients last: the scan reads the whole file, so do it only for otherwise good input.
  if (!in.skip_nonfinite) {
    const size_t total = in.grads->count();
    const size_t bad = first_nonfinite(in.grads->data(), total);
    if (bad != total) {
      const size_t t = bad / (in.n * in.p), r = bad / in.n % in.p, i = bad % in.n;
      throw InputError(a.grads, fmt::format("grads[{}, {}, {}]", t, r, i),
                       value_text(in.grads->data()[bad]),
                       fmt::format("non-finite gradient at step {} (t index {}), rank {}, "
                                   "element {}; set \"nonfinite\": \"skip\" in the optimizer's "
                                   "params to let it skip such steps",
                                   t + 1, t, r, i));
    }
  }
  return in;
}

int run_replay(const ReplayArgs& a) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  ReplayInputs in = load_inputs(a);
  const size_t T = in.T, n = in.n, p = static_cast<size_t>(in.p);
  progress(fmt::format("replay: {} on {} steps x {} ranks x {} params ({})",
                       in.optimizers[0]->type(), T, p, n,
                       in.skip_nonfinite ? "non-finite steps skipped by the optimizer"
                                         : "gradients checked finite"));

  NpyStreamWriter out(a.out,
                      {static_cast<int64_t>(T), static_cast<int64_t>(p), static_cast<int64_t>(n)});
  std::vector<int64_t> skipped(p, 0);
  std::vector<uint64_t> bytes_sent(p, 0);
  const float* grads = in.grads->data();
  run_local(in.p, [&](Communicator& inner) {
    const size_t r = static_cast<size_t>(inner.rank());
    CountingCommunicator comm(inner);
    Optimizer& opt = *in.optimizers[r];
    std::vector<float> params = in.theta0;
    size_t reported_decile = 0;
    for (size_t t = 0; t < T; ++t) {
      const size_t slab = (t * p + r) * n;  // grads[t, r, :] and out[t, r, :]
      if (!opt.step(comm, params.data(), grads + slab)) ++skipped[r];
      require_finite_params(opt, in.layout, params.data(), inner.rank(),
                            static_cast<int64_t>(t + 1));
      out.write_at(slab, params.data(), n);
      const size_t decile = (t + 1) * 10 / T;
      if (r == 0 && decile > reported_decile) {
        reported_decile = decile;
        progress(fmt::format("replay: step {}/{} ({}%), {:.1f} s", t + 1, T, decile * 10,
                             std::chrono::duration<double>(clock::now() - start).count()));
      }
    }
    bytes_sent[r] = comm.bytes_sent();
  });
  out.commit();
  progress(fmt::format(
      "replay: wrote {} {} in {:.2f} s; rank 0 sent {} bytes; skipped steps "
      "on rank 0: {}",
      a.out,
      npy_shape_string({static_cast<int64_t>(T), static_cast<int64_t>(p), static_cast<int64_t>(n)}),
      std::chrono::duration<double>(clock::now() - start).count(), bytes_sent[0], skipped[0]));
  return 0;
}

constexpr const char* kFormats = R"(Files:
  --optimizer  JSON: a DeepSpeed-style block {"type": "OneBitAdam", "params": {"lr": 1e-3,
               "freeze_step": 10, ...}} or a whole DeepSpeed config (ds_config.json), read
               as DeepSpeed reads it (comments and trailing commas allowed; ZeRO with a
               1-bit optimizer refused; its scheduler and fp16 are warned about, not
               modelled). The learning rate is the constant params.lr. With "nonfinite": "skip" in
               params the optimizer skips steps with NaN/Inf gradients; otherwise any
               non-finite gradient is an error (reported with its step, rank and index).
  --params0    .npy float32 ('<f4', C order), shape (n,): the initial parameters, the same
               on every rank.
  --grads      .npy float32 ('<f4', C order), shape (T, p, n): grads[t, r] is rank r's
               local gradient at step t+1. p, the number of ranks, is read from the shape.
  --layout     JSON {"tensors": [{"name": "w", "size": 6, "shape": [2, 3]}, ...]}: the
               tensors of the flat parameter vector in order; sizes must sum to n. Without
               it the parameters are one tensor of n elements (it matters to LAMB-style
               per-tensor rules).
  --out        .npy float32, shape (T, p, n): out[t, r] is rank r's parameters after step
               t+1 (a skipped step repeats the previous parameters). Written atomically:
               on any error no file is left behind.
.npy files of format 1.0, 2.0 and 3.0 are read; bytes beyond the payload are an error.)";

Registrar reg(
    "replay", "Replay recorded gradients through an optimizer on p local ranks", [](CLI::App& sub) {
      auto a = std::make_shared<ReplayArgs>();
      sub.add_option("--optimizer", a->optimizer, "optimizer config (JSON)")->required();
      sub.add_option("--params0", a->params0, "initial parameters, float32 (n,)")->required();
      sub.add_option("--grads", a->grads, "gradients, float32 (T, p, n)")->required();
      sub.add_option("--layout", a->layout,
                     "tensor layout (JSON); default: one tensor of n elements");
      sub.add_option("-o,--out", a->out, "output parameters, float32 (T, p, n)")->required();
      sub.footer(kFormats);
      return [a] { return run_replay(*a); };
    });

}  // namespace
}  // namespace clbo::cli
